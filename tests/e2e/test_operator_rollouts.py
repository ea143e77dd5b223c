"""Rollouts on the real local control plane: gang by gang within maxUnavailable, across an
operator crash; re-order-only edits roll nothing; a hash-algorithm upgrade re-labels pods
in place instead of recreating them."""

from __future__ import annotations

import asyncio
import copy
from collections import Counter

import pytest

from cliques.api import labels
from cliques.operator.manager import Config, Manager
from tests.support.harness import (
    Cluster,
    PodTracker,
    cliqueset,
    crash,
    running_operator,
    wait_for,
)

pytestmark = pytest.mark.cluster


async def uids(cluster: Cluster) -> dict[str, str]:
    return {p.metadata.name: p.metadata.uid for p in await cluster.pods()}


async def all_pods_on(cluster: Cluster, image_hash: str, count: int) -> bool:
    pods = [p for p in await cluster.pods() if p.metadata.deletion_timestamp is None]
    return len(pods) == count and all(
        p.metadata.labels.get(labels.LABEL_TEMPLATE_HASH) == image_hash and p.is_ready for p in pods
    )


async def test_rolling_update_stays_within_max_unavailable(cluster: Cluster, crds: str) -> None:
    async with running_operator(crds, cluster.namespace):
        await cluster.apply(cliqueset(replicas=4, workers=2, max_unavailable=1))
        await cluster.wait_available("llama")
        before = await uids(cluster)
        async with PodTracker(cluster.client, cluster.namespace, pods_per_gang=3) as tracker:
            tracker.start_counting()
            await cluster.apply(
                cliqueset(replicas=4, workers=2, max_unavailable=1, image="busybox:1.37")
            )
            cqs = await cluster.wait_available("llama", timeout=180)
        after = await uids(cluster)
    assert tracker.max_disrupted <= 1, f"{tracker.max_disrupted} gangs down at once"
    churn = {n: k for n, k in Counter(tracker.deleted).items() if k > 1}
    assert churn == {}, f"pods deleted more than once in one rollout: {churn}"
    assert set(after) == set(before)
    assert all(after[n] != before[n] for n in before), "every pod was replaced"
    assert cqs.status is not None and cqs.status.updated_replicas == 4


async def test_reorder_only_apply_replaces_no_pod(cluster: Cluster, crds: str) -> None:
    body = cliqueset(replicas=2)
    async with running_operator(crds, cluster.namespace):
        await cluster.apply(body)
        first = await cluster.wait_available("llama")
        before = await uids(cluster)

        shuffled = copy.deepcopy(body)
        cliques = shuffled["spec"]["template"]["cliques"]
        cliques.reverse()  # AnyOrder: the order of cliques is not meaning
        for c in cliques:
            spec = c["template"]["spec"]
            spec["containers"].reverse()  # +listType=map
            main = next(x for x in spec["containers"] if x["name"] == "main")
            main["ports"].reverse()  # +listType=map
            main["resources"]["requests"] = {"memory": "67108864", "cpu": "0.1"}  # same values
        await cluster.apply(shuffled)

        async def observed() -> bool:
            cqs = await cluster.cliqueset("llama")
            return (
                cqs.metadata.generation > first.metadata.generation
                and cqs.status is not None
                and cqs.status.observed_generation == cqs.metadata.generation
            )

        await wait_for(observed, timeout=30, what="the re-ordered spec observed")
        second = await cluster.wait_available("llama")
        assert await uids(cluster) == before, "a re-order-only apply replaced pods"
    assert first.status is not None and second.status is not None
    assert second.status.template_hash == first.status.template_hash


async def test_operator_crash_mid_rollout_resumes_within_budget(
    cluster: Cluster, crds: str
) -> None:
    ns = cluster.namespace
    async with running_operator(crds, ns):
        await cluster.apply(cliqueset(replicas=4, workers=1, max_unavailable=1))
        await cluster.wait_available("llama")
    before = await uids(cluster)

    async with PodTracker(cluster.client, ns, pods_per_gang=2) as tracker:
        tracker.start_counting()
        manager = Manager(Config(kubeconfig=crds, namespace=ns, qps=0, expectations_ttl=30))
        task = asyncio.create_task(manager.run())
        await wait_for(lambda: _ready(manager), timeout=30, what="first operator synced")
        await cluster.apply(
            cliqueset(replicas=4, workers=1, max_unavailable=1, image="busybox:1.37")
        )

        async def rollout_started() -> bool:
            return (
                any(n not in before or before[n] != u for n, u in (await uids(cluster)).items())
                or len(tracker.deleted) > 0
            )

        await wait_for(rollout_started, timeout=60, what="the rollout to start")
        await crash(manager, task)  # no drain: as if the process was killed

        async with running_operator(crds, ns):
            await cluster.wait_available("llama", timeout=180)
    after = await uids(cluster)
    assert all(after[n] != before[n] for n in before), "the restarted operator finished the rollout"
    assert tracker.max_disrupted <= 1, f"{tracker.max_disrupted} gangs down at once"


async def _ready(manager: Manager) -> bool:
    return manager.ready()


async def test_hash_algorithm_upgrade_relabels_pods_in_place(cluster: Cluster, crds: str) -> None:
    ns = cluster.namespace
    async with running_operator(crds, ns):
        await cluster.apply(cliqueset(replicas=2))
        await cluster.wait_available("llama")
    before = await uids(cluster)
    old_hash = {p.metadata.labels[labels.LABEL_TEMPLATE_HASH] for p in await cluster.pods()}

    # The "upgraded" operator hashes with algorithm 2: every hash differs, no template does.
    async with running_operator(crds, ns, hash_algorithm=2):

        async def relabelled() -> bool:
            pods = await cluster.pods()
            return bool(pods) and all(
                p.metadata.annotations.get(labels.ANNOTATION_HASH_ALGORITHM) == "2" for p in pods
            )

        await wait_for(relabelled, timeout=60, what="pods re-labelled with algorithm 2")

        async def reported() -> bool:
            st = (await cluster.cliqueset("llama")).status
            return st is not None and st.hash_algorithm == 2

        await wait_for(reported, timeout=30, what="CliqueSet status on algorithm 2")
        cqs = await cluster.wait_available("llama")
    new_hash = {p.metadata.labels[labels.LABEL_TEMPLATE_HASH] for p in await cluster.pods()}
    assert await uids(cluster) == before, "an operator upgrade recreated pods"
    assert new_hash.isdisjoint(old_hash)
    assert cqs.status is not None and cqs.status.hash_algorithm == 2


#: The dev cluster's start model (docs/devcluster.md): seconds every container start takes.
LOAD = "start.stage.kwok.x-k8s.io/load-seconds"


def _partitioned(partition: int, image: str = "busybox:1.36", load: int = 0) -> dict[str, object]:
    body = cliqueset(replicas=4, workers=1, max_unavailable=2, image=image)
    body["spec"]["updateStrategy"]["partition"] = partition  # type: ignore[index]
    if load:
        for c in body["spec"]["template"]["cliques"]:  # type: ignore[index]
            c["template"].setdefault("metadata", {})["annotations"] = {LOAD: str(load)}
    return body


@pytest.mark.parametrize("load", [0, 60], ids=["instant-pods", "pods-take-a-minute"])
async def test_a_partition_rolls_only_the_gangs_from_it_on(
    cluster: Cluster, crds: str, load: int
) -> None:
    """partition 2 over 4 gangs: an image change rolls gangs 2 and 3 and leaves the pods of 0
    and 1 as they were; the set counts 2 gangs updated and says Partitioned; lowering the
    partition to 0 continues the roll to every gang. The same with pods whose containers
    take a minute to start (the dev cluster's start model)."""
    slow = 3 * load

    async def images() -> dict[int, set[str]]:
        """The images of the main container of each gang's Ready pods."""
        out: dict[int, set[str]] = {}
        for p in await cluster.pods():
            if p.metadata.deletion_timestamp is None and p.is_ready:
                gang = int(p.metadata.labels[labels.LABEL_GANG_INDEX])
                main = [c.image for c in p.spec.containers if c.name == "main"]
                out.setdefault(gang, set()).update(main)
        return out

    async with running_operator(crds, cluster.namespace):
        await cluster.apply(_partitioned(0, load=load))
        await cluster.wait_available("llama", timeout=90 + slow)
        before = await uids(cluster)
        await cluster.apply(_partitioned(2, image="busybox:1.37", load=load))

        async def partitioned() -> object:
            cqs = await cluster.cliqueset("llama")
            st = cqs.status
            if st is None or st.observed_generation != cqs.metadata.generation:
                return None
            done = any(c.type == "Progressing" and c.reason == "Partitioned" for c in st.conditions)
            return cqs if done and st.available_replicas == 4 else None

        cqs = await wait_for(
            partitioned, timeout=180 + slow, what="gangs 2 and 3 rolled, Partitioned"
        )
        assert cqs.status is not None and cqs.status.updated_replicas == 2  # type: ignore[attr-defined]
        seen = await images()
        assert [("busybox:1.37" in seen[g]) for g in range(4)] == [False, False, True, True], seen
        kept = await uids(cluster)
        held = [n for n in before if int(n.split("-")[1]) < 2]
        assert held and all(kept[n] == before[n] for n in held), "a held gang's pod was replaced"

        await cluster.apply(_partitioned(0, image="busybox:1.37", load=load))
        cqs = await cluster.wait_available("llama", timeout=180 + slow)
        assert cqs.status is not None and cqs.status.updated_replicas == 4
        seen = await images()
        assert all(seen[g] == {"busybox:1.37"} for g in range(4)), seen
