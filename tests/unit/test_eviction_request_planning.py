"""EvictionRequests answered as a responder, planned (no cluster): which Evictions are the
operator's to answer (its responder active, not completed), which gang a target pod asks to
move, the move within `maxUnavailable` (surge first, as off a drained node), withdrawn
requests, the status reports (heartbeat, message, completion once the pod has left, their
pacing), a set that does not move gangs, the pods that name the responder (never changing
the template hash), and the informers' bookkeeping and wake-ups."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec
import pytest

from cliques.api import labels
from cliques.api.cliqueset import CliqueSet
from cliques.api.eviction import RESPONDER_PRIORITY, Eviction
from cliques.api.meta import ObjectMeta, OwnerReference, find_condition
from cliques.api.pod import Pod, PodSpec
from cliques.api.policies import DrainPolicy, EvictionHold, NodeDrain
from cliques.controllers.base.actions import Patch
from cliques.controllers.clique import bodies
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.cliqueset.snapshot import CliqueSetPlan
from cliques.controllers.features import drain
from cliques.controllers.features import eviction_requests as er
from cliques.kube.resources import CLIQUES, EVICTIONS

from .planner_fixtures import NOW, clique, cliqueset, gangs, services
from .planner_fixtures import set_snapshot as snap

RESPONDER = labels.LABEL_RESPONDER
#: An Eviction as kube-controller-manager 1.38.0-beta.0 made it on the dev cluster.
MADE = {
    "apiVersion": "lifecycle.k8s.io/v1alpha1",
    "kind": "Eviction",
    "metadata": {
        "labels": {
            RESPONDER: "responder",
            "example.com/tester": "requester",
            "imperative-eviction.k8s.io/evictor": "responder",
        },
        "name": "pod-1-llama-1-leader-0",
        "namespace": "ns",
        "ownerReferences": [
            {
                "apiVersion": "lifecycle.k8s.io/v1alpha1",
                "kind": "EvictionRequest",
                "name": "drain-llama",
                "uid": "er-uid",
            }
        ],
        "resourceVersion": "310",
        "uid": "ev-uid",
    },
    "spec": {"target": {"pod": {"name": "llama-1-leader-0", "uid": "pod-uid"}}},
    "status": {
        "conditions": [
            {
                "lastTransitionTime": "2026-11-28T14:33:24Z",
                "message": "",
                "reason": "AwaitingEviction",
                "status": "False",
                "type": "Failed",
            }
        ],
        "observedGeneration": 1,
        "requesters": [{"intent": "Eviction", "name": "example.com/tester"}],
        "responders": [
            {"name": RESPONDER, "startTime": "2026-11-28T14:33:24Z"},
            {"name": "imperative-eviction.k8s.io/evictor"},
        ],
        "targetResponders": [
            {"name": RESPONDER, "priority": 10000, "state": "Active"},
            {"name": "imperative-eviction.k8s.io/evictor", "priority": 100, "state": "Inactive"},
        ],
    },
}


def made(**status: Any) -> Eviction:
    raw = msgspec.json.decode(msgspec.json.encode(MADE))
    raw["status"].update(status)
    return msgspec.convert(raw, Eviction)


def test_an_eviction_decodes_as_the_controller_makes_it() -> None:
    ev = made()
    assert ev.state_of(RESPONDER) == "Active"
    assert ev.state_of("imperative-eviction.k8s.io/evictor") == "Inactive"
    assert ev.requests() == ["drain-llama"]
    assert not ev.withdrawn()
    assert er.open_for_us(ev)
    assert list(er.by_target(ev)) == ["ns/llama-1-leader-0"]


def test_only_an_active_uncompleted_responder_answers() -> None:
    inactive = [{"name": RESPONDER, "priority": 10000, "state": "Inactive"}]
    assert not er.open_for_us(made(targetResponders=inactive))
    canceled = [{"name": RESPONDER, "priority": 10000, "state": "Canceled"}]
    assert not er.open_for_us(made(targetResponders=canceled))
    done = [{"name": RESPONDER, "completionTime": NOW}]
    assert not er.open_for_us(made(responders=done))
    withdrawn = [{"name": "example.com/tester", "intent": "Withdrawn"}]
    assert made(requesters=withdrawn).withdrawn()


# -- planning ------------------------------------------------------------------------------


def asking(
    gang: int,
    role: str = "leader",
    *,
    where: str = er.LIVE,
    restarts: str = "0",
    withdrawn: bool = False,
    heartbeat: str = "",
    message: str = "",
) -> er.Target:
    name = labels.clique_name("llama", gang, role)
    return er.Target(
        eviction=f"pod-1-{name}-0",
        requests=(f"req-{gang}",),
        pod=f"{name}-0",
        where=where,
        gang=gang,
        clique_uid=f"uid-{name}",
        restarts=restarts,
        node="n1",
        withdrawn=withdrawn,
        heartbeat=heartbeat,
        message=message,
    )


def with_drain(cqs: CliqueSet, **fields: Any) -> CliqueSet:
    spec = msgspec.structs.replace(cqs.spec, node_drain=NodeDrain(**fields))
    return msgspec.structs.replace(cqs, spec=spec)


def plan(
    cliques: list[Any],
    targets: tuple[er.Target, ...],
    *,
    cqs: CliqueSet | None = None,
    served: bool = True,
    drained: tuple[drain.Drained, ...] = (),
    **kw: Any,
) -> CliqueSetPlan:
    cqs = cqs if cqs is not None else cliqueset(replicas=4)
    n = max([c.spec.gang_index for c in cliques], default=-1) + 1
    base = snap(cqs, cliques, services=services(n), **kw)
    return cliqueset_planner.plan(
        dataclasses.replace(
            base,
            evictions=er.View(served=served, targets=targets),
            drain=drain.View(served=True, pods=drained),
        )
    )


def moved(out: CliqueSetPlan) -> list[str]:
    return sorted(p.name for p in out.patches if p.resource == CLIQUES and p.reason == "GangMove")


def reported(out: CliqueSetPlan) -> dict[str, dict[str, Any]]:
    """Eviction name -> the responder entry the plan writes to its status."""
    out_: dict[str, dict[str, Any]] = {}
    for p in out.patches:
        if p.resource == EVICTIONS:
            assert (p.sub, p.patch_type) == ("status", "strategic")
            (entry,) = p.patch["status"]["responders"]
            assert entry["name"] == RESPONDER
            out_[p.name] = entry
    return out_


def moving_condition(out: CliqueSetPlan) -> Any:
    assert out.status is not None
    return find_condition(out.status.conditions, drain.CONDITION_MOVING)


def test_a_request_moves_the_targets_gang_whole_and_says_so() -> None:
    out = plan(gangs(4), (asking(1),))
    assert moved(out) == ["llama-1-leader", "llama-1-worker"]
    entry = reported(out)["pod-1-llama-1-leader-0"]
    assert entry == {
        "name": RESPONDER,
        "heartbeatTime": NOW,
        "message": "moving gang 1 whole: every pod of it is made again elsewhere",
    }
    cond = moving_condition(out)
    assert cond.status == "True" and cond.reason == drain.REASON_EVICTION_REQUEST
    assert "asked to go by EvictionRequest req-1: 1" in cond.message
    assert "moving 1 now" in cond.message
    (event,) = [e for e in out.events if e.reason == drain.EVENT_MOVING]
    assert "gang 1 is asked to go by EvictionRequest req-1" in event.message
    # the next heartbeat falls due within a minute
    assert 0 < out.requeue_after <= er.HEARTBEAT_EVERY


def test_two_requests_move_one_gang_at_a_time_and_the_other_keeps_heartbeating() -> None:
    out = plan(gangs(4), (asking(1), asking(2, "worker")))
    assert moved(out) == ["llama-1-leader", "llama-1-worker"]
    said = reported(out)
    assert said["pod-1-llama-2-worker-0"]["message"] == (
        "gang 2 waits for maxUnavailable to move whole"
    )
    assert "completionTime" not in said["pod-1-llama-2-worker-0"]
    assert "2 wait for maxUnavailable" in moving_condition(out).message
    assert out.requeue_after == drain.WAIT_REQUEUE


def test_max_unavailable_2_moves_both() -> None:
    out = plan(gangs(4), (asking(1), asking(2)), cqs=cliqueset(replicas=4, max_unavailable=2))
    assert moved(out) == ["llama-1-leader", "llama-1-worker", "llama-2-leader", "llama-2-worker"]


def test_a_gang_both_drained_and_asked_moves_once_and_both_are_said() -> None:
    name = labels.clique_name("llama", 1, "worker")
    on_node = drain.Drained(f"{name}-0", "n1", "cordoned", f"uid-{name}", "0")
    out = plan(gangs(4), (asking(1),), drained=(on_node,))
    assert moved(out) == ["llama-1-leader", "llama-1-worker"]
    cond = moving_condition(out)
    assert cond.reason == drain.REASON_NODE_DRAIN
    assert "n1 (cordoned)" in cond.message and "EvictionRequest req-1" in cond.message
    (event,) = [e for e in out.events if e.reason == drain.EVENT_MOVING]
    assert "drained node(s) n1 (cordoned) and is asked to go by" in event.message


def test_a_withdrawn_request_moves_nothing() -> None:
    out = plan(gangs(4), (asking(1, withdrawn=True),))
    assert moved(out) == []
    assert moving_condition(out) is None
    assert reported(out)["pod-1-llama-1-leader-0"]["message"] == (
        "every requester withdrew: gang 1 stays"
    )


def test_a_pod_of_an_earlier_restart_is_not_moved_again() -> None:
    restarted = {labels.ANNOTATION_GANG_RESTARTS: "1"}
    cliques = gangs(4)
    cliques[2:4] = [
        clique(1, "leader", annotations=restarted, ready=False),
        clique(1, "worker", replicas=2, annotations=restarted, ready=False),
    ]
    out = plan(cliques, (asking(1, restarts="0"),))
    assert moved(out) == []
    entry = reported(out)["pod-1-llama-1-leader-0"]
    assert entry["message"] == "gang 1 is being made again whole"
    assert "completionTime" not in entry
    # said while under way, but not moved again (nor counted as stuck)
    assert out.moving == []
    cond = moving_condition(out)
    assert cond.status == "True" and cond.reason == drain.REASON_EVICTION_REQUEST
    assert cond.message == "gangs asked to go by EvictionRequest req-1: 1"
    # the set's status is written in the same plan: it does not wait for the report
    assert all(p.status_neutral for p in out.patches if p.resource == EVICTIONS)


@pytest.mark.parametrize(
    ("where", "said"),
    [
        (er.GONE, "pod llama-1-leader-0 is gone: its gang was made again whole elsewhere"),
        (er.LEAVING, "pod llama-1-leader-0 is being deleted with the rest of gang 1"),
    ],
)
def test_the_responder_completes_once_the_pod_has_left(where: str, said: str) -> None:
    out = plan(gangs(4), (asking(1, where=where, restarts="0"),))
    assert moved(out) == []
    entry = reported(out)["pod-1-llama-1-leader-0"]
    assert entry == {
        "name": RESPONDER,
        "heartbeatTime": NOW,
        "message": said,
        "completionTime": NOW,
    }
    assert not out.requeue_after


def test_heartbeats_are_paced() -> None:
    message = "gang 1 waits for maxUnavailable to move whole"
    cliques = gangs(4)
    cliques[0:2] = [clique(0, "leader", ready=False), clique(0, "worker", replicas=2, ready=False)]
    recent = asking(1, heartbeat="2026-11-22T07:59:50Z", message=message)
    out = plan(cliques, (recent,))
    assert moved(out) == []
    assert reported(out) == {}  # said 10 s ago, unchanged
    assert out.requeue_after == drain.WAIT_REQUEUE
    quiet = er.reports(er.View(True, (recent,)), cliqueset(replicas=4), NOW, waiting=[1])
    assert quiet.patches == [] and quiet.requeue_after == er.HEARTBEAT_EVERY - 10
    stale = asking(1, heartbeat="2026-11-22T07:58:59Z", message=message)
    out = plan(cliques, (stale,))
    assert reported(out)["pod-1-llama-1-leader-0"]["heartbeatTime"] == NOW


def test_a_set_that_does_not_move_gangs_hands_the_eviction_on() -> None:
    cqs = with_drain(
        cliqueset(replicas=4), policy=DrainPolicy.NONE, hold_evictions=EvictionHold.NONE
    )
    out = plan(gangs(4), (asking(1),), cqs=cqs)
    assert moved(out) == []
    entry = reported(out)["pod-1-llama-1-leader-0"]
    assert "completionTime" in entry and "left to the next responder" in entry["message"]


def test_nothing_where_evictions_are_not_served() -> None:
    out = plan(gangs(4), (asking(1),), served=False)
    assert moved(out) == [] and reported(out) == {}


def test_merged_keeps_drained_nodes_and_adds_requested_gangs() -> None:
    stuck = drain.Stuck({2: ("n1",)}, {"n1": "cordoned"})
    both = er.merged(stuck, {1: ("r",), 2: ("s",)}, {3: ("t",)})
    assert both.gangs == {1: (), 2: ("n1",)}  # gang 3 moves already: not again
    assert both.requested == {1: ("r",), 2: ("s",), 3: ("t",)}
    assert er.merged(stuck, {}) is stuck


# -- the pods that name the responder ------------------------------------------------------


def test_pods_outside_pod_groups_name_the_responder_without_changing_their_hash() -> None:
    c = clique(0, "leader")
    plain = bodies.pod_body(c, 0, "h1", 1)
    named = bodies.pod_body(c, 0, "h1", 1, responder=True)
    assert "evictionResponders" not in plain["spec"]
    assert named["spec"]["evictionResponders"] == [
        {"name": RESPONDER, "priority": RESPONDER_PRIORITY}
    ]
    assert RESPONDER_PRIORITY == 10000  # the managing controller's, as the API asks
    # the same pod otherwise: the template hash is the template's, which does not change
    assert {k: v for k, v in named["spec"].items() if k != "evictionResponders"} == plain["spec"]
    assert named["metadata"] == plain["metadata"]
    grouped = clique(0, "leader", annotations={labels.ANNOTATION_POD_GROUP: "llama-0"})
    in_group = bodies.pod_body(grouped, 0, "h1", 1, responder=True)
    assert "evictionResponders" not in in_group["spec"]  # the API refuses them there


def test_a_template_with_responders_keeps_them_and_ours_once() -> None:
    c = clique(0, "leader")
    template = dict(c.spec.template)
    theirs = {"name": "example.com/checkpointer", "priority": 20000}
    template["spec"] = {**template["spec"], "evictionResponders": [theirs]}
    c = msgspec.structs.replace(c, spec=msgspec.structs.replace(c.spec, template=template))
    got = bodies.pod_body(c, 0, "h1", 1, responder=True)["spec"]["evictionResponders"]
    assert got == [theirs, {"name": RESPONDER, "priority": RESPONDER_PRIORITY}]


# -- informers -----------------------------------------------------------------------------


def a_pod(name: str, *, uid: str = "pod-uid", deleting: bool = False) -> Pod:
    return Pod(
        metadata=ObjectMeta(
            name=name,
            namespace="ns",
            uid=uid,
            labels={labels.LABEL_CLIQUESET: "llama", labels.LABEL_GANG_INDEX: "1"},
            annotations={labels.ANNOTATION_GANG_RESTARTS: "2"},
            owner_references=[
                OwnerReference(
                    api_version="cliques.dev/v1alpha1",
                    kind="Clique",
                    name="llama-1-leader",
                    uid="uid-c",
                    controller=True,
                )
            ],
            deletion_timestamp=NOW if deleting else None,
        ),
        spec=PodSpec(node_name="n1"),
    )


def informers() -> tuple[er.Informers, Any, Any]:
    from cliques.kube.informer import Informer
    from cliques.kube.resources import PODS

    client: Any = None
    evictions: Informer[Eviction] = Informer(
        client, EVICTIONS, Eviction, indexers={"target": er.by_target}
    )
    pods: Informer[Pod] = Informer(client, PODS, Pod)
    return er.Informers(evictions, pods), evictions, pods


def test_the_view_follows_the_target_pod_until_it_is_gone() -> None:
    feature, evictions, pods = informers()
    evictions.store.upsert(made())
    cqs = cliqueset(replicas=4)
    assert feature.view(cqs).targets == ()  # its pod is not (yet) one of the process's
    pods.store.upsert(a_pod("llama-1-leader-0"))
    (live,) = feature.view(cqs).targets
    assert (live.where, live.gang, live.restarts, live.clique_uid) == (er.LIVE, 1, "2", "uid-c")
    assert live.requests == ("drain-llama",) and live.heartbeat == "2026-11-28T14:33:24Z"
    pods.store.upsert(a_pod("llama-1-leader-0", deleting=True))
    assert feature.view(cqs).targets[0].where == er.LEAVING
    pods.store.upsert(a_pod("llama-1-leader-0", uid="new-uid"))  # made again: not the target
    assert feature.view(cqs).targets[0].where == er.GONE
    pods.store.remove("ns/llama-1-leader-0")
    assert feature.view(cqs).targets[0].where == er.GONE  # still the set's (seen)
    other = msgspec.structs.replace(
        cqs, metadata=msgspec.structs.replace(cqs.metadata, name="other")
    )
    assert feature.view(other).targets == ()


def test_a_completed_eviction_is_forgotten_and_leaves_the_view() -> None:
    feature, evictions, pods = informers()
    pods.store.upsert(a_pod("llama-1-leader-0"))
    evictions.store.upsert(made())
    assert feature.set_of(made()) == "ns/llama"
    done = made(responders=[{"name": RESPONDER, "completionTime": NOW}])
    evictions.store.upsert(done)
    feature._on_eviction("MODIFIED", made(), done)
    assert feature.seen == {}
    assert feature.view(cliqueset(replicas=4)).targets == ()


def test_an_eviction_and_its_pod_wake_the_pods_set() -> None:
    from cliques.controllers.base.revision import Hasher
    from cliques.controllers.cliqueset.controller import CliqueSetController, SetInformers
    from cliques.kube import store
    from cliques.kube.expectations import Expectations
    from cliques.kube.informer import Informer
    from cliques.kube.resources import CLIQUESETS, SERVICES

    from .test_controller_forget import Quiet
    from .test_gang_drain import Recorded

    client: Any = None
    owned = {"controller": store.by_controller}
    feature, evictions, pods = informers()
    sets = SetInformers(
        Informer(client, CLIQUESETS, CliqueSet),
        Informer(client, CLIQUES, Any, indexers=owned),  # type: ignore[arg-type]
        Informer(client, SERVICES, Any, indexers=owned),  # type: ignore[arg-type]
        evictions=feature,
    )
    exp = Expectations("cliqueset")
    ctl = CliqueSetController(sets, Quiet(client, exp, None), exp, Hasher())
    queue = Recorded()
    ctl.queue = queue  # type: ignore[assignment]
    pod = a_pod("llama-1-leader-0")
    pods.store.upsert(pod)
    evictions.store.upsert(made())
    ctl._on_eviction("ADDED", None, made())
    assert queue.keys == ["ns/llama"]
    inactive = made(targetResponders=[{"name": RESPONDER, "priority": 1, "state": "Inactive"}])
    ctl._on_eviction("MODIFIED", inactive, inactive)  # not ours to answer: no wake-up
    assert queue.keys == ["ns/llama"]
    pods.store.remove("ns/llama-1-leader-0")
    ctl._on_eviction_target("DELETED", pod, pod)  # the target went: report it
    assert queue.keys == ["ns/llama", "ns/llama"]
    ctl._on_eviction_target("MODIFIED", a_pod("other-0"), a_pod("other-0"))
    assert queue.keys == ["ns/llama", "ns/llama"]


# -- the executor --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "raised"),
    [(404, False), (422, False), (403, True), (500, True)],
    ids=["gone", "no-longer-active", "forbidden", "server-error"],
)
def test_a_report_to_an_eviction_that_moved_on_is_done(status: int, raised: bool) -> None:
    import asyncio

    from cliques.controllers.base.actions import Plan
    from cliques.controllers.base.executor import ExecutionError, Executor
    from cliques.kube.events import ObjectRef
    from cliques.kube.expectations import Expectations

    from .test_replica_failure import RefusingPatches, api_error

    said = er.reports(er.View(True, (asking(1, where=er.GONE),)), cliqueset(replicas=4), NOW)
    (report,) = said.patches
    assert report.moot_if_stale and report.status_neutral
    client = RefusingPatches(api_error(status))
    executor = Executor(client, Expectations("test"), None)  # type: ignore[arg-type]
    ref = ObjectRef("cliques.dev/v1alpha1", "CliqueSet", "ns", "llama", "uid")
    if raised:
        with pytest.raises(ExecutionError):
            asyncio.run(executor.execute(Plan(patches=[report]), ref))
    else:
        asyncio.run(executor.execute(Plan(patches=[report]), ref))
    # any other patch still fails on a 404
    with pytest.raises(ExecutionError):
        asyncio.run(executor.execute(Plan(patches=[Patch(CLIQUES, "c", {})]), ref))
