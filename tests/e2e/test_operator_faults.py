"""Faults on the real local control plane: a stale cache, a conflict storm, a 410 Gone."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from prometheus_client import REGISTRY

from cliques.kube.informer import WatchFaults
from cliques.kube.resources import CLIQUES, CLIQUESETS
from tests.support.harness import (
    Cluster,
    PodTracker,
    cliqueset,
    running_operator,
    wait_for,
)

pytestmark = pytest.mark.cluster


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_stale_cache_never_double_creates_or_wrongly_deletes(
    cluster: Cluster, crds: str
) -> None:
    ns = cluster.namespace
    conflicts_before = metric(
        "cliques_api_requests_total", verb="create", resource="pods", code="409"
    )
    # Every pod and Clique watch event reaches the operator 1.5 s late.
    async with (
        PodTracker(cluster.client, ns, pods_per_gang=21) as tracker,
        running_operator(crds, ns, faults=WatchFaults(delay=1.5)),
    ):
        await cluster.apply(cliqueset(replicas=2, workers=20))
        await cluster.wait_available("llama", timeout=120)
        await cluster.apply(cliqueset(replicas=3, workers=20))
        await cluster.wait_available("llama", timeout=120)
    assert len(tracker.added) == 63 and len(set(tracker.added)) == 63
    assert tracker.deleted == [], f"wrong deletes: {tracker.deleted}"
    double = (
        metric("cliques_api_requests_total", verb="create", resource="pods", code="409")
        - conflicts_before
    )
    assert double == 0, f"{double} creates of pods that already existed"


async def test_conflict_storm_converges(cluster: Cluster, crds: str) -> None:
    ns = cluster.namespace
    stop = asyncio.Event()

    async def bump() -> None:
        """Another writer touching the same objects as fast as it can."""
        i = 0
        while not stop.is_set():
            i += 1
            for c in await cluster.cliques():
                with contextlib.suppress(Exception):
                    await cluster.client.patch(
                        CLIQUES,
                        ns,
                        c.metadata.name,
                        {"metadata": {"annotations": {"storm": str(i)}}},
                        dict,
                    )
            with contextlib.suppress(Exception):
                await cluster.client.patch(
                    CLIQUESETS, ns, "llama", {"metadata": {"annotations": {"storm": str(i)}}}, dict
                )
            await asyncio.sleep(0)

    async with running_operator(crds, ns):
        await cluster.apply(cliqueset(replicas=2, workers=2))
        storm = asyncio.create_task(bump())
        try:
            await cluster.apply(cliqueset(replicas=3, workers=3, image="busybox:1.37"))
            await cluster.wait_available("llama", timeout=180)
        finally:
            stop.set()
            await storm
    pods = [p for p in await cluster.pods() if p.metadata.deletion_timestamp is None]
    assert len(pods) == 12


async def test_410_gone_relists_without_duplicate_actions(cluster: Cluster, crds: str) -> None:
    ns = cluster.namespace
    async with running_operator(crds, ns) as manager:
        await cluster.apply(cliqueset(replicas=2))
        await cluster.wait_available("llama")
        creates = metric("cliques_objects_written_total", kind="Pod", verb="create")
        gone_before = metric("cliques_informer_relists_total", resource="pods", reason="gone")
        pods_inf = next(i for i in manager.informers if i.resource.plural == "pods")
        # Resume from an ancient resourceVersion, as after a long disconnect: 410 Gone.
        pods_inf.interrupt_watch(resume_from="1")
        await cluster.apply(cliqueset(replicas=2, workers=3))

        async def relisted() -> bool:
            return (
                metric("cliques_informer_relists_total", resource="pods", reason="gone")
                > gone_before
            )

        await wait_for(relisted, timeout=60, what="a 410 relist of the pod informer")
        await cluster.wait_available("llama")
        made = metric("cliques_objects_written_total", kind="Pod", verb="create") - creates
    assert made == 2, f"{made} pod creates for 2 new pods"
