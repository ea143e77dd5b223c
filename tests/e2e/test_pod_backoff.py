"""Pods that keep finishing at one index are replaced ever more slowly, on the real control
plane: the first Failed pod is replaced at once, a Failed replacement waits out its back-off
(holding its index, the Clique's PodBackOff condition naming it), then is replaced with a
Warning Event BackOff. A template that makes pods finish at once therefore cannot make the
operator create pods in a hot loop.

KWOK keeps a pod's phase as patched through pods/status, so the test makes pods Failed.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec

from cliques.api import labels
from cliques.api.meta import find_condition
from cliques.controllers.clique import status as clique_status
from cliques.controllers.features import pod_backoff
from cliques.kube.resources import CLIQUES, EVENTS, PODS
from tests.support.harness import Cluster, cliqueset, running_operator, wait_for

POD = "llama-0-worker-0"
CLIQUE = "llama-0-worker"


async def _fail(cluster: Cluster) -> str:
    """Make the pod at POD Failed; its uid."""
    pod = await cluster.client.get(PODS, cluster.namespace, POD, dict)
    patch = {"status": {"phase": "Failed"}}
    await cluster.client.patch(PODS, cluster.namespace, POD, patch, dict, sub="status")
    return str(pod["metadata"]["uid"])


async def _replaced(cluster: Cluster, old: str, timeout: float) -> str:
    async def check() -> str | None:
        pods = await cluster.list(PODS, dict, f"{labels.LABEL_GANG_INDEX}=0")
        for pod in pods:
            meta = pod["metadata"]
            if meta["name"] == POD and meta["uid"] != old and not meta.get("deletionTimestamp"):
                return str(meta["uid"])
        return None

    return await wait_for(check, timeout=timeout, what=f"{POD} replaced")


async def test_a_pod_that_keeps_finishing_is_replaced_after_a_back_off(
    cluster: Cluster, crds: str
) -> None:
    async with running_operator(crds, cluster.namespace, status_hold=0.0):
        await cluster.apply(cliqueset(replicas=1, workers=1))
        await cluster.wait_available("llama")

        first = await _fail(cluster)
        second = await _replaced(cluster, first, timeout=30)  # the first finish: at once

        async def counted() -> bool:
            c = await cluster.client.get(CLIQUES, cluster.namespace, CLIQUE, dict)
            return c["metadata"].get("annotations", {}).get(labels.ANNOTATION_FINISHED_PODS) == (
                "0:1"
            )

        await wait_for(counted, timeout=30, what="the finish counted on the Clique")

        failed_at = time.monotonic()
        await _fail(cluster)

        async def backing_off() -> Any:
            cq = await cluster.cliques()
            for c in cq:
                if c.metadata.name == CLIQUE and c.status is not None:
                    cond = find_condition(c.status.conditions, clique_status.CONDITION_POD_BACKOFF)
                    if cond is not None and cond.status == "True":
                        return cond
            return None

        cond = await wait_for(backing_off, timeout=30, what="PodBackOff on the Clique")
        assert "index(es) 0" in cond.message
        # Held: still the Failed pod, not replaced before its back-off.
        pod = await cluster.client.get(PODS, cluster.namespace, POD, dict)
        assert pod["metadata"]["uid"] == second and pod["status"]["phase"] == "Failed"

        third = await _replaced(cluster, second, timeout=pod_backoff.BASE_SECONDS + 30)
        assert third != first
        # The replacement came no sooner than the back-off after the pod was created.
        assert time.monotonic() - failed_at >= pod_backoff.BASE_SECONDS - 3

        raw = await cluster.client.list_page(EVENTS, cluster.namespace, limit=500)
        items = msgspec.json.decode(raw, type=dict[str, Any])["items"]
        assert any(e.get("reason") == "BackOff" and POD in e.get("message", "") for e in items), [
            e.get("reason") for e in items
        ]
        await cluster.wait_available("llama", timeout=60)

        async def cleared() -> bool:
            return await backing_off() is None

        await wait_for(cleared, timeout=30, what="PodBackOff gone once the pod is replaced")
