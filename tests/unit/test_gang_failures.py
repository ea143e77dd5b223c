"""failurePolicy RecreateGang, decided purely: the breach clock, the backoff, the restart
count on the Cliques, GangFailed after maxGangRestarts, other gangs untouched; and the
Clique planner deleting the pods of another restart count."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.policies import FailurePolicy, RestartBackoff
from cliques.controllers.clique import planner as clique_planner
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.features import gang_failures
from tests.unit.planner_fixtures import clique, cliqueset, mark_available, pod, set_snapshot

POLICY = FailurePolicy(
    restart_policy="RecreateGang",
    min_available_breached_seconds=30,
    max_gang_restarts=2,
    restart_backoff=RestartBackoff(initial_seconds=10, max_seconds=15),
)
T0 = "2026-11-22T08:00:00Z"


def with_policy(replicas: int) -> CliqueSet:
    """The fixture CliqueSet with `replicas` gangs and the failure policy POLICY."""
    cqs = cliqueset(replicas=replicas)
    return msgspec.structs.replace(
        cqs, spec=msgspec.structs.replace(cqs.spec, failure_policy=POLICY)
    )


def gang_1_marked(**worker: Any) -> list[Clique]:
    """Two gangs of a leader and 2 workers; gang 1's Cliques marked as breached since T0,
    its worker Clique built with `worker` (e.g. below minAvailable)."""
    since = {gang_failures.ANNOTATION_BREACH_SINCE: T0}
    return mark_available(
        [
            clique(0, "leader"),
            clique(0, "worker", replicas=2),
            clique(1, "leader", annotations=since),
            clique(1, "worker", replicas=2, annotations=since, **worker),
        ]
    )


def members(**annotations: str):  # type: ignore[no-untyped-def]
    return {r: clique(0, r, annotations=dict(annotations)) for r in ("leader", "worker")}


def test_backoff_doubles_up_to_max() -> None:
    assert [gang_failures.backoff(POLICY, n) for n in range(4)] == [10, 15, 15, 15]


def test_breach_is_marked_then_restarted_after_window_and_backoff() -> None:
    first = gang_failures.decide(POLICY, members(), True, T0)
    assert first.annotate == {gang_failures.ANNOTATION_BREACH_SINCE: T0}
    assert first.requeue_after == 40 and first.restarting and not first.restart
    marked = members(**{gang_failures.ANNOTATION_BREACH_SINCE: T0})
    early = gang_failures.decide(POLICY, marked, True, "2026-11-22T08:00:39Z")
    assert not early.restart and not early.annotate and early.requeue_after == 1
    due = gang_failures.decide(POLICY, marked, True, "2026-11-22T08:00:40Z")
    assert due.restart
    assert due.annotate[gang_failures.ANNOTATION_RESTARTS] == "1"
    # the recreated gang is starting: its breach clock is cleared, not restarted
    assert due.annotate[gang_failures.ANNOTATION_BREACH_SINCE] is None
    assert due.requeue_after == 0


def test_breach_that_ends_is_cleared_and_never_restarts() -> None:
    marked = members(**{gang_failures.ANNOTATION_BREACH_SINCE: T0})
    healed = gang_failures.decide(POLICY, marked, False, "2026-11-22T09:00:00Z")
    assert healed.annotate == {gang_failures.ANNOTATION_BREACH_SINCE: None}
    assert not healed.restart and not healed.restarting


def test_after_max_restarts_the_gang_failed_and_is_left_alone() -> None:
    spent = members(
        **{gang_failures.ANNOTATION_RESTARTS: "2", gang_failures.ANNOTATION_BREACH_SINCE: T0}
    )
    d = gang_failures.decide(POLICY, spent, True, "2026-11-22T10:00:00Z")
    assert d.failed and not d.restart and not d.annotate


def test_policy_none_does_nothing() -> None:
    d = gang_failures.decide(FailurePolicy(), members(), True, T0)
    assert not d.annotate and not d.restart and not d.requeue_after


def test_planner_recreates_only_the_breached_gang() -> None:
    cqs = with_policy(replicas=2)
    cliques = gang_1_marked(ready=False, ready_reason="BelowMinAvailable")
    snap = dataclasses.replace(set_snapshot(cqs, cliques), now="2026-11-22T08:01:00Z")
    plan = cliqueset_planner.plan(snap)
    patched = sorted(p.name for p in plan.patches)
    assert patched == ["llama-1-leader", "llama-1-worker"]
    assert all(
        p.patch["metadata"]["annotations"][gang_failures.ANNOTATION_RESTARTS] == "1"
        for p in plan.patches
    )
    assert [e.reason for e in plan.events if e.reason == "GangRestart"] == ["GangRestart"]
    assert plan.status is not None
    cond = {c.type: c for c in plan.status.conditions}
    assert cond["GangRestarting"].status == "True" and "1" in cond["GangRestarting"].message
    assert cond["GangFailed"].status == "False"
    assert plan.requeue_after == 0  # no timer: the recreated gang starts, and its Cliques say when


def test_clique_planner_deletes_pods_of_another_restart_count() -> None:
    cq = clique(0, "worker", replicas=2, annotations={labels.ANNOTATION_GANG_RESTARTS: "1"})
    pods = [pod(cq, i) for i in range(2)]
    plan = clique_planner.plan(
        clique_planner.CliqueSnapshot(clique=cq, pods=pods, template_hash="h1")
    )
    assert sorted(d.reason for d in plan.deletes) == ["GangRestart", "GangRestart"]


def test_an_interrupted_restart_is_completed_not_repeated() -> None:
    # A restart patches each Clique of the gang on its own; when one patch is refused (a
    # 409 on its resourceVersion) the gang is left half restarted: the leader says 1 with
    # a fresh breach mark, the worker still 0 with the old one. The worker is brought to
    # the leader's count (its pods are recreated too); the old mark starts no new restart.
    restarted = "2026-11-22T08:00:40Z"
    gang = {
        "leader": clique(
            0,
            "leader",
            annotations={
                gang_failures.ANNOTATION_RESTARTS: "1",
                gang_failures.ANNOTATION_LAST_RESTART: restarted,
                gang_failures.ANNOTATION_BREACH_SINCE: restarted,
            },
        ),
        "worker": clique(0, "worker", annotations={gang_failures.ANNOTATION_BREACH_SINCE: T0}),
    }
    d = gang_failures.decide(POLICY, gang, True, "2026-11-22T08:00:45Z")
    assert not d.restart and d.restarting and not d.failed
    assert d.annotate == {
        gang_failures.ANNOTATION_RESTARTS: "1",
        gang_failures.ANNOTATION_LAST_RESTART: restarted,
        gang_failures.ANNOTATION_BREACH_SINCE: restarted,
    }
    # once level, the clock runs from the restart: due 30 + 15 s after it
    marks = {k: v for k, v in d.annotate.items() if v is not None}
    level = {r: clique(0, r, annotations=marks) for r in ("leader", "worker")}
    early = gang_failures.decide(POLICY, level, True, "2026-11-22T08:01:24Z")
    assert not early.restart and not early.annotate
    assert gang_failures.decide(POLICY, level, True, "2026-11-22T08:01:25Z").restart
    # levelled whether or not the gang is still below minAvailable
    healed = gang_failures.decide(POLICY, gang, False, "2026-11-22T08:00:45Z")
    assert healed.annotate[gang_failures.ANNOTATION_RESTARTS] == "1"


def test_a_clique_added_to_a_restarted_gang_joins_its_count() -> None:
    # Otherwise it would be levelled to the gang's count right after its pods are made,
    # and they would be recreated for nothing.
    cqs = with_policy(replicas=1)
    leader = clique(0, "leader", annotations={labels.ANNOTATION_GANG_RESTARTS: "2"})
    plan = cliqueset_planner.plan(set_snapshot(cqs, [leader]))
    (worker,) = [c for c in plan.creates if c.name == "llama-0-worker"]
    assert worker.body["metadata"]["annotations"][labels.ANNOTATION_GANG_RESTARTS] == "2"
    assert not [p for p in plan.patches if p.name == "llama-0-worker"]


def test_a_restart_is_expected_until_the_cache_shows_it() -> None:
    # Until the watch shows the new count, the next plan must not act on Cliques that
    # still say the old one: a rolling update's template patch rewrites a Clique's
    # annotations from the cache and would put the old count back.
    cqs = with_policy(replicas=1)
    since = {gang_failures.ANNOTATION_BREACH_SINCE: T0}
    cliques = mark_available(
        [
            clique(0, "leader", annotations=since),
            clique(
                0,
                "worker",
                replicas=2,
                ready=False,
                ready_reason="BelowMinAvailable",
                annotations=since,
            ),
        ]
    )
    snap = dataclasses.replace(set_snapshot(cqs, cliques), now="2026-11-22T08:01:00Z")
    plan = cliqueset_planner.plan(snap)
    assert sorted(p.expect for p in plan.patches) == [
        gang_failures.expect_token("llama-0-leader", "1"),
        gang_failures.expect_token("llama-0-worker", "1"),
    ]
    # the Clique controller's watch settles it with what the Clique records
    watched = clique(0, "worker", annotations={labels.ANNOTATION_GANG_RESTARTS: "1"})
    assert gang_failures.observed_token(watched.metadata) == gang_failures.expect_token(
        "llama-0-worker", "1"
    )
    assert gang_failures.observed_token(clique(0, "leader").metadata) is None


def test_an_unmarked_healthy_gang_is_the_no_op_the_planner_skips() -> None:
    # The planner skips `decide` for a gang that is not breached and `unmarked`: that is
    # only right while `decide` has nothing to do for it and its restart count is 0.
    plain = members(other="x")
    assert gang_failures.unmarked(plain) and gang_failures.unmarked({})
    assert gang_failures.decide(POLICY, plain, False, T0) == gang_failures.GangDecision()
    assert gang_failures.restarts_of(plain) == 0
    for key in (gang_failures.ANNOTATION_BREACH_SINCE, gang_failures.ANNOTATION_RESTARTS):
        marked = members(**{key: T0 if "since" in key else "1"})
        assert not gang_failures.unmarked(marked)
    one = {"leader": clique(0, "leader"), "worker": members(**{"cliques.dev/x": "1"})["worker"]}
    one["worker"].metadata.annotations[gang_failures.ANNOTATION_RESTARTS] = "2"
    assert not gang_failures.unmarked(one), "one marked Clique marks the gang"


def test_a_healed_gang_has_its_mark_cleared_whether_or_not_its_verdict_was_kept() -> None:
    # The planner reads the marks once per gang, with its verdict, and keeps both between
    # plans: a kept verdict must still send the healed gang to the failure policy.
    cqs = with_policy(replicas=2)
    cliques = gang_1_marked()
    first = cliqueset_planner.plan(set_snapshot(cqs, cliques))
    again = cliqueset_planner.plan(set_snapshot(cqs, cliques, previous=first.judgement))
    for plan in (first, again):
        assert sorted(p.name for p in plan.patches) == ["llama-1-leader", "llama-1-worker"]
        assert all(
            p.patch["metadata"]["annotations"] == {gang_failures.ANNOTATION_BREACH_SINCE: None}
            for p in plan.patches
        )
    assert first.judgement is not None
    assert [first.judgement.gangs[g][1].facts.marked for g in (0, 1)] == [False, True]
