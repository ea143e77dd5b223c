"""Revisions on the real local control plane: an image change leaves the set owning two
ControllerRevisions, numbered 1 and 2, and `status.currentRevision` names the second; an
undo (`cliques.rollout.history.undo`) brings every pod back to the old image, renumbers
revision 1 to 3 and makes no third; an undo also rolls back a roll stuck on pods that can
never be scheduled, within `maxUnavailable`."""

from __future__ import annotations

from typing import Any

import pytest

from cliques.api.controllerrevision import ControllerRevision
from cliques.kube.resources import CONTROLLER_REVISIONS
from cliques.rollout import history
from tests.support.harness import Cluster, PodTracker, cliqueset, running_operator, wait_for

pytestmark = pytest.mark.cluster

OLD, NEW = "busybox:1.36", "busybox:1.37"


async def revisions_of(cluster: Cluster, name: str = "llama") -> dict[str, int]:
    """The set's ControllerRevisions (those it controls): name -> revision."""
    cqs = await cluster.cliqueset(name)
    found = await cluster.list(CONTROLLER_REVISIONS, ControllerRevision)
    return {
        r.metadata.name: r.revision
        for r in found
        if (ref := r.metadata.controller_ref()) is not None and ref.uid == cqs.metadata.uid
    }


async def all_pods_run(cluster: Cluster, image: str, count: int) -> bool:
    pods = [p for p in await cluster.pods() if p.metadata.deletion_timestamp is None]
    return len(pods) == count and all(
        p.is_ready and p.spec.containers[0].image == image for p in pods
    )


async def test_an_image_change_records_two_revisions_and_undo_brings_the_old_image_back(
    cluster: Cluster, crds: str
) -> None:
    ns = cluster.namespace
    async with running_operator(crds, ns):
        await cluster.apply(cliqueset(replicas=2, workers=1, image=OLD))
        await cluster.wait_available("llama")
        await cluster.apply(cliqueset(replicas=2, workers=1, image=NEW))
        cqs = await cluster.wait_available("llama", timeout=180)
        assert await all_pods_run(cluster, NEW, 4)

        # Settled: exactly two, 1 and 2, and the status names the second.
        first = await revisions_of(cluster)
        assert sorted(first.values()) == [1, 2], first
        (old_name,) = [n for n, r in first.items() if r == 1]
        (new_name,) = [n for n, r in first.items() if r == 2]
        assert cqs.status is not None and cqs.status.current_revision == new_name
        listed = await history.history(cluster.client, ns, "llama")
        assert [(i.revision, i.name, i.current) for i in listed] == [
            (1, old_name, False),
            (2, new_name, True),
        ]
        assert listed[0].images == {"leader": (OLD, OLD), "worker": (OLD, OLD)}
        assert all(i.created for i in listed)

        back = await history.undo(cluster.client, ns, "llama")
        assert back.name == old_name
        await wait_for(
            lambda: all_pods_run(cluster, OLD, 4), timeout=180, what="every pod on the old image"
        )
        cqs = await cluster.wait_available("llama", timeout=180)

        async def renumbered() -> dict[str, int] | None:
            now = await revisions_of(cluster)
            return now if now == {old_name: 3, new_name: 2} else None

        await wait_for(renumbered, timeout=30, what="revision 1 renumbered to 3, no third")
        cqs = await cluster.cliqueset("llama")
        assert cqs.status is not None and cqs.status.current_revision == old_name
        with pytest.raises(history.AlreadyAtRevision):
            await history.undo(cluster.client, ns, "llama", to_revision=3)
        with pytest.raises(history.NoSuchRevision, match=r"revisions: 2, 3"):
            await history.undo(cluster.client, ns, "llama", to_revision=1)

        # An edit that lands between the undo's read and its write is not overwritten.
        edit = cliqueset(replicas=3, workers=1, image=OLD)
        with pytest.raises(history.ConcurrentEdit, match="nothing was written"):
            await history.undo(Racing(cluster, edit), ns, "llama", to_revision=2)
        cqs = await cluster.cliqueset("llama")
        assert cqs.spec.replicas == 3
        assert {
            c.template["spec"]["containers"][0]["image"] for c in cqs.spec.template.cliques
        } == {OLD}


class Racing:
    """The project's client, but someone else applies `edit` just before each patch."""

    def __init__(self, cluster: Cluster, edit: dict[str, Any]) -> None:
        self.cluster, self.edit = cluster, edit

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cluster.client, name)

    async def patch(self, *args: Any, **kwargs: Any) -> Any:
        await self.cluster.apply(self.edit)
        return await self.cluster.client.patch(*args, **kwargs)


async def test_undo_rolls_back_a_roll_stuck_on_unschedulable_pods(
    cluster: Cluster, crds: str
) -> None:
    ns = cluster.namespace
    good = cliqueset(replicas=3, workers=1, image=OLD)
    stuck: dict[str, Any] = cliqueset(replicas=3, workers=1, image=NEW)
    for clique in stuck["spec"]["template"]["cliques"]:
        main = clique["template"]["spec"]["containers"][0]
        main["resources"]["requests"]["cpu"] = "100000"  # no node has it
    async with running_operator(crds, ns):
        await cluster.apply(good)
        await cluster.wait_available("llama")
        async with PodTracker(cluster.client, ns, pods_per_gang=2) as tracker:
            tracker.start_counting()
            await cluster.apply(stuck)

            async def pending() -> bool:
                pods = await cluster.pods()
                return any(p.spec.containers[0].image == NEW for p in pods)

            await wait_for(pending, timeout=60, what="the first gang rolled to the stuck image")
            back = await history.undo(cluster.client, ns, "llama")
            assert back.revision == 1
            await wait_for(
                lambda: all_pods_run(cluster, OLD, 6),
                timeout=180,
                what="every pod back on the old image",
            )
            await cluster.wait_available("llama", timeout=120)
        assert tracker.max_disrupted <= 1, f"{tracker.max_disrupted} gangs down at once"
        now = await revisions_of(cluster)
        assert sorted(now.values()) == [2, 3], now
