"""A gang is never killed by its own operator: the rules of the gang lifecycle, as tables.

- A Clique short of minAvailable only because its spec grew (a resize, new pods on their
  way or waiting for room) is `Resizing`, not `BelowMinAvailable`; one that starts (after
  creation, a roll or a gang restart) is `Starting`. Only a Clique that was Ready in its
  epoch and lost ready pods is breached.
- A status written before a gang restart says nothing about the restarted gang: it is
  neither breached nor available, and start order holds again.
- Gang restarts are paid from `maxUnavailable`, like rolls.
- Restart counts are forgiven once a gang stayed available long enough.
"""

from __future__ import annotations

import dataclasses

import msgspec

from cliques.api import labels
from cliques.api.clique import Clique, CliqueStatus
from cliques.api.cliqueset import CliqueSet
from cliques.api.meta import Condition
from cliques.api.pod import Pod, PodCondition
from cliques.api.policies import FailurePolicy, RestartBackoff
from cliques.controllers.clique import planner as clique_planner
from cliques.controllers.clique import status as clique_status
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.cliqueset import restarts
from cliques.controllers.cliqueset import rollout as cliqueset_rollout
from cliques.controllers.features import gang_failures
from tests.unit.planner_fixtures import (
    NOW,
    clique,
    cliqueset,
    mark_available,
    pod,
    set_snapshot,
)

POLICY = FailurePolicy(
    restart_policy="RecreateGang",
    min_available_breached_seconds=30,
    max_gang_restarts=3,
    restart_backoff=RestartBackoff(initial_seconds=10, max_seconds=20),
)
LATER = "2026-11-22T08:05:00Z"


def with_policy(replicas: int, max_unavailable: int = 1, worker: int = 2) -> CliqueSet:
    cqs = cliqueset(
        replicas=replicas,
        max_unavailable=max_unavailable,
        roles=(("leader", 1), ("worker", worker)),
    )
    return msgspec.structs.replace(
        cqs, spec=msgspec.structs.replace(cqs.spec, failure_policy=POLICY)
    )


def resized(c: Clique, replicas: int) -> Clique:
    """`c` after its spec grew to `replicas` (minAvailable following), generation + 1."""
    spec = msgspec.structs.replace(c.spec, replicas=replicas, min_available=replicas)
    meta = msgspec.structs.replace(c.metadata, generation=c.metadata.generation + 1)
    return msgspec.structs.replace(c, spec=spec, metadata=meta)


def with_status(c: Clique, status: CliqueStatus | None) -> Clique:
    return msgspec.structs.replace(c, status=status)


def annotated(c: Clique, **annotations: str) -> Clique:
    meta = msgspec.structs.replace(
        c.metadata, annotations={**c.metadata.annotations, **annotations}
    )
    return msgspec.structs.replace(c, metadata=meta)


def plan_clique(c: Clique, pods: list[Pod], **kw: object) -> clique_planner.Plan:
    snap = clique_planner.CliqueSnapshot(clique=c, pods=pods, template_hash="h1", now=NOW, **kw)  # type: ignore[arg-type]
    return clique_planner.plan(snap)


def ready_reason(status: CliqueStatus | None) -> tuple[str, str]:
    assert status is not None
    cond = next(c for c in status.conditions if c.type == "Ready")
    return cond.status, cond.reason


def unschedulable(p: Pod) -> Pod:
    st = msgspec.structs.replace(
        p.status,
        phase="Pending",
        conditions=[PodCondition(type="PodScheduled", status="False", reason="Unschedulable")],
    )
    return msgspec.structs.replace(p, status=st)


# --- the Clique's Ready reasons -------------------------------------------------------


def test_a_resize_that_waits_for_room_is_resizing_not_a_breach() -> None:
    before = clique(0, "worker", replicas=2)
    grown = resized(before, 3)
    pods = [pod(grown, 0), pod(grown, 1), unschedulable(pod(grown, 2, ready=False))]
    plan = plan_clique(grown, pods)
    assert ready_reason(plan.status) == ("False", clique_status.REASON_RESIZING)
    assert plan.status is not None
    pending = [c for c in plan.status.conditions if c.type == "PodsUnschedulable"]
    assert pending and pending[0].status == "True" and "llama-0-worker-2" in pending[0].message
    assert not plan.deletes  # no running pod goes

    # And stays Resizing while it waits: the next plan reads the status just written.
    again = plan_clique(with_status(grown, plan.status), pods)
    assert again.status is None or ready_reason(again.status)[1] == clique_status.REASON_RESIZING


def test_a_ready_pod_lost_while_resizing_is_a_breach_and_sticks_until_ready() -> None:
    grown = resized(clique(0, "worker", replicas=2), 3)
    first = plan_clique(grown, [pod(grown, 0), pod(grown, 1)])
    assert ready_reason(first.status)[1] == clique_status.REASON_RESIZING
    lost = with_status(grown, first.status)
    crashed = plan_clique(lost, [pod(grown, 0), pod(grown, 1, ready=False)])
    assert ready_reason(crashed.status) == ("False", clique_status.REASON_BELOW_MIN)
    # It stays breached while it has 2 ready pods again but not 3 ...
    still = plan_clique(with_status(grown, crashed.status), [pod(grown, 0), pod(grown, 1)])
    assert still.status is None or ready_reason(still.status)[1] == clique_status.REASON_BELOW_MIN
    # ... and is Ready once it has them all.
    whole = plan_clique(
        with_status(grown, crashed.status), [pod(grown, 0), pod(grown, 1), pod(grown, 2)]
    )
    assert ready_reason(whole.status) == ("True", "MinAvailable")


def test_a_ready_clique_that_loses_a_pod_is_below_min_available() -> None:
    c = clique(0, "worker", replicas=2)
    plan = plan_clique(c, [pod(c, 0), pod(c, 1, ready=False)])
    assert ready_reason(plan.status) == ("False", clique_status.REASON_BELOW_MIN)


def test_after_a_gang_restart_the_clique_is_starting_and_reports_the_count() -> None:
    # The Clique was breached (BelowMinAvailable, restart count 0); the CliqueSet raised
    # its count to 1. Its pods of count 0 are deleted, and it reports Starting for count 1.
    c = clique(0, "worker", replicas=2, ready=False, ready_reason="BelowMinAvailable")
    c = annotated(c, **{labels.ANNOTATION_GANG_RESTARTS: "1"})
    assert c.status is not None
    c = with_status(c, msgspec.structs.replace(c.status, gang_restarts=0))
    plan = plan_clique(c, [pod(c, 0), pod(c, 1, ready=False)])
    assert sorted(d.reason for d in plan.deletes) == ["GangRestart", "GangRestart"]
    assert plan.status is not None and plan.status.gang_restarts == 1
    assert ready_reason(plan.status) == ("False", clique_status.REASON_STARTING)


def test_a_starting_clique_that_loses_a_pod_is_still_starting() -> None:
    c = clique(0, "worker", replicas=2, ready=False, ready_reason="Starting")
    assert c.status is not None
    c = with_status(c, msgspec.structs.replace(c.status, ready_replicas=1))
    plan = plan_clique(c, [pod(c, 0, ready=False), pod(c, 1, ready=False)])
    assert plan.status is None or ready_reason(plan.status)[1] == clique_status.REASON_STARTING


def test_a_pod_being_deleted_never_makes_its_clique_ready() -> None:
    """A scale-down that deletes the one Ready pod, and keeps one that is still starting:
    the status counts what the plan leaves, and so does a later plan whose cache still
    shows the deleted pod (its delete sent, not seen yet)."""
    c = clique(0, "worker", replicas=1, ready=False, ready_reason="Starting")
    starting, ready_one = pod(c, 0, ready=False), pod(c, 2)
    plan = plan_clique(c, [starting, ready_one])
    assert [d.name for d in plan.deletes] == ["llama-0-worker-2"]
    assert plan.status is None or ready_reason(plan.status)[0] == "False"
    later = plan_clique(
        c,
        [starting, ready_one],
        expectations_satisfied=False,
        deleting=frozenset({"llama-0-worker-2"}),
    )
    assert later.status is None or ready_reason(later.status)[0] == "False"
    # once the pod left is Ready, the Clique is
    done = plan_clique(c, [pod(c, 0)])
    assert done.status is not None and ready_reason(done.status)[0] == "True"


# --- start order after a restart ------------------------------------------------------


def test_start_order_holds_after_a_restart() -> None:
    leader = annotated(clique(0, "leader"), **{labels.ANNOTATION_GANG_RESTARTS: "1"})
    # The leader's status still speaks for count 0 (Ready then): not Ready for count 1.
    assert leader.status is not None
    leader = with_status(leader, msgspec.structs.replace(leader.status, gang_restarts=0))
    worker = clique(0, "worker", replicas=2, starts_after=["llama-0-leader"])
    worker = annotated(worker, **{labels.ANNOTATION_GANG_RESTARTS: "1"})
    assert worker.status is not None
    worker = with_status(worker, msgspec.structs.replace(worker.status, gang_restarts=0))
    pods = {"llama-0-leader": [of_restart(pod(leader, 0), "1")]}
    waiting = clique_planner.waiting_for(worker, {"llama-0-leader": leader}, pods)
    assert waiting == ["llama-0-leader"]
    # The worker started once (Started=True for count 0): that does not count now.
    plan = plan_clique(worker, [], waiting_for=waiting)
    assert not plan.creates
    assert plan.status is not None
    started = next(c for c in plan.status.conditions if c.type == "Started")
    assert started.status == "False" and started.reason == "WaitingForDependencies"


def test_a_sibling_not_yet_reached_by_the_restart_is_waited_for() -> None:
    leader = clique(0, "leader")  # count 0, Ready: the restart's patch has not reached it
    worker = annotated(
        clique(0, "worker", replicas=2, starts_after=["llama-0-leader"]),
        **{labels.ANNOTATION_GANG_RESTARTS: "1"},
    )
    deps = {"llama-0-leader": leader}
    pods = {"llama-0-leader": [of_restart(pod(leader, 0), "1")]}
    assert clique_planner.waiting_for(worker, deps, pods) == ["llama-0-leader"]
    leader1 = annotated(leader, **{labels.ANNOTATION_GANG_RESTARTS: "1"})
    # reached, but its status still speaks for count 0
    deps = {"llama-0-leader": leader1}
    assert clique_planner.waiting_for(worker, deps, pods) == ["llama-0-leader"]
    assert leader1.status is not None
    ready1 = with_status(leader1, msgspec.structs.replace(leader1.status, gang_restarts=1))
    assert clique_planner.waiting_for(worker, {"llama-0-leader": ready1}, pods) == []


def test_a_dependency_whose_ready_pod_is_gone_from_the_cache_is_waited_for() -> None:
    """Its status still says Ready (its own reconcile has not written the loss yet): a
    pod lost a moment ago is not a pod the next clique may start after."""
    leader = clique(0, "leader")
    worker = clique(0, "worker", replicas=2, starts_after=["llama-0-leader"])
    deps = {"llama-0-leader": leader}
    assert clique_planner.waiting_for(worker, deps, {"llama-0-leader": [pod(leader, 0)]}) == []
    for seen in ([], [pod(leader, 0, ready=False)], [pod(leader, 0, deleting=True)]):
        waiting = clique_planner.waiting_for(worker, deps, {"llama-0-leader": seen})
        assert waiting == ["llama-0-leader"], seen
    # a Ready pod of another template (the leader rolls) does not count either
    old = pod(leader, 0, hash_="h0")
    assert clique_planner.waiting_for(worker, deps, {"llama-0-leader": [old]}) == ["llama-0-leader"]


def of_restart(p: Pod, count: str) -> Pod:
    """`p` as made by gang restart `count`."""
    meta = msgspec.structs.replace(
        p.metadata, annotations={**p.metadata.annotations, labels.ANNOTATION_GANG_RESTARTS: count}
    )
    return msgspec.structs.replace(p, metadata=meta)


# --- the CliqueSet: breaches, budget, decay ------------------------------------------


def resizing_gangs(n: int) -> list[Clique]:
    out = []
    for g in range(n):
        out.append(clique(g, "leader"))
        w = resized(clique(g, "worker", replicas=2), 3)
        assert w.status is not None
        out.append(
            with_status(
                w,
                msgspec.structs.replace(
                    w.status,
                    observed_generation=2,
                    conditions=[
                        w.status.conditions[0],
                        Condition(
                            type="Ready",
                            status="False",
                            reason=clique_status.REASON_RESIZING,
                            last_transition_time=NOW,
                            observed_generation=2,
                        ),
                    ],
                ),
            )
        )
    return out


def test_resized_gangs_waiting_for_room_are_not_restarted() -> None:
    cqs = with_policy(3, worker=3)
    for now in (NOW, LATER, "2026-11-22T09:00:00Z"):
        snap = dataclasses.replace(set_snapshot(cqs, resizing_gangs(3)), now=now)
        plan = cliqueset_planner.plan(snap)
        assert not plan.restarting and not plan.failed
        assert not [p for p in plan.patches if p.reason in ("GangRestart", "GangBreach")]
        assert not plan.deletes
        assert plan.status is not None
        cond = {c.type: c for c in plan.status.conditions}
        assert cond["Degraded"].status == "False"
        assert cond["GangFailed"].status == "False"


def breached_gangs(n: int, since: str = NOW) -> list[Clique]:
    mark = {gang_failures.ANNOTATION_BREACH_SINCE: since}
    out = []
    for g in range(n):
        out.append(clique(g, "leader", annotations=mark))
        out.append(
            clique(
                g,
                "worker",
                replicas=2,
                ready=False,
                ready_reason="BelowMinAvailable",
                annotations=mark,
            )
        )
    return mark_available(out)


def restarted(plan: cliqueset_planner.CliqueSetPlan) -> list[int]:
    return sorted({int(p.name.split("-")[1]) for p in plan.patches if p.reason == "GangRestart"})


def test_restarts_are_paid_from_max_unavailable() -> None:
    snap = dataclasses.replace(set_snapshot(with_policy(3), breached_gangs(3)), now=LATER)
    plan = cliqueset_planner.plan(snap)
    assert restarted(plan) == [0]
    assert plan.deferred == [1, 2] and plan.restarting == [0, 1, 2]
    assert 0 < plan.requeue_after <= restarts.DEFERRED_RESTART_REQUEUE
    assert plan.status is not None
    going = next(c for c in plan.status.conditions if c.type == "GangRestarting")
    assert "1, 2 wait" in going.message
    two = cliqueset_planner.plan(
        dataclasses.replace(snap, cliqueset=with_policy(3, max_unavailable=2))
    )
    assert restarted(two) == [0, 1]


def test_a_restarted_gang_still_starting_holds_the_budget() -> None:
    cliques = breached_gangs(2)
    # Gang 0 was restarted: its Cliques record count 1, their statuses still count 0.
    for i in (0, 1):
        c = annotated(
            cliques[i],
            **{gang_failures.ANNOTATION_RESTARTS: "1", gang_failures.ANNOTATION_LAST_RESTART: NOW},
        )
        meta = msgspec.structs.replace(
            c.metadata,
            annotations={
                k: v
                for k, v in c.metadata.annotations.items()
                if k != gang_failures.ANNOTATION_BREACH_SINCE
            },
        )
        assert c.status is not None
        cliques[i] = msgspec.structs.replace(
            c, metadata=meta, status=msgspec.structs.replace(c.status, gang_restarts=0)
        )
    snap = dataclasses.replace(set_snapshot(with_policy(2), cliques), now=LATER)
    facts = cliqueset_rollout.judge_gangs(
        {0: {"leader": cliques[0], "worker": cliques[1]}},
        1,
        cliqueset_rollout.context(snap.cliqueset, snap.hashes, {"leader": [], "worker": []}, 1),
        {},
        None,
    ).facts
    assert facts[0].starting and not facts[0].degraded  # the stale breach is not one
    plan = cliqueset_planner.plan(snap)
    assert restarted(plan) == [] and plan.deferred == [1]
    assert 0 not in plan.restarting


def test_restart_counts_are_forgiven_after_the_gang_stayed_available() -> None:
    marks = {
        gang_failures.ANNOTATION_RESTARTS: "3",
        gang_failures.ANNOTATION_LAST_RESTART: NOW,
    }
    members = {r: clique(0, r, annotations=marks) for r in ("leader", "worker")}
    assert gang_failures.counted_restarts(members) == 3
    window = gang_failures.reset_after(POLICY)
    assert window == 600
    early = gang_failures.decide(
        POLICY, members, False, "2026-11-22T08:09:00Z", available_since=NOW
    )
    assert not early.annotate and early.requeue_after == 60
    late = gang_failures.decide(POLICY, members, False, "2026-11-22T08:10:00Z", available_since=NOW)
    assert late.annotate == {gang_failures.ANNOTATION_FORGIVEN: "3"}
    forgiven = {
        r: annotated(c, **{gang_failures.ANNOTATION_FORGIVEN: "3"}) for r, c in members.items()
    }
    assert gang_failures.counted_restarts(forgiven) == 0
    assert gang_failures.restarts_of(forgiven) == 3  # the history stays
    # A breach then starts over: not failed (3 >= maxGangRestarts without the decay).
    breach = gang_failures.decide(POLICY, forgiven, True, LATER)
    assert not breach.failed and breach.restarting


def test_the_planner_forgives_restarts_of_an_available_gang() -> None:
    marks = {gang_failures.ANNOTATION_RESTARTS: "2", gang_failures.ANNOTATION_LAST_RESTART: NOW}
    cliques = [
        clique(0, "leader", annotations=marks),
        clique(0, "worker", replicas=2, annotations=marks),
    ]
    snap = dataclasses.replace(set_snapshot(with_policy(1), cliques), now="2026-11-22T09:00:00Z")
    plan = cliqueset_planner.plan(snap)
    forgiving = [p for p in plan.patches if p.reason == "ForgiveRestarts"]
    assert sorted(p.name for p in forgiving) == ["llama-0-leader", "llama-0-worker"]
    assert all(
        p.patch["metadata"]["annotations"] == {gang_failures.ANNOTATION_FORGIVEN: "2"}
        for p in forgiving
    )
    assert plan.status is not None and plan.status.gang_restarts == 2


def test_reserved_keys_in_a_template_are_said_once_per_generation() -> None:
    cqs = with_policy(1)
    tmpl = cqs.spec.template.cliques[0]
    tmpl.template["metadata"]["annotations"] = {labels.ANNOTATION_GANG_RESTARTS: "7"}
    first = cliqueset_planner.plan(set_snapshot(cqs, []))
    said = [e for e in first.events if e.reason == "ReservedKeys"]
    assert len(said) == 1 and labels.ANNOTATION_GANG_RESTARTS in said[0].message
    assert first.status is not None
    seen = msgspec.structs.replace(cqs, status=first.status)
    again = cliqueset_planner.plan(set_snapshot(seen, []))
    assert not [e for e in again.events if e.reason == "ReservedKeys"]


def test_without_the_policy_no_epoch_is_written_and_restarts_still_count() -> None:
    marks = {gang_failures.ANNOTATION_RESTARTS: "2"}
    cliques = [
        clique(0, "leader", annotations=marks),
        clique(0, "worker", replicas=2, annotations=marks),
    ]
    plan = cliqueset_planner.plan(set_snapshot(cliqueset(replicas=1), cliques))
    assert not plan.patches  # no available-epoch mark, no breach mark
    assert plan.status is not None and plan.status.gang_restarts == 2


def test_without_the_policy_a_broken_gang_is_down_by_the_worlds_hand() -> None:
    # Two gangs whose workers lost ready pods (a lost node, say) in a set without a failure
    # policy: no epochs are tracked, and the Cliques' BelowMinAvailable says they broke
    # after being Ready. They are down, but not the operator's doing: the budget left for
    # restarts and moves is whole (it was 0, so a lost node's gangs never moved).
    cqs = cliqueset(replicas=2, max_unavailable=1, roles=(("leader", 1), ("worker", 2)))
    cliques = []
    for g in (0, 1):
        cliques.append(clique(g, "leader"))
        cliques.append(
            clique(g, "worker", replicas=2, ready=False, ready_reason="BelowMinAvailable")
        )
    snap = set_snapshot(cqs, cliques)
    ctx = cliqueset_rollout.context(snap.cliqueset, snap.hashes, {"leader": [], "worker": []}, 1)
    assert not ctx.epochs
    by_gang = {g: {"leader": cliques[2 * g], "worker": cliques[2 * g + 1]} for g in (0, 1)}
    facts = cliqueset_rollout.judge_gangs(by_gang, 2, ctx, {}, None).facts
    assert all(f.degraded and not f.starting for f in facts)
    assert cliqueset_rollout.down(facts) == {0, 1}
    assert cliqueset_rollout.restart_budget(1, facts) == 1
