"""`updateStrategy.partition`: gangs below it keep the template they run through a roll,
are still restarted as they are, and are not counted as updated; lowering the partition
continues the roll."""

from __future__ import annotations

import dataclasses

import msgspec
import pytest

from cliques.api.cliqueset_status import CONDITION_PROGRESSING
from cliques.api.meta import find_condition
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.cliqueset import rollout as cliqueset_rollout
from cliques.controllers.features import gang_failures

from .planner_fixtures import clique, cliqueset, gangs, mark_available, services, template_patched
from .planner_fixtures import set_snapshot as snap

H2 = {"leader": "h2", "worker": "h2"}


@pytest.mark.parametrize(
    ("outdated", "partition", "rollable", "held"),
    [
        pytest.param([0, 1, 2, 3], 0, [0, 1, 2, 3], [], id="no-partition"),
        pytest.param([0, 1, 2, 3], 2, [2, 3], [0, 1], id="half"),
        pytest.param([0, 3], 2, [3], [0], id="some-updated"),
        pytest.param([0, 1], 5, [], [0, 1], id="past-the-last-gang"),
    ],
)
def test_partitioned(
    outdated: list[int], partition: int, rollable: list[int], held: list[int]
) -> None:
    assert cliqueset_rollout.partitioned(outdated, partition) == (rollable, held)


def _plan(partition: int, replicas: int = 4, max_unavailable: int = 4) -> object:
    cqs = cliqueset(replicas=replicas, max_unavailable=max_unavailable, partition=partition)
    return cliqueset_planner.plan(
        snap(cqs, gangs(replicas), services=services(replicas), hashes=H2)
    )


def test_a_roll_takes_only_the_gangs_from_the_partition_on() -> None:
    plan = _plan(partition=2)
    rolled = template_patched(plan)  # type: ignore[arg-type]
    assert rolled == ["llama-2-leader", "llama-2-worker", "llama-3-leader", "llama-3-worker"]


def test_lowering_the_partition_continues_the_roll() -> None:
    assert template_patched(_plan(partition=4)) == []  # type: ignore[arg-type]
    rolled = template_patched(_plan(partition=0))  # type: ignore[arg-type]
    assert rolled == [f"llama-{g}-{r}" for g in range(4) for r in ("leader", "worker")]


def test_held_gangs_are_not_updated_and_the_set_says_partitioned() -> None:
    """Every gang at or above the partition is on the new template (here: none outdated
    there), two below it are not: updatedReplicas counts only the first, and Progressing is
    False with reason Partitioned."""
    cqs = cliqueset(replicas=4, partition=2)
    hashes = {"leader": "h1", "worker": "h1"}
    old = [c for c in gangs(4, hash_="h0") if c.spec.gang_index < 2]
    old += [c for c in gangs(4) if c.spec.gang_index >= 2]
    plan = cliqueset_planner.plan(snap(cqs, old, services=services(4), hashes=hashes))
    assert template_patched(plan) == []
    assert plan.status is not None
    assert plan.status.updated_replicas == 2
    progressing = find_condition(plan.status.conditions, CONDITION_PROGRESSING)
    assert progressing is not None
    assert (progressing.status, progressing.reason) == ("False", "Partitioned")
    assert "2 gang(s) below it" in progressing.message


def test_a_broken_gang_below_the_partition_is_restarted_on_its_own_template() -> None:
    """Gang 1 is outdated and below the partition, and broke: the failure policy restarts it
    as it is (its restart count patched, its template not), where an outdated gang above
    the partition would be rolled instead."""
    from .test_gang_failures import POLICY, T0

    cqs = cliqueset(replicas=2, partition=2)
    cqs = msgspec.structs.replace(
        cqs, spec=msgspec.structs.replace(cqs.spec, failure_policy=POLICY)
    )
    since = {gang_failures.ANNOTATION_BREACH_SINCE: T0}
    broken = {"ready": False, "ready_reason": "BelowMinAvailable"}
    cliques = mark_available(
        [
            clique(0, "leader"),
            clique(0, "worker", replicas=2),
            clique(1, "leader", hash_="h0", annotations=since),
            clique(1, "worker", replicas=2, hash_="h0", annotations=since, **broken),
        ]
    )
    hashes = {"leader": "h1", "worker": "h1"}
    later = dataclasses.replace(snap(cqs, cliques, hashes=hashes), now="2026-11-22T08:01:00Z")
    plan = cliqueset_planner.plan(later)
    assert template_patched(plan) == []
    restarted = sorted(
        p.name
        for p in plan.patches
        if p.patch_type == "merge"
        and p.patch["metadata"]["annotations"].get(gang_failures.ANNOTATION_RESTARTS) == "1"
    )
    assert restarted == ["llama-1-leader", "llama-1-worker"]
