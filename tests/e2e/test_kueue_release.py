"""The release of a pod from Kueue's finalizer, against the real API server (no Kueue
needed: the finalizer is only a name to it): the Clique controller releases the pod it saw
going with its Clique, by both UIDs, and never another pod made since under that name, by
anyone."""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.pod import Pod
from cliques.controllers.base.executor import Executor
from cliques.controllers.base.revision import Hasher
from cliques.controllers.clique.controller import CliqueController, release_key
from cliques.controllers.features import kueue
from cliques.kube import errors, store
from cliques.kube.expectations import Expectations
from cliques.kube.informer import Informer
from cliques.kube.resources import CLIQUES, PODS
from tests.support.harness import Cluster, wait_for

NAME = "rel-0-worker-0"


def _pod(namespace: str, owner_uid: str) -> dict[str, Any]:
    """A pod of a Clique `rel-0-worker` with UID `owner_uid`, held by Kueue's finalizer."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": NAME,
            "namespace": namespace,
            "labels": {labels.LABEL_CLIQUESET: "rel"},
            "finalizers": [kueue.FINALIZER],
            "ownerReferences": [
                {
                    "apiVersion": labels.API_VERSION,
                    "kind": labels.KIND_CLIQUE,
                    "name": "rel-0-worker",
                    "uid": owner_uid,
                    "controller": True,
                }
            ],
        },
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]},
    }


async def _going(cluster: Cluster, owner_uid: str) -> Pod:
    """The pod made for `owner_uid` and deleted: held by the finalizer, as the cache sees it."""
    await cluster.client.create(PODS, cluster.namespace, _pod(cluster.namespace, owner_uid), dict)
    await cluster.client.delete(PODS, cluster.namespace, NAME)
    return await cluster.client.get(PODS, cluster.namespace, NAME, Pod)


async def _unblock(cluster: Cluster) -> None:
    with contextlib.suppress(errors.NotFound):
        await cluster.client.patch(
            PODS, cluster.namespace, NAME, {"metadata": {"finalizers": None}}, dict
        )
    await wait_for(lambda: _absent(cluster), timeout=30, what=f"{NAME} gone")


async def test_a_release_takes_the_finalizer_off_only_the_pod_seen(cluster: Cluster) -> None:
    client = cluster.client
    cliques: Informer[Clique] = Informer(client, CLIQUES, Clique)
    pods: Informer[Pod] = Informer(client, PODS, Pod, indexers={"controller": store.by_controller})
    exp = Expectations("clique")
    ctl = CliqueController(cliques, pods, Executor(client, exp, None), exp, Hasher())
    ours, theirs = str(uuid.uuid4()), str(uuid.uuid4())
    try:
        seen = await _going(cluster, ours)
        key = release_key(seen, ours)
        # before the release runs, the pod goes and another of its name is made by someone
        # else (a controller of its own, with a Clique-kind owner of the same name)
        await _unblock(cluster)
        other = await _going(cluster, theirs)
        pods.store.upsert(other)
        await ctl.reconcile(key)
        held = await client.get(PODS, cluster.namespace, NAME, Pod)
        assert held.metadata.uid == other.metadata.uid
        assert held.metadata.finalizers == [kueue.FINALIZER], "another's pod was released"
        # the pod the key was made for is released
        await ctl.reconcile(release_key(other, theirs))
        await wait_for(lambda: _absent(cluster), timeout=30, what="the released pod gone")
    finally:
        await _unblock(cluster)


async def _absent(cluster: Cluster) -> bool:
    try:
        await cluster.client.get(PODS, cluster.namespace, NAME, Pod)
    except errors.NotFound:
        return True
    return False
