"""`updateStrategy.maxSurge` on the real local control plane: 4 gangs of leader 1 +
worker 1, maxUnavailable 0, maxSurge 1, an image change: never fewer than 4 whole gangs
(surge gang 4 counted), and at the end exactly gangs 0-3 on the new image, no surge gang
left; the same with pods that take a minute to start (KWOK's per-pod delay,
docs/devcluster.md). The CRD refuses maxUnavailable 0 without a maxSurge."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from cliques.api import labels
from tests.support.harness import Cluster, PodTracker, cliqueset, running_operator, wait_for

pytestmark = pytest.mark.cluster

#: KWOK's pod-ready delay (docs/devcluster.md): the pod stays Pending that long once bound.
DELAY = "pod-ready.stage.kwok.x-k8s.io/delay"


def surge_set(image: str, delay: str = "", max_surge: int | str = 1) -> dict[str, Any]:
    body = cliqueset(replicas=4, workers=1, max_unavailable=0, image=image)
    body["spec"]["updateStrategy"]["maxSurge"] = max_surge
    for c in body["spec"]["template"]["cliques"]:
        if delay:
            c["template"]["metadata"]["annotations"] = {DELAY: delay}
    return body


async def gangs_on(cluster: Cluster, image: str) -> dict[int, set[str]] | None:
    """Gang -> the images of its live pods, once every live pod is Ready (else None)."""
    out: dict[int, set[str]] = {}
    for p in await cluster.pods():
        if p.metadata.deletion_timestamp is not None:
            continue
        if not p.is_ready:
            return None
        gang = int(p.metadata.labels[labels.LABEL_GANG_INDEX])
        out.setdefault(gang, set()).add(p.spec.containers[0].image)
    return out


async def roll_with_surge(cluster: Cluster, crds: str, delay: str, timeout: float) -> None:
    async with running_operator(crds, cluster.namespace):
        await cluster.apply(surge_set("busybox:1.36", delay))
        await cluster.wait_available("llama", timeout=timeout)
        async with PodTracker(cluster.client, cluster.namespace, pods_per_gang=2) as tracker:
            tracker.start_counting()
            assert tracker.whole() == 4
            await cluster.apply(surge_set("busybox:1.37", delay))

            async def done() -> bool:
                cqs = await cluster.cliqueset("llama")
                st = cqs.status
                cliques = {c.spec.gang_index for c in await cluster.cliques()}
                return (
                    st is not None
                    and st.observed_generation == cqs.metadata.generation
                    and st.updated_replicas == 4
                    and st.available_replicas == 4
                    and st.surge_replicas == 0
                    and cliques == {0, 1, 2, 3}
                    and await gangs_on(cluster, "busybox:1.37")
                    == {g: {"busybox:1.37"} for g in range(4)}
                )

            await wait_for(done, timeout=timeout * 8, what="the roll through surge gang 4 done")
        surged = [n for n in tracker.added if n.startswith("llama-4-")]
    assert tracker.min_whole is not None and tracker.min_whole >= 4, (
        f"{tracker.min_whole} whole gangs at the worst of the roll"
    )
    assert sorted(surged) == ["llama-4-leader-0", "llama-4-worker-0"], tracker.added
    assert set(surged) <= set(tracker.deleted), "the surge gang is gone at the end"


async def test_a_roll_with_surge_never_has_fewer_than_4_whole_gangs(
    cluster: Cluster, crds: str
) -> None:
    await roll_with_surge(cluster, crds, delay="", timeout=90)


async def test_a_roll_with_surge_and_pods_that_take_a_minute_to_start(
    cluster: Cluster, crds: str
) -> None:
    await roll_with_surge(cluster, crds, delay="60s", timeout=150)


async def test_max_unavailable_0_needs_a_max_surge(cluster: Cluster, crds: str) -> None:
    with pytest.raises(ApiException) as refused:
        await cluster.apply(surge_set("busybox:1.36", max_surge=0))
    assert "maxUnavailable may be 0 only with a maxSurge above 0" in str(refused.value.body)
    with pytest.raises(ApiException) as refused:
        await cluster.apply(surge_set("busybox:1.36", max_surge="a lot"))
    assert "maxSurge must be a number of gangs or a percent" in str(refused.value.body)
    await cluster.apply(surge_set("busybox:1.36", max_surge="25%"))
    cqs = await cluster.cliqueset("llama")
    assert cqs.spec.update_strategy.max_surge == "25%"
