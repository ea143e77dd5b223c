"""The gang lifecycle, simulated: the operator's real controllers and planners against a
simulated cluster and clock (tests/sim, docs/simulator.md), every invariant checked after
every step.

- the simulator itself: the API server's answers (409s, 422s, the status subresource,
  generations, graceful deletion, garbage collection), the clock the planners get, that
  a run is deterministic, and that the checker does catch violations planted in it;
- the cases found by hand, one scenario each (they fail on the planners of b527ec1): a
  resize on full nodes, one crash with a 200 s start, start order after a restart (with
  and without start gates), a pod template carrying the operator's keys;
- the cases the simulator found: a crash in a gang that was never available, a roll
  waiting for terminating pods, a roll right after a restart;
- a property: random scenarios (failurePolicy RecreateGang; slow, pending and failing
  pods; node changes; user edits; operator restarts) keep every invariant.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings

from cliques.api import labels
from cliques.controllers.clique import planner as clique_planner
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.kube import errors
from tests.sim import invariants
from tests.sim import scenarios as sc
from tests.sim.cluster import Cluster, meta, pod_ready, restarts, seconds_of, stamp
from tests.sim.invariants import InvariantViolation
from tests.sim.simulation import Simulation, run_scenario

# ---- the simulated API server ---------------------------------------------------------------


def _clique(name: str = "c", owner: str = "set-uid") -> dict[str, object]:
    return {
        "metadata": {
            "name": name,
            "labels": {"a": "1"},
            "annotations": {"x": "1"},
            "ownerReferences": [{"uid": owner, "controller": True, "kind": "CliqueSet"}],
        },
        "spec": {"cliqueName": "worker", "gangIndex": 0, "replicas": 1, "template": {}},
    }


def _pod(name: str, owner_uid: str) -> dict[str, object]:
    return {
        "metadata": {
            "name": name,
            "labels": {labels.LABEL_POD_INDEX: name.rpartition("-")[2]},
            "ownerReferences": [{"uid": owner_uid, "controller": True, "kind": "Clique"}],
        },
        "spec": {"containers": [{"name": "m", "image": "x"}]},
    }


def test_merge_patch_with_a_stale_resource_version_is_a_conflict() -> None:
    c = Cluster()
    obj = c.create("user", "Clique", _clique())
    rv = meta(obj)["resourceVersion"]
    new = c.patch(
        "user", "Clique", "c", {"metadata": {"resourceVersion": rv, "labels": {"b": "2"}}}
    )
    assert meta(new)["resourceVersion"] != rv and meta(new)["labels"] == {"a": "1", "b": "2"}
    with pytest.raises(errors.Conflict):
        c.patch("user", "Clique", "c", {"metadata": {"resourceVersion": rv, "labels": {"b": "3"}}})
    # A null removes a key; a patch that changes nothing writes nothing.
    gone = c.patch("user", "Clique", "c", {"metadata": {"labels": {"b": None}}})
    assert meta(gone)["labels"] == {"a": "1"}
    same = c.patch("user", "Clique", "c", {"metadata": {"labels": {"a": "1"}}})
    assert meta(same)["resourceVersion"] == meta(gone)["resourceVersion"]


def test_generation_moves_with_the_spec_and_status_only_through_its_subresource() -> None:
    c = Cluster()
    c.create("user", "Clique", _clique())
    relabelled = c.patch("user", "Clique", "c", {"metadata": {"labels": {"b": "2"}}})
    assert meta(relabelled)["generation"] == 1
    resized = c.patch("user", "Clique", "c", {"spec": {"replicas": 3}, "status": {"x": 1}})
    assert meta(resized)["generation"] == 2 and "status" not in resized
    status = c.patch(
        "op:clique",
        "Clique",
        "c",
        {"spec": {"replicas": 9}, "status": {"readyReplicas": 1}},
        sub="status",
    )
    assert status["status"] == {"readyReplicas": 1} and status["spec"]["replicas"] == 3
    assert meta(status)["generation"] == 2


def test_json_patch_test_ops_and_missing_paths_are_refused() -> None:
    c = Cluster()
    obj = c.create("user", "Clique", _clique())
    ok = [
        {"op": "test", "path": "/metadata/uid", "value": meta(obj)["uid"]},
        {"op": "add", "path": "/metadata/labels/cliques.dev~1template-hash", "value": "h2"},
        {"op": "replace", "path": "/spec/template", "value": {"spec": {}}},
    ]
    new = c.patch("op:set", "Clique", "c", ok, patch_type="json")
    assert meta(new)["labels"][labels.LABEL_TEMPLATE_HASH] == "h2"
    assert meta(new)["generation"] == 2
    with pytest.raises(errors.Invalid):
        c.patch(
            "op:set",
            "Clique",
            "c",
            [{"op": "test", "path": "/metadata/uid", "value": "another"}],
            patch_type="json",
        )
    with pytest.raises(errors.Invalid):
        c.patch(
            "op:set",
            "Clique",
            "c",
            [{"op": "remove", "path": "/metadata/annotations/y"}],
            patch_type="json",
        )


def test_a_terminating_pod_holds_its_name_and_dependents_are_collected() -> None:
    c = Cluster(grace=5)
    c.add_node(4)
    owner = c.create("op:set", "Clique", _clique())
    pod = c.create("op:clique", "Pod", _pod("c-0", meta(owner)["uid"]))
    with pytest.raises(errors.AlreadyExists):
        c.create("op:clique", "Pod", _pod("c-0", meta(owner)["uid"]))
    c.tick()  # bound and running
    with pytest.raises(errors.Conflict):
        c.delete("op:clique", "Pod", "c-0", uid="someone-else")
    c.delete("op:clique", "Pod", "c-0", uid=meta(pod)["uid"])
    assert meta(c.objects["Pod"]["c-0"])["deletionTimestamp"] is not None
    with pytest.raises(errors.AlreadyExists):
        c.create("op:clique", "Pod", _pod("c-0", meta(owner)["uid"]))
    c.now = 5
    c.tick()
    assert "c-0" not in c.objects["Pod"]
    c.create("op:clique", "Pod", _pod("c-0", meta(owner)["uid"]))
    c.delete("op:set", "Clique", "c")  # the pod (unbound) goes with its owner at once
    assert c.objects["Pod"] == {} and c.objects["Clique"] == {}


def test_pods_wait_for_room_and_turn_ready_after_their_latency() -> None:
    c = Cluster(latency=lambda: 7)
    node = c.add_node(1)
    owner = c.create("op:set", "Clique", _clique())
    for i in range(2):
        c.create("op:clique", "Pod", _pod(f"c-{i}", meta(owner)["uid"]))
    c.tick()
    bound = {n: p["spec"].get("nodeName") for n, p in c.objects["Pod"].items()}
    assert bound == {"c-0": node, "c-1": None}
    c.now = 7
    c.tick()
    assert pod_ready(c.objects["Pod"]["c-0"]) and not pod_ready(c.objects["Pod"]["c-1"])
    c.crash(c.objects["Pod"]["c-0"])  # a finished pod frees its slot
    c.tick()
    assert c.objects["Pod"]["c-1"]["spec"]["nodeName"] == node


# ---- the simulator as a whole ---------------------------------------------------------------


def test_the_planners_get_the_simulated_clock_and_runs_are_deterministic() -> None:
    # (strict=False: these check the simulator, whatever the planners do)
    scenario = replace(sc.one_crash_slow_start(), settle=600)
    first = Simulation(scenario, strict=False)
    first.run()
    second = Simulation(scenario, strict=False)
    second.run()
    assert [str(e) for e in first.history.entries] == [str(e) for e in second.history.entries]
    cqs = first.cluster.get("CliqueSet", "llama")
    assert cqs is not None
    times = [seconds_of(c["lastTransitionTime"]) for c in cqs["status"]["conditions"]]
    assert all(t is not None and 0 <= t <= first.cluster.now for t in times), times


def test_statuses_are_written_as_the_planners_compute_them() -> None:
    """At rest, planning again changes no status: what the cluster holds is what the
    planners computed, every field of it (the simulator drops nothing)."""
    sim = Simulation(replace(sc.one_crash_slow_start(), settle=3000), strict=False)
    sim.run()
    op = sim.operator
    assert op is not None
    for clique in op.cq.cliques.store.objects():
        assert clique_planner.plan(op.cq.snapshot(clique)).status is None
    cqs = op.cqs.cliquesets.store.get("ns/llama")
    assert cqs is not None and cqs.status is not None
    assert cliqueset_planner.plan(op.cqs.snapshot(cqs)).status is None
    stored = sim.cluster.get("Clique", "llama-0-worker")
    assert stored is not None and stored["status"]["observedGeneration"] >= 1


def _steady(gangs: int = 2) -> Simulation:
    sim = Simulation(sc.Scenario(gangs=gangs, latency=sc.Latency("fixed", 10), settle=300))
    sim.run(until=100)
    assert all(pod_ready(p) for p in sim.pods()) and len(sim.pods()) == 3 * gangs
    return sim


def test_the_checker_catches_a_ready_pod_deleted_for_nothing() -> None:
    sim = _steady()
    sim.cluster.delete("op:clique", "Pod", "llama-1-worker-0")
    assert [f.kind for f in sim.checker.findings] == [invariants.ReadyPodDeleted]


def test_the_checker_catches_restarts_of_gangs_that_did_not_break() -> None:
    sim = _steady(gangs=3)
    for gang in (0, 1):
        for role in ("leader", "worker"):
            name = labels.clique_name("llama", gang, role)
            patch = {"metadata": {"annotations": {labels.ANNOTATION_GANG_RESTARTS: "1"}}}
            sim.cluster.patch("op:set", "Clique", name, patch)
    kinds = [f.kind for f in sim.checker.findings]
    assert kinds == [invariants.BadRestart, invariants.BadRestart, invariants.GangsDown]


def test_the_checker_catches_a_worker_started_before_its_leader() -> None:
    sim = _steady(gangs=1)
    leader = sim.cluster.objects["Pod"]["llama-0-leader-0"]
    sim.cluster.crash(leader)
    sim.checker.after_world()
    for role in ("leader", "worker"):  # a (planted) restart of the broken gang
        name = labels.clique_name("llama", 0, role)
        patch = {"metadata": {"annotations": {labels.ANNOTATION_GANG_RESTARTS: "1"}}}
        sim.cluster.patch("op:set", "Clique", name, patch)
    assert sim.checker.findings == []
    sim.cluster.delete("op:clique", "Pod", "llama-0-worker-0")
    sim.cluster.now += 10
    sim.cluster.tick()
    sim.cluster.round += 1
    worker = sim.cluster.get("Clique", "llama-0-worker")
    assert worker is not None
    body = _pod("llama-0-worker-0", meta(worker)["uid"])
    body["metadata"]["annotations"] = {labels.ANNOTATION_GANG_RESTARTS: "1"}  # type: ignore[index]
    sim.cluster.create("op:clique", "Pod", body)
    assert [f.kind for f in sim.checker.findings] == [invariants.StartOrder]


def test_a_violation_reports_the_scenario_and_the_history() -> None:
    sim = _steady()
    sim.cluster.delete("op:clique", "Pod", "llama-0-leader-0")
    with pytest.raises(InvariantViolation) as caught:
        sim.run(until=110)
    text = str(caught.value)
    assert "I2" in text and "scenario:" in text and "history:" in text
    assert "delete Pod llama-0-leader-0 Ready" in text


# ---- the cases found by hand ----------------------------------------------------------------

#: Each case runs as the controllers' default order has it, and with the reconciles of a
#: round shuffled and watch events one round late (`Scenario.interleave`, `.lag`).
MODES = pytest.mark.parametrize("racy", [False, True], ids=["ordered", "racy"])


def _case(scenario: sc.Scenario, racy: bool) -> Simulation:
    return Simulation(replace(scenario, interleave=racy, lag=racy))


@MODES
def test_a_resize_on_full_nodes_deletes_no_running_pod_and_fails_no_gang(racy: bool) -> None:
    sim = _case(sc.resize_with_nodes_full(), racy)
    sim.run(until=599)
    running = {meta(p)["name"]: meta(p)["uid"] for p in sim.pods() if pod_ready(p)}
    assert len(running) == 9
    sim.run(until=1499)
    # The 9 pods run on, the 3 new ones wait for room, no gang was restarted or failed.
    still = {meta(p)["name"]: meta(p)["uid"] for p in sim.pods() if pod_ready(p)}
    assert still == running
    pending = sorted(meta(p)["name"] for p in sim.pods() if not p["spec"].get("nodeName"))
    assert pending == [f"llama-{g}-worker-2" for g in range(3)]
    assert sim.restarts() == 0 and not sim.outcome.gang_failed
    # Room appears (the node other workloads held is freed): the new pods start and the set
    # is Available.
    outcome = sim.run()
    assert outcome.available and not outcome.gang_failed
    assert sum(1 for p in sim.pods() if pod_ready(p)) == 12


@MODES
def test_one_crash_with_a_200s_start_restarts_its_gang_exactly_once(racy: bool) -> None:
    sim = _case(sc.one_crash_slow_start(), racy)
    outcome = sim.run()
    assert sim.restarts() == 1, sim.history.tail(40)
    assert not outcome.gang_failed and outcome.available
    assert all(pod_ready(p) and restarts(p) == 1 for p in sim.pods())


def _first(sim: Simulation, pattern: str, after: int) -> int:
    times = [e.t for e in sim.history.entries if e.t >= after and re.search(pattern, e.text)]
    assert times, pattern
    return times[0]


@MODES
@pytest.mark.parametrize("gates", [False, True], ids=["pods-held-back", "start-gates"])
def test_start_order_is_kept_after_a_gang_restart(gates: bool, racy: bool) -> None:
    sim = _case(sc.start_order_after_restart(gang_scheduling=gates), racy)
    outcome = sim.run()
    assert sim.restarts() == 1 and outcome.available, sim.history.tail(40)
    restarted = _first(sim, r"patch Clique llama-0-\w+ \(GangRestart\)", 0)
    leader_ready = _first(sim, r"pod llama-0-leader-0 Ready", restarted)
    started = (
        r"patch Pod llama-0-worker-\d \(OpenStartGate\)"
        if gates
        else r"create Pod llama-0-worker-\d"
    )
    assert _first(sim, started, restarted) >= leader_ready


@MODES
def test_a_template_with_the_operators_keys_causes_no_churn(racy: bool) -> None:
    sim = _case(sc.reserved_keys_in_template(), racy)
    outcome = sim.run()
    assert outcome.available
    assert len(sim.checker.creates) == 3 and set(sim.checker.creates.values()) == {1}
    assert sim.cluster.counts.get("delete Pod", 0) == 0


# ---- found by the simulator ----------------------------------------------------------------


@MODES
def test_a_gang_that_was_never_available_is_not_restarted(racy: bool) -> None:
    """Its leader was Ready, its workers not yet: the gang is starting, not broken."""
    sim = _case(sc.crash_while_starting(), racy)
    outcome = sim.run()
    assert sim.restarts() == 0 and outcome.available


@MODES
def test_a_roll_waiting_for_terminating_pods_keeps_start_order(racy: bool) -> None:
    """The workers' new pods, created once their old ones are gone, wait for the leader,
    which stopped being ready meanwhile."""
    sim = _case(sc.roll_waiting_for_terminating_pods(), racy)
    outcome = sim.run()
    assert outcome.available
    ready_again = _first(sim, r"pod llama-0-leader-0 Ready", 311)
    assert _first(sim, r"create Pod llama-0-worker-\d", 300) >= ready_again


@MODES
def test_a_restarted_gang_still_counts_when_a_roll_begins(racy: bool) -> None:
    """Gang 1, restarted, is down by the operator's hand until it is available again: the
    new image rolls no other gang meanwhile (gang 0 still serves with the pod it had)."""
    sim = _case(sc.roll_after_restart_on_full_nodes(), racy)
    assert sim.run().available
    back = _first(sim, r"gang 1 available again", 440)
    assert _first(sim, r"patch Clique llama-0-\w+ \(RollingUpdate\)", 450) >= back


@MODES
def test_a_gang_still_rolling_counts_when_the_template_changes_again(racy: bool) -> None:
    """Gang 1, rolled at t=405, is down until its pods are back: the image of t=460 takes
    no other gang down meanwhile (gang 0 still serves, only short of its resize)."""
    sim = _case(sc.new_image_during_a_roll_and_a_resize(), racy)
    assert sim.run().available
    back = _first(sim, r"gang 1 (available again|back up)", 405)
    assert _first(sim, r"patch Clique llama-0-\w+ \(RollingUpdate\)", 450) >= back


@MODES
def test_a_dependency_lost_as_its_dependent_rolls_is_waited_for(racy: bool) -> None:
    """The workers' new pods of gang 0 are made only once its leader, lost with its node
    at t=938, is Ready again (the run checks start order throughout: I4)."""
    sim = _case(sc.dependency_lost_during_a_roll(), racy)
    sim.run()
    ready_again = _first(sim, r"pod llama-0-leader-0 Ready", 938)
    assert _first(sim, r"create Pod llama-0-worker-\d", 938) >= ready_again


@MODES
def test_a_gate_stays_closed_while_its_dependency_is_down(racy: bool) -> None:
    """The worker's new pod of t=1 waits at its closed gate until the leader, crashed at
    t=2, is Ready again (the run checks start order throughout: I4)."""
    sim = _case(sc.gate_opened_as_its_dependency_crashes(), racy)
    sim.run()
    ready_again = _first(sim, r"pod llama-0-leader-0 Ready", 3)
    assert _first(sim, r"patch Pod llama-0-worker-0 \(OpenStartGate\)", 2) >= ready_again


@pytest.mark.parametrize("interleave", [False, True], ids=["ordered", "interleaved"])
def test_a_scale_down_under_watch_lag_restarts_no_starting_gang(interleave: bool) -> None:
    """Gang 0, never available, is resized down while a worker starts, watch events one
    round late: it is not restarted (the run checks I2 and I3 throughout)."""
    scenario = replace(sc.scale_down_of_a_starting_gang_under_watch_lag(), interleave=interleave)
    sim = Simulation(scenario)
    sim.run()
    restarts = [e.t for e in sim.history.entries if re.search(r"GangRestart.*gang 0 ", e.text)]
    assert not [t for t in restarts if t < 7], "gang 0 restarted before it ever broke"


# ---- maxSurge -------------------------------------------------------------------------------


def _whole(sim: Simulation) -> list[int]:
    return sorted(g for g in sim.checker.gangs if sim.checker.available(g))


def test_surge_gangs_the_world_broke_stand_in_for_nothing() -> None:
    """A restart of a broken surge gang waits while the gangs rolled under its cover are
    still down (I1): the scenario the random runs found."""
    run_scenario(sc.surge_gangs_broken_while_standing_in())


@pytest.mark.parametrize(("max_unavailable", "floor"), [(0, 4), (1, 3)])
@pytest.mark.parametrize("latency", [60, 5])
def test_a_roll_with_surge_keeps_replicas_minus_max_unavailable_whole_gangs(
    max_unavailable: int, floor: int, latency: int
) -> None:
    """4 gangs, maxSurge 1: through the roll, sampled every simulated second, never fewer
    than 4 - maxUnavailable whole gangs (surge gang 4 counted); surge gang 4 is made and
    gone at the end, gangs 0-3 run the new image (the run checks I1 and I8 throughout)."""
    sim = Simulation(sc.roll_with_surge(max_unavailable, latency))
    sim.run(until=299)
    assert _whole(sim) == [0, 1, 2, 3]
    fewest = 4
    for t in range(300, sim.scenario.end, 1):
        sim.run(until=t)
        fewest = min(fewest, len(_whole(sim)))
    assert fewest >= floor
    assert sim.outcome.available and sim.outcome.findings == []
    assert _first(sim, r"create Clique llama-4-leader", 300) >= 300
    assert sorted(sim.checker.gangs) == [0, 1, 2, 3]
    images = {p["spec"]["containers"][0]["image"] for p in sim.pods()}
    assert len(images) == 1 and images != {"vllm:1"}
    assert {sim.checker.cluster.get("Clique", f"llama-4-{r}") for r in ("leader", "worker")} == {
        None
    }


def test_the_checker_catches_too_few_whole_gangs_with_surge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A planted bug: the surge budget one gang too generous (a gang rolls beside each surge
    gang with maxUnavailable 0) is caught (I8)."""
    from cliques.controllers.cliqueset import surge

    generous = surge.Surge.allowance
    monkeypatch.setattr(surge.Surge, "allowance", lambda self, mu: generous(self, mu) + 1)
    sim = Simulation(sc.roll_with_surge(0), strict=False)
    sim.run()
    kinds = {f.kind for f in sim.outcome.findings}
    assert invariants.TooFewWhole in kinds


# ---- random scenarios -----------------------------------------------------------------------


@settings(
    max_examples=300,
    report_multiple_bugs=False,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenario=sc.scenarios())
def test_random_scenarios_keep_every_invariant(scenario: sc.Scenario) -> None:
    run_scenario(scenario)


def test_a_restarted_gang_that_broke_before_it_was_whole_still_holds_the_budget() -> None:
    """Found by a long run (`python -m tests.sim --examples 5000 --seed 2026`): gang 1 is
    restarted; its new leader is Ready, then lost with its node before the workers are;
    the workers turn Ready. The gang was never available whole since its restart, so it is
    still down by the operator's hand, and gang 0, breached meanwhile, must wait for it
    (maxUnavailable 0, so 1)."""
    scenario = sc.Scenario(
        gangs=2,
        roles=(("leader", 1), ("worker", 2)),
        startup="InOrder",
        strategy="RollingUpdate",
        max_unavailable=0,
        policy=sc.Policy(
            restart_policy="RecreateGang", breach=5, max_restarts=1, initial=0, max_backoff=60
        ),
        nodes=(2, 2, 2, 2, 1),
        used=(),
        latency=sc.Latency(kind="fixed", low=161, high=10, every=4),
        grace=5,
        gang_scheduling=False,
        template_labels=(),
        template_annotations=(),
        events=(
            sc.Event(at=166, kind="node-loss", target=2, value=2),
            sc.Event(at=441, kind="image", target="leader", value=0),
            sc.Event(at=601, kind="free", target=2, value=1),
            sc.Event(at=932, kind="node-loss", target=3, value=4),
            sc.Event(at=1228, kind="crash", target=21, value=288),
            sc.Event(at=1512, kind="node-loss", target=3, value=4),
        ),
        interleave=True,
        lag=True,
        settle=1200,
        seed=333,
    )
    run_scenario(scenario)


def test_a_scale_down_during_a_surge_roll_keeps_the_whole_surge_gang() -> None:
    """Found by a long run (`python -m tests.sim --seed 11`), shrunk: a scale-down (2 to 1)
    while surge gangs stand in for a gang lost with its node. Gang 0 is down, gang 1 (now
    above `replicas`) broken, surge gang 2 whole: the surge kept must reach gang 2, not
    stop at gang 1 and delete the only whole gang (I8, too few whole gangs)."""
    scenario = sc.Scenario(
        gangs=2,
        roles=(("leader", 1), ("worker", 1)),
        startup="InOrder",
        strategy="RollingUpdate",
        max_unavailable=0,
        max_surge=2,
        policy=sc.Policy(
            restart_policy="RecreateGang", breach=0, max_restarts=1, initial=0, max_backoff=0
        ),
        nodes=(2, 2, 2),
        used=(),
        latency=sc.Latency(kind="fixed", low=1, high=10, every=4),
        grace=5,
        gang_scheduling=True,
        gang_api="v1beta1",
        template_labels=(),
        template_annotations=(),
        events=(
            sc.Event(at=2, kind="image", target="leader", value=0),
            sc.Event(at=5, kind="crash", target=0, value=5),
            sc.Event(at=6, kind="node-loss", target=0, value=1),
            sc.Event(at=7, kind="node-loss", target=0, value=1),
            sc.Event(at=8, kind="gangs", target=0, value=1),
        ),
        interleave=False,
        lag=False,
        drains=False,
        lost_node_seconds=60,
        settle=1200,
        seed=14,
    )
    run_scenario(scenario)


@MODES
@pytest.mark.parametrize(
    ("max_unavailable", "max_surge", "drained"),
    [(1, 0, 2), (2, 0, 2), (0, 1, 1)],
    ids=["maxUnavailable-1", "maxUnavailable-2", "surge-first"],
)
def test_a_drain_moves_gangs_whole_within_the_budget(
    racy: bool, max_unavailable: int, max_surge: int, drained: int
) -> None:
    sim = _case(sc.drain_a_node(max_unavailable, max_surge, drained=drained), racy)
    outcome = sim.run()
    assert outcome.available, sim.history.tail(60)
    cordoned = {n for n, node in sim.cluster.nodes.items() if node.unschedulable}
    assert len(cordoned) == drained
    left = [meta(p)["name"] for p in sim.pods() if p["spec"].get("nodeName") in cordoned]
    assert left == [], sim.history.tail(60)
    # every gang that had a pod there was made again whole (a move each), none evicted
    # piecemeal while Ready: the set's budget held the drain off
    assert sim.restarts() >= 1
    evicted = [str(e) for e in sim.history.entries if e.actor == "drain"]
    assert evicted == [], evicted
    assert sim.cluster.objects_of("PodDisruptionBudget")


def test_the_checker_catches_moves_beyond_the_budget_and_off_no_cordoned_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cliques.controllers.features import drain

    # A planner that moves every stuck gang at once, whatever the budget says:
    monkeypatch.setattr(drain, "pick", lambda stuck, allowed, **kw: (sorted(stuck), []))
    sim = Simulation(sc.drain_a_node(1, 0, drained=1), strict=False)
    outcome = sim.run()
    assert invariants.GangsDown in {f.kind for f in outcome.findings}
    # And a move of a gang with no pod on a cordoned node:
    sim = _steady(gangs=2)
    stamp = sim.cluster.stamp()
    for role in ("leader", "worker"):
        name = labels.clique_name("llama", 0, role)
        marks = {labels.ANNOTATION_GANG_RESTARTS: "1", labels.ANNOTATION_MOVED_AT: stamp}
        sim.cluster.patch("op:set", "Clique", name, {"metadata": {"annotations": marks}})
    assert invariants.LeftOnDrainedNode in {f.kind for f in sim.checker.findings}


# ---- lost nodes -----------------------------------------------------------------------------


def test_a_lost_nodes_pods_stay_terminating_until_it_is_out_of_service() -> None:
    cluster = Cluster(grace=5)
    node = cluster.add_node(4)
    cluster.create("op", "Pod", _pod("p-0", "c-uid"))
    cluster.create("op", "Pod", _pod("p-1", "c-uid"))
    cluster.tick()
    cluster.now = 20
    cluster.tick()
    assert all(pod_ready(p) for p in cluster.objects_of("Pod"))
    cluster.node_down(node)
    taints = cluster.get("Node", node)["spec"]["taints"]  # type: ignore[index]
    lost = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": stamp(20)}
    assert lost in taints
    # the node lifecycle marks its pods not Ready; deleted, they stay terminating
    assert not any(pod_ready(p) for p in cluster.objects_of("Pod"))
    cluster.delete("op", "Pod", "p-0")
    cluster.now = 200
    cluster.tick()
    assert meta(cluster.get("Pod", "p-0")).get("deletionTimestamp")  # type: ignore[arg-type]
    # a new pod is not placed there
    cluster.create("op", "Pod", _pod("q-0", "c-uid"))
    cluster.tick()
    assert not cluster.get("Pod", "q-0")["spec"].get("nodeName")  # type: ignore[index]
    # the taint manager deletes the others 300 s after the taint; they stay terminating
    cluster.now = 320
    cluster.tick()
    assert meta(cluster.get("Pod", "p-1")).get("deletionTimestamp")  # type: ignore[arg-type]
    cluster.taint_out_of_service(node)
    assert cluster.get("Pod", "p-0") is None and cluster.get("Pod", "p-1") is None


@MODES
@pytest.mark.parametrize(
    ("fixed", "max_unavailable"),
    [("out_of_service", 1), ("back", 1), ("deleted", 1), ("out_of_service", 2), ("never", 1)],
)
def test_a_lost_node_moves_its_gangs_whole_within_the_budget(
    racy: bool, fixed: str, max_unavailable: int
) -> None:
    """Node 0 (gang 0 and gang 1's leader) is lost at t=300: at t=360 gang 0 moves (and
    with maxUnavailable 2 gang 1 too); with maxUnavailable 1 gang 1 waits for gang 0,
    whose pods there hold their names until the node is fixed 300 s after the loss.
    Without a failure policy the gangs the lost node broke are the world's, not the
    operator's: they do not block each other's moves (they did: neither moved)."""
    fix = {} if fixed == "never" else {fixed: 300}
    sim = _case(sc.lose_a_node(max_unavailable=max_unavailable, **fix), racy)
    sim.run(until=400)
    moves = [e for e in sim.history.entries if "MovingGang" in e.text]
    assert [e.t for e in moves] == [360] * max_unavailable, sim.history.tail(60)
    outcome = sim.run()
    assert outcome.available == (fixed != "never"), sim.history.tail(60)
    on_node = [meta(p)["name"] for p in sim.pods() if p["spec"].get("nodeName") == "node-0"]
    if fixed in ("out_of_service", "deleted"):
        assert on_node == []
    elif fixed == "never":
        # the moved gang's pods there are terminating for good, and so are the others (the
        # taint manager's, 300 s after the taint)
        assert len(on_node) == 3
        assert all(
            meta(p).get("deletionTimestamp") for p in sim.pods() if meta(p)["name"] in on_node
        )


def test_the_checker_catches_gangs_left_on_a_lost_node_and_pods_placed_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cliques.controllers.features import drain

    # An operator that does not see lost nodes leaves both gangs there (I10):
    monkeypatch.setattr(drain, "lost", lambda node, tolerations: ("", ""))
    sim = Simulation(sc.lose_a_node(out_of_service=300), strict=False)
    outcome = sim.run()
    found = [f for f in outcome.findings if f.kind is invariants.LeftOnLostNode]
    assert {f.t for f in found} == {365}, found
    assert any("gang 1" in f.message for f in found)
    # A scheduler that binds a pod to a lost node:
    sim = _steady(gangs=1)
    node = sim.pods()[0]["spec"]["nodeName"]
    sim.cluster.node_down(node)
    sim.cluster.create("op:clique", "Pod", _pod("x-0", "nobody"))
    pod = sim.cluster.get("Pod", "x-0")
    assert pod is not None
    sim.cluster._kubelet_write("scheduler", pod, lambda p: p["spec"].update(nodeName=node))
    assert [f.kind for f in sim.checker.findings] == [invariants.LeftOnLostNode]


# ---- the gang APIs: Workloads (1.35) and PodGroups (1.36, 1.37) -------------------------------

REGRESSIONS = (
    sc.resize_with_nodes_full,
    sc.one_crash_slow_start,
    sc.start_order_after_restart,
    sc.reserved_keys_in_template,
    sc.crash_while_starting,
    sc.roll_waiting_for_terminating_pods,
    sc.roll_after_restart_on_full_nodes,
    sc.new_image_during_a_roll_and_a_resize,
    sc.dependency_lost_during_a_roll,
    sc.gate_opened_as_its_dependency_crashes,
    sc.roll_with_surge,
    sc.drain_a_node,
    sc.lose_a_node,
    sc.surge_gangs_broken_while_standing_in,
    sc.scale_down_of_a_starting_gang_under_watch_lag,
)


@pytest.mark.parametrize("gang_api", sc.GANG_APIS)
@pytest.mark.parametrize("make", REGRESSIONS, ids=[f.__name__ for f in REGRESSIONS])
def test_the_regression_scenarios_keep_every_invariant_in_every_gang_api(
    make: object, gang_api: str
) -> None:
    """Each regression scenario with gang scheduling, through the Workload API (1.35) or
    a PodGroup per gang (1.36, 1.37): I11 checks the groups the pods name and the
    scheduler's all-or-nothing binds besides the other invariants."""
    assert callable(make)
    scenario = replace(make(), gang_scheduling=True, gang_api=gang_api)
    sim = Simulation(scenario)
    sim.run()
    kind = "Workload" if gang_api == "v1alpha1" else "PodGroup"
    assert sim.cluster.counts.get(f"create {kind}", 0) >= 1


def _group(name: str, api: str, min_count: int = 2, **spec: object) -> dict[str, object]:
    ref = (
        {"podGroupTemplateRef": {"workload": {"workloadName": "w", "podGroupTemplateName": "g"}}}
        if api == "v1alpha2"
        else {"workloadRef": {"workloadName": "w", "templateName": "g"}}
    )
    return {
        "metadata": {"name": name, "labels": {labels.LABEL_CLIQUESET: "llama"}},
        "spec": {**ref, "schedulingPolicy": {"gang": {"minCount": min_count}}, **spec},
    }


def _in_group(name: str, group: str) -> dict[str, object]:
    pod = _pod(name, "c-uid")
    pod["spec"] = {**pod["spec"], "schedulingGroup": {"podGroupName": group}}  # type: ignore[dict-item]
    return pod


def test_podgroup_writes_the_real_api_server_refuses_are_refused() -> None:
    # v1alpha2 (1.36): the spec is immutable whole, its disruption mode is gated
    old = Cluster(gang_api="v1alpha2")
    old.create("op", "PodGroup", _group("g", "v1alpha2", disruptionMode="PodGroup"))
    with pytest.raises(errors.Invalid):
        old.patch("op", "PodGroup", "g", {"spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}})
    old.patch("op", "PodGroup", "g", {"metadata": {"labels": {"x": "1"}}})  # metadata may
    # a field whose gate is off is dropped, as the real registry does (not refused)
    gated = Cluster(gang_api="v1alpha2", gates=frozenset())
    kept = gated.create("op", "PodGroup", _group("g", "v1alpha2", disruptionMode="PodGroup"))
    assert "disruptionMode" not in kept["spec"]
    # a field of another version is dropped, as the server drops unknown fields
    made = old.create("op", "PodGroup", _group("h", "v1alpha2", workloadRef={"x": "y"}))
    assert "workloadRef" not in made["spec"]
    # v1beta1 (1.37): minCount changes in place, nothing else does
    new = Cluster(gang_api="v1beta1")
    new.create("op", "PodGroup", _group("g", "v1beta1", disruptionMode={"all": {}}))
    new.patch("op", "PodGroup", "g", {"spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}})
    for bad in (
        {"spec": {"schedulingPolicy": {"gang": {"minCount": 0}}}},
        {"spec": {"schedulingPolicy": {"gang": None, "basic": {}}}},
        {"spec": {"disruptionMode": {"single": {}}}},
        {"spec": {"workloadRef": {"workloadName": "other", "templateName": "g"}}},
    ):
        with pytest.raises(errors.Invalid):
            new.patch("op", "PodGroup", "g", bad)
    for bad_spec in (
        {"schedulingPolicy": {}},
        {"schedulingPolicy": {"basic": {}, "gang": {"minCount": 1}}},
        {"disruptionMode": "PodGroup"},  # v1alpha2's string
    ):
        body = _group("x", "v1beta1")
        body["spec"] = {**body["spec"], **bad_spec}  # type: ignore[dict-item]
        with pytest.raises(errors.Invalid):
            new.create("op", "PodGroup", body)
    # a v1alpha2 Workload needs podGroupTemplates (v1alpha1's podGroups is another field)
    w = {"metadata": {"name": "w"}, "spec": {"podGroups": [{"name": "g", "policy": {"basic": {}}}]}}
    with pytest.raises(errors.Invalid):
        old.create("op", "Workload", w)
    Cluster(gang_api="v1alpha1").create("op", "Workload", w)
    # the CompositePodGroup gate is off: a parent is dropped, not refused
    body = _group("y", "v1beta1")
    body["spec"] = {**body["spec"], "parentCompositePodGroupName": "p"}  # type: ignore[dict-item]
    assert "parentCompositePodGroupName" not in new.create("op", "PodGroup", body)["spec"]


def test_a_group_binds_its_pods_only_at_min_count_and_stays_while_a_pod_names_it() -> None:
    cluster = Cluster(gang_api="v1beta1")
    cluster.add_node(8)
    cluster.create("op", "PodGroup", _group("g", "v1beta1", min_count=3))
    for i in range(2):
        cluster.create("op", "Pod", _in_group(f"p-{i}", "g"))
    cluster.tick()
    assert not any(p["spec"].get("nodeName") for p in cluster.objects_of("Pod"))
    cluster.create("op", "Pod", _in_group("p-2", "g"))
    cluster.tick()
    assert all(p["spec"].get("nodeName") for p in cluster.objects_of("Pod"))
    # deleted while its pods name it: kept (podgroup-protection) until they are gone
    cluster.delete("op", "PodGroup", "g")
    assert meta(cluster.get("PodGroup", "g")).get("deletionTimestamp")  # type: ignore[arg-type]
    for i in range(3):
        cluster.delete("op", "Pod", f"p-{i}")
    cluster.now = 10
    cluster.tick()
    assert cluster.get("PodGroup", "g") is None


def test_the_checker_catches_pods_outside_their_gangs_group_and_binds_below_min_count() -> None:
    sim = Simulation(sc.Scenario(gangs=2, gang_scheduling=True, gang_api="v1beta1", settle=300))
    sim.run(until=100)
    assert not sim.checker.findings
    groups = sorted(meta(g)["name"] for g in sim.cluster.objects_of("PodGroup"))
    assert len(groups) == 2
    owner = meta(sim.cluster.get("Clique", "llama-0-worker"))["uid"]  # type: ignore[arg-type]
    # a pod of gang 0 made into gang 1's group, and one into no group at all
    stray = _pod("llama-0-worker-7", owner)
    stray["spec"] = {**stray["spec"], "schedulingGroup": {"podGroupName": groups[1]}}  # type: ignore[dict-item]
    stray["metadata"]["labels"][labels.LABEL_POD_INDEX] = "7"  # type: ignore[index]
    sim.cluster.create("op:clique", "Pod", stray)
    assert [f.kind for f in sim.checker.findings] == [invariants.GangGroups]
    assert "that of set llama gang 1" in sim.checker.findings[0].message
    sim.checker.findings.clear()
    bare = _pod("llama-0-worker-8", owner)
    bare["metadata"]["labels"][labels.LABEL_POD_INDEX] = "8"  # type: ignore[index]
    sim.cluster.create("op:clique", "Pod", bare)
    assert [f.kind for f in sim.checker.findings] == [invariants.GangGroups]
    sim.checker.findings.clear()
    # a scheduler that binds a pod of a group of minCount 3 alone
    sim.cluster.create("op", "PodGroup", _group("lonely", "v1beta1", min_count=3))
    sim.cluster.create("op", "Pod", _in_group("x-0", "lonely"))
    pod = sim.cluster.get("Pod", "x-0")
    assert pod is not None
    sim.cluster._kubelet_write("scheduler", pod, lambda p: p["spec"].update(nodeName="node-1"))
    assert [f.kind for f in sim.checker.findings] == [invariants.GangGroups]


@pytest.mark.parametrize("gang_api", ["v1alpha2", "v1beta1"])
def test_a_resize_keeps_each_gangs_group_at_its_size(gang_api: str) -> None:
    """v1beta1 patches minCount in place; v1alpha2 moves a gang made whole again (the
    crash of a Ready pod, a restart) to a new group of the new size and deletes the old
    one once nothing names it."""
    scenario = sc.Scenario(
        gangs=2,
        startup="AnyOrder",
        gang_scheduling=True,
        gang_api=gang_api,
        latency=sc.Latency("fixed", 10),
        policy=sc.Policy(breach=0, initial=0, max_backoff=0),
        events=(sc.Event(100, "resize", "worker", 3), sc.Event(200, "crash", "llama-1-leader-0")),
        settle=300,
    )
    sim = Simulation(scenario)
    outcome = sim.run()
    assert outcome.available
    counts = {
        meta(g)["name"]: g["spec"]["schedulingPolicy"]["gang"]["minCount"]
        for g in sim.cluster.objects_of("PodGroup")
    }
    if gang_api == "v1beta1":
        assert sorted(counts.values()) == [4, 4], counts
        assert sim.cluster.counts.get("create PodGroup") == 2
    else:
        # gang 0 keeps its group of 3; gang 1, restarted, moved to one of 4
        assert sorted(counts.values()) == [3, 4], counts
        assert sim.cluster.counts.get("create PodGroup") == 3
        assert sim.cluster.counts.get("delete PodGroup") == 1


def test_the_checker_catches_a_min_count_left_behind_and_an_unused_group_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cliques.controllers.features import podgroups

    real = podgroups.plan

    def lazy(*args: object, **kw: object) -> podgroups.GroupPlan:
        out = real(*args, **kw)  # type: ignore[arg-type]
        return podgroups.GroupPlan(creates=out.creates, linked=out.linked)  # no patch, no delete

    monkeypatch.setattr(podgroups, "plan", lazy)
    for gang_api, what in (("v1beta1", "asks for minCount"), ("v1alpha2", "kept, unused")):
        scenario = sc.Scenario(
            gangs=2,
            startup="AnyOrder",
            gang_scheduling=True,
            gang_api=gang_api,
            latency=sc.Latency("fixed", 10),
            policy=sc.Policy(breach=0, initial=0, max_backoff=0),
            events=(
                sc.Event(100, "resize", "worker", 3),
                sc.Event(200, "crash", "llama-1-leader-0"),
            ),
            settle=300,
        )
        outcome = Simulation(scenario, strict=False).run()
        found = [f.message for f in outcome.findings if f.kind is invariants.GangGroups]
        assert any(what in m for m in found), (gang_api, found)


def test_composite_trees_as_the_operator_writes_them_are_accepted_and_kept_consistent() -> None:
    """The operator's bodies of a gang's CompositePodGroup tree (1.37, alpha gate on), flat
    and nested, pass the simulated server's validation parent first, and the checker finds
    them consistent; a composite deleted under its children, or one with fewer children
    than its `minGroupCount`, is caught. (The scenarios have no scaling groups, so no
    run makes composites: this is the checker's and the server's part of them.)"""
    import msgspec

    from cliques.api.cliqueset import CliqueSet
    from cliques.controllers.features import composite_groups as cg
    from cliques.controllers.features.gang_apis import V1Beta1
    from cliques.controllers.features.podgroups import Shape

    sim = Simulation(sc.Scenario(gangs=2, settle=300))
    sim.run(until=30)
    c = sim.cluster
    c.gang_api = "v1beta1"
    c.gates = frozenset({"CompositePodGroup", "TopologyAwareWorkloadScheduling"})
    sim.checker.gang_api = "v1beta1"
    raw = c.get("CliqueSet", "llama")
    assert raw is not None
    cqs = msgspec.convert(raw, CliqueSet)
    shape = Shape(needed=0, topology_key="rack")
    prefill = cg.GroupNeed("prefill", min_available=2, instance_pods=3, instances=3)
    decode = cg.GroupNeed("decode", min_available=1, instance_pods=2, instances=2)
    for gang, (needs, others) in enumerate((([prefill], False), ([prefill, decode], True))):
        templates = cg.workload_templates(needs, shape, others=others, other_pods=2)
        workload = cg.workload_body(cqs, templates, "b", V1Beta1())
        if c.get("Workload", meta(workload)["name"]) is None:
            c.create("op:set", "Workload", workload)
        for member in cg.members("llama", gang, needs, shape, others=others, other_pods=2):
            kind = "CompositePodGroup" if member.kind == cg.KIND_COMPOSITE else "PodGroup"
            c.create(
                "op:set",
                kind,
                cg.body(cqs, gang, member, meta(workload)["name"], shape, bucket="b"),
            )
    sim.checker.composites_consistent()
    assert sim.checker.findings == []
    root = next(
        g
        for g in c.objects_of("CompositePodGroup")
        if not g["spec"].get("parentCompositePodGroupName")
    )
    # a composite's spec is immutable (minGroupCount too)
    with pytest.raises(errors.Invalid):
        c.patch("x", "CompositePodGroup", meta(root)["name"], {"spec": {"priorityClassName": "y"}})
    # a composite asking for more children than it has
    lone = {
        "metadata": {"name": "lone", "labels": {labels.LABEL_CLIQUESET: "llama"}},
        "spec": {
            "workloadRef": {"workloadName": "w", "templateName": "gang"},
            "schedulingPolicy": {"gang": {"minGroupCount": 2}},
        },
    }
    c.create("op:set", "CompositePodGroup", lone)
    # the root deleted under its children (a composite has no finalizer: it goes at once)
    c.delete("op:set", "CompositePodGroup", meta(root)["name"])
    sim.checker.composites_consistent()
    found = [f.message for f in sim.checker.findings]
    assert any("lone needs 2 groups and has 0 children" in m for m in found), found
    assert any(f"names parent {meta(root)['name']}, which does not exist" in m for m in found)


def test_a_shrunk_gang_made_whole_again_on_1_35_is_placed_again() -> None:
    """Found with the PodGroup invariants (I11) run on 1.35: worker 2 -> 1 at t=100 (the
    gang needs 2 pods, not 3), the leader crashes at t=200 and the gang is restarted. Its
    pods named the Workload it was made with (minCount 3) and were never placed; a gang
    whose pods are all made again now moves to the current Workload."""
    scenario = sc.Scenario(
        gangs=1,
        startup="AnyOrder",
        gang_scheduling=True,
        gang_api="v1alpha1",
        latency=sc.Latency("fixed", 10),
        policy=sc.Policy(breach=0, initial=0, max_backoff=0),
        events=(sc.Event(100, "resize", "worker", 1), sc.Event(200, "crash", "llama-0-leader-0")),
        settle=300,
    )
    sim = Simulation(scenario)
    outcome = sim.run()
    assert outcome.available and sim.restarts() == 1
    (left,) = sim.cluster.objects_of("Workload")
    assert left["spec"]["podGroups"][0]["policy"] == {"gang": {"minCount": 2}}
    recorded = {
        meta(c)["annotations"][labels.ANNOTATION_WORKLOAD] for c in sim.cluster.objects_of("Clique")
    }
    assert recorded == {meta(left)["name"]}


def test_a_gang_rolled_while_it_grows_is_back_at_the_size_it_served() -> None:
    """Found by `python -m tests.sim --examples 1500 --seed 7`: 3 gangs, maxUnavailable 0,
    gang scheduling; the workers are resized 1 -> 4 at t=9 (few new pods fit: every gang
    Resizing, still serving with the pods it had), a new leader image at t=10 rolls gang
    0, whose new leader is Ready at t=12: the gang serves again at the size it served
    before (its workers only grow), so the roll of gang 1 then is within the budget. The
    checker took the gang as down until it reached the new size (I1)."""
    scenario = sc.Scenario(
        gangs=3,
        roles=(("leader", 1), ("worker", 1)),
        startup="InOrder",
        max_unavailable=0,
        policy=sc.Policy(breach=0, max_restarts=1, initial=0, max_backoff=0),
        nodes=(1,) * 8,
        latency=sc.Latency("uniform", 1, 4),
        grace=0,
        gang_scheduling=True,
        events=(
            sc.Event(1, "node-add", value=1),
            sc.Event(9, "resize", "worker", 4),
            sc.Event(10, "image", "leader"),
        ),
        settle=1200,
    )
    sim = Simulation(scenario)
    sim.run()
    assert sim.checker.rolls, sim.history.tail(40)
