"""`kubectl delete --cascade=orphan` of a CliqueSet or a Clique while the garbage collector
lags, against the real control plane: the operator lets go of the owner's objects itself
(`orphaning`).

The garbage collector orphans only the dependents its graph knows; one it has not observed
yet keeps its owner reference and is collected, pods and all, once the set is gone. Here the
controller-manager is held still (SIGSTOP) for the delete, the extreme of a lagging graph:
the operator alone must have removed the set from every Clique, Service, budget and revision
while the set still waits on its `orphan` finalizer; once the controller-manager goes on, the
set goes and every Clique and pod is still the same object. A Clique deleted so lets go of
its pods the same way, and the set's new Clique adopts them: no pod is made again."""

from __future__ import annotations

import pytest

from cliques.kube.resources import CLIQUES, CLIQUESETS, CONTROLLER_REVISIONS, PDBS, SERVICES
from cliques_lab.devcluster import cluster as devcluster
from tests.support.cluster_fixtures import KubeCluster
from tests.support.harness import Cluster, cliqueset, running_operator, wait_for

pytestmark = pytest.mark.cluster

#: How long the controller-manager is held still at most: below its leader-election renew
#: deadline (10 s), so that it goes on instead of exiting.
PAUSE = 7.0


@pytest.fixture
def dev_cluster(kube_cluster: KubeCluster) -> str:
    """The dev cluster's name: these tests hold its controller-manager still."""
    if kube_cluster.name is None:
        pytest.skip("needs a dev cluster, whose controller-manager the test holds still")
    return kube_cluster.name


async def _uids(cluster: Cluster) -> tuple[dict[str, str], dict[str, str]]:
    cliques = {c.metadata.name: c.metadata.uid for c in await cluster.cliques()}
    pods = {p.metadata.name: p.metadata.uid for p in await cluster.pods()}
    return cliques, pods


async def test_an_orphaning_delete_keeps_every_object_though_the_collector_lags(
    cluster: Cluster, crds: str, dev_cluster: str
) -> None:
    async with running_operator(crds, cluster.namespace, status_hold=0.0):
        await cluster.apply(cliqueset(replicas=2, workers=1))
        old = await cluster.wait_available("llama")
        uid = old.metadata.uid
        cliques, pods = await _uids(cluster)
        assert len(cliques) == 4 and len(pods) == 4

        async def owned_by_the_set() -> list[str]:
            names = [
                f"Clique {c.metadata.name}"
                for c in await cluster.cliques()
                if any(r.uid == uid for r in c.metadata.owner_references)
            ]
            for resource in (SERVICES, PDBS, CONTROLLER_REVISIONS):
                listed = await cluster.list(resource, dict)
                names += [
                    f"{resource.kind} {o['metadata']['name']}"
                    for o in listed
                    if any(r.get("uid") == uid for r in o["metadata"].get("ownerReferences", []))
                ]
            return names

        before = await owned_by_the_set()
        assert any(n.startswith("Service") for n in before), before
        assert any(n.startswith("PodDisruptionBudget") for n in before), before
        assert any(n.startswith("ControllerRevision") for n in before), before

        with devcluster.paused(dev_cluster, "kube-controller-manager"):
            # kubectl delete cqs llama --cascade=orphan
            await cluster.client.delete(
                CLIQUESETS, cluster.namespace, "llama", propagation="Orphan", uid=uid
            )

            async def released() -> bool:
                return not await owned_by_the_set()

            await wait_for(released, timeout=PAUSE, what="the operator orphaning the set's objects")
            dying = await cluster.cliqueset("llama")
            # Not the collector's doing: it has not yet removed the finalizer it works under.
            assert "orphan" in dying.metadata.finalizers, dying.metadata
            assert dying.metadata.uid == uid

        await cluster.wait_set_gone("llama", timeout=90)
        assert await _uids(cluster) == (cliques, pods), "a Clique or pod was collected"


async def test_a_clique_deleted_with_orphan_keeps_its_pods_for_the_next_one(
    cluster: Cluster, crds: str, dev_cluster: str
) -> None:
    async with running_operator(crds, cluster.namespace, status_hold=0.0):
        await cluster.apply(cliqueset(replicas=1, workers=2))
        await cluster.wait_available("llama")
        cliques, pods = await _uids(cluster)
        name = "llama-0-worker"
        old = cliques[name]

        async def owned_pods() -> list[str]:
            return [
                p.metadata.name
                for p in await cluster.pods()
                if any(r.uid == old for r in p.metadata.owner_references)
            ]

        assert len(await owned_pods()) == 2
        with devcluster.paused(dev_cluster, "kube-controller-manager"):
            await cluster.client.delete(
                CLIQUES, cluster.namespace, name, propagation="Orphan", uid=old
            )

            async def released() -> bool:
                return not await owned_pods()

            await wait_for(released, timeout=PAUSE, what="the operator orphaning the pods")

        async def adopted() -> bool:
            now, _ = await _uids(cluster)
            if now.get(name, old) == old:
                return False
            return all(
                (ref := p.metadata.controller_ref()) is not None and ref.uid == now[name]
                for p in await cluster.pods()
                if p.metadata.name.startswith(f"{name}-")
            )

        await wait_for(adopted, timeout=90, what="the new Clique adopting the pods")
        _, pods_now = await _uids(cluster)
        assert pods_now == pods, "a pod was made again"


async def test_a_pod_the_collector_has_not_collected_is_deleted_for_the_next_clique(
    cluster: Cluster, crds: str, dev_cluster: str
) -> None:
    """A Clique deleted (background) while the collector is held still: its pod keeps the
    name, naming an owner that is gone for good. The set makes the Clique again, and the
    operator deletes the old pod itself (UID precondition) rather than wait for a
    collector that may have missed it, then makes the pod anew."""
    async with running_operator(crds, cluster.namespace, status_hold=0.0):
        await cluster.apply(cliqueset(replicas=1, workers=1))
        await cluster.wait_available("llama")
        cliques, pods = await _uids(cluster)
        name = "llama-0-worker"
        with devcluster.paused(dev_cluster, "kube-controller-manager"):
            await cluster.client.delete(CLIQUES, cluster.namespace, name, uid=cliques[name])

            async def replaced() -> bool:
                now_cliques, _ = await _uids(cluster)
                new = now_cliques.get(name)
                if new in (None, cliques[name]):
                    return False
                return any(
                    p.metadata.name == f"{name}-0"
                    and p.metadata.uid != pods[f"{name}-0"]
                    and (ref := p.metadata.controller_ref()) is not None
                    and ref.uid == new
                    for p in await cluster.pods()
                )

            await wait_for(replaced, timeout=PAUSE, what="the old pod deleted, a new one made")
