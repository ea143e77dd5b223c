"""Table tests of the CliqueSet rollout: which gangs roll, re-labels on a hash algorithm
upgrade, and the verdicts one plan hands to the next."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.cliqueset import rollout as cliqueset_rollout

from .planner_fixtures import (
    HASHES,
    clique,
    cliqueset,
    gangs,
    services,
    template_patched,
)
from .planner_fixtures import set_snapshot as snap

H2 = {"leader": "h2", "worker": "h2"}


@pytest.mark.parametrize(
    ("strategy", "max_unavailable", "outdated", "unavailable", "picked"),
    [
        pytest.param("RollingUpdate", 1, [0, 1, 2], set(), [0], id="one-at-a-time"),
        pytest.param("RollingUpdate", 2, [0, 1, 2, 3], set(), [0, 1], id="two-at-a-time"),
        pytest.param("RollingUpdate", 0, [0, 1], set(), [0], id="zero-budget-still-moves"),
        pytest.param("RollingUpdate", 1, [0, 1, 2], {1}, [1], id="down-first-for-free"),
        pytest.param("RollingUpdate", 2, [0, 1, 2], {2}, [0, 2], id="down-first-then-budget"),
        pytest.param("RollingUpdate", 1, [1, 2], {0}, [], id="waits-for-an-updated-gang"),
        pytest.param(
            "RollingUpdate", 1, [0, 1, 2, 3], {0, 1, 2, 3}, [0], id="all-down-still-one-at-a-time"
        ),
        pytest.param(
            "RollingUpdate", 1, [1, 2, 3], {1, 2, 3}, [1], id="resize-and-template-in-one-edit"
        ),
        pytest.param("RollingUpdate", 2, [0, 2, 3], {1, 3}, [3], id="down-first-paid-for"),
        pytest.param("RollingUpdate", 2, [2, 3], {0, 1}, [], id="budget-spent-on-new-gangs"),
        pytest.param("RollingUpdate", 1, [], {0}, [], id="nothing-outdated"),
        pytest.param("Recreate", 1, [0, 1, 2], set(), [0, 1, 2], id="recreate-all-at-once"),
        pytest.param("Recreate", 1, [0, 2], {1}, [0, 2], id="recreate-ignores-budget"),
    ],
)
def test_pick(
    strategy: str,
    max_unavailable: int,
    outdated: list[int],
    unavailable: set[int],
    picked: list[int],
) -> None:
    assert cliqueset_rollout.pick(strategy, max_unavailable, outdated, unavailable) == picked


def _gang0_updated_not_ready() -> list[Clique]:
    cl = gangs(3)
    cl[0] = clique(0, "leader", hash_="h2", ready=False)
    cl[1] = clique(0, "worker", replicas=2, hash_="h2", ready=False)
    return cl


def _gang1_down() -> list[Clique]:
    cl = gangs(3)
    cl[2] = clique(1, "leader", ready=False)
    return cl


@pytest.mark.parametrize(
    ("spec", "cliques", "hashes", "rolled"),
    [
        pytest.param(
            {"replicas": 3, "max_unavailable": 1},
            lambda: gangs(3),
            H2,
            ["llama-0-leader", "llama-0-worker"],
            id="max-unavailable-one",
        ),
        pytest.param(
            {"replicas": 3, "max_unavailable": 1},
            _gang0_updated_not_ready,
            H2,
            [],
            id="waits-while-an-updated-gang-is-not-ready",
        ),
        pytest.param(
            {"replicas": 3, "max_unavailable": 1},
            _gang1_down,
            H2,
            ["llama-1-leader", "llama-1-worker"],
            id="unavailable-outdated-gang-first-for-free",
        ),
        pytest.param(
            {"replicas": 4, "max_unavailable": 2},
            lambda: gangs(4),
            H2,
            ["llama-0-leader", "llama-0-worker", "llama-1-leader", "llama-1-worker"],
            id="max-unavailable-two",
        ),
        pytest.param(
            {"replicas": 3, "strategy": "Recreate"},
            lambda: gangs(3),
            H2,
            [f"llama-{g}-{r}" for g in range(3) for r in ("leader", "worker")],
            id="recreate-updates-every-gang",
        ),
        pytest.param(
            # a re-order-only edit gives the same canonical hash
            {"replicas": 2, "image": "vllm:1"},
            lambda: gangs(2),
            HASHES,
            [],
            id="same-hash-rolls-nothing",
        ),
    ],
)
def test_rollout(
    spec: dict[str, Any],
    cliques: Callable[[], list[Clique]],
    hashes: dict[str, str],
    rolled: list[str],
) -> None:
    cqs = cliqueset(**spec)
    plan = cliqueset_planner.plan(
        snap(cqs, cliques(), services=services(cqs.spec.replicas), hashes=hashes)
    )
    assert template_patched(plan) == rolled
    assert [p.name for p in plan.patches if p.patch_type != "json"] == []


def test_a_roll_is_a_json_patch_guarded_by_uid_not_resource_version() -> None:
    cqs = cliqueset(replicas=3, max_unavailable=1)
    plan = cliqueset_planner.plan(snap(cqs, gangs(3), services=services(3), hashes=H2))
    ops = next(p for p in plan.patches if p.name == "llama-0-leader").patch
    assert {"op": "test", "path": "/metadata/uid", "value": "uid-llama-0-leader"} in ops
    assert not any(o["path"] == "/metadata/resourceVersion" for o in ops)


@pytest.mark.parametrize(
    ("rehash", "rolled", "relabelled"),
    [
        pytest.param("newhash", [], 2, id="same-template-relabels"),
        pytest.param("something-else", ["llama-0-leader", "llama-0-worker"], 0, id="change-rolls"),
    ],
)
def test_hash_algorithm_upgrade(rehash: str, rolled: list[str], relabelled: int) -> None:
    """Cliques labelled by algorithm 1; the desired hash is the one of algorithm 2."""
    cqs = cliqueset(replicas=1)
    cl = gangs(1, hash_="oldhash", algorithm=1)
    hashes = {"leader": "newhash", "worker": "newhash"}
    rehashes = {c.metadata.name: rehash for c in cl}
    plan = cliqueset_planner.plan(
        snap(cqs, cl, services=services(1), hashes=hashes, algorithm=2, rehashes=rehashes)
    )
    assert template_patched(plan) == rolled
    relabels = [p for p in plan.patches if p.reason == "Relabel"]
    assert len(relabels) == relabelled
    for patch in relabels:
        meta = patch.patch["metadata"]
        assert meta["labels"] == {labels.LABEL_TEMPLATE_HASH: "newhash"}
        assert meta["annotations"][labels.ANNOTATION_PREVIOUS_HASHES] == "oldhash"
        assert meta["annotations"][labels.ANNOTATION_HASH_ALGORITHM] == "2"


@pytest.mark.parametrize(
    ("hash_", "algorithm", "deleting", "needed"),
    [
        pytest.param("oldhash", 1, False, True, id="other-hash-other-algorithm"),
        pytest.param("h1", 1, False, False, id="desired-hash"),
        pytest.param("oldhash", 2, False, False, id="same-algorithm-is-a-change"),
        pytest.param("oldhash", 1, True, False, id="being-deleted"),
    ],
)
def test_needs_rehash(hash_: str, algorithm: int, deleting: bool, needed: bool) -> None:
    c = clique(0, "leader", hash_=hash_, algorithm=algorithm)
    if deleting:
        c.metadata.deletion_timestamp = "2026-11-22T08:00:00Z"
    assert cliqueset_rollout.needs_rehash(c, HASHES, 2) is needed


def _same_plan(a, b) -> bool:  # type: ignore[no-untyped-def]
    return (
        a.status == b.status
        and [(p.name, p.patch) for p in a.patches] == [(p.name, p.patch) for p in b.patches]
        and [c.name for c in a.creates] == [c.name for c in b.creates]
        and [d.name for d in a.deletes] == [d.name for d in b.deletes]
    )


def test_verdicts_handed_on_give_the_plans_of_a_fresh_judgement() -> None:
    """A sequence of plans, each given the verdicts of the one before, equals the same plans
    judged from scratch, while Cliques are replaced (new status, new hash), the template and
    the replica count change, and the set shrinks."""
    cl = gangs(4)
    steps: list[tuple[Any, list[Any], dict[str, str]]] = [
        (cliqueset(replicas=4), cl, dict(HASHES)),
        # gang 1's leader drops out of Ready (a new object in the cache)
        (cliqueset(replicas=4), [*cl[:2], clique(1, "leader", ready=False), *cl[3:]], HASHES),
        # a new template: every gang is outdated, one rolls at a time
        (cliqueset(replicas=4), cl, H2),
        # gang 0 now carries h2 and is Ready
        (
            cliqueset(replicas=4),
            [clique(0, "leader", hash_="h2"), clique(0, "worker", replicas=2, hash_="h2"), *cl[2:]],
            H2,
        ),
        # a resize of the workers (the context changes: nothing may be reused)
        (cliqueset(replicas=4, roles=(("leader", 1), ("worker", 3))), cl, HASHES),
        # scale down to 2 gangs
        (cliqueset(replicas=2), cl, HASHES),
        (cliqueset(replicas=4), cl, HASHES),
    ]
    previous = None
    for cqs, cliques, hashes in steps:
        fresh = cliqueset_planner.plan(snap(cqs, cliques, services=services(4), hashes=hashes))
        handed_on = cliqueset_planner.plan(
            snap(cqs, cliques, services=services(4), hashes=hashes, previous=previous)
        )
        assert _same_plan(fresh, handed_on)
        previous = handed_on.judgement
        assert previous is not None and set(previous.gangs) <= set(range(cqs.spec.replicas))


def test_only_changed_gangs_are_judged_again(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    cqs = cliqueset(replicas=5)
    cl = gangs(5)
    judged: list[int] = []
    judge = cliqueset_rollout.judge

    def counting(gang, members, ctx, rehashes, counts=None):  # type: ignore[no-untyped-def]
        judged.append(gang)
        return judge(gang, members, ctx, rehashes, counts)

    monkeypatch.setattr(cliqueset_rollout, "judge", counting)
    first = cliqueset_planner.plan(snap(cqs, cl, services=services(5)))
    assert judged == [0, 1, 2, 3, 4]
    judged.clear()
    cl[6] = clique(3, "leader", ready=False)  # a new object for gang 3's leader
    plan = cliqueset_planner.plan(snap(cqs, cl, services=services(5), previous=first.judgement))
    assert judged == [3]
    assert plan.status is not None and plan.status.available_replicas == 4
    judged.clear()
    cliqueset_planner.plan(
        snap(cqs, cl, services=services(5), previous=plan.judgement, algorithm=2)
    )
    assert judged == [0, 1, 2, 3, 4]  # another context: everything judged again
