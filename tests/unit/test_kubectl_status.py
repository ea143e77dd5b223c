"""`kubectl cliques status`, pure: the tree of a CliqueSet and why each gang is not whole,
from fixture objects decoded with the operator's own API types, and its text (100 columns)
and JSON renderings."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.pod import Pod
from cliques.kubectl import render, status
from cliques.kubectl.objects import ResourceClaim

NOW = "2026-11-22T08:00:00Z"
SCHEDULER = (
    "0/4 nodes are available: 4 Insufficient cpu. preemption: 0/4 nodes are available: "
    "4 No preemption victims found for incoming pod."
)


def _set(replicas: int = 2, **spec: Any) -> dict[str, Any]:
    tmpl = {"spec": {"containers": [{"name": "main", "image": "vllm:1"}]}}
    return {
        "metadata": {"name": "llama", "namespace": "ns", "uid": "u1", "generation": 1},
        "spec": {
            "replicas": replicas,
            "template": {
                "cliques": [
                    {"name": "leader", "replicas": 1, "template": tmpl},
                    {"name": "worker", "replicas": 2, "template": tmpl},
                ]
            },
            **spec,
        },
        "status": {"observedGeneration": 1, "replicas": replicas, "conditions": []},
    }


def _clique(gang: int, role: str, ready: bool = True, **extra: Any) -> dict[str, Any]:
    replicas = 1 if role == "leader" else 2
    conditions = [
        {
            "type": "Ready",
            "status": "True" if ready else "False",
            "reason": "MinAvailable" if ready else "Starting",
            "message": f"{replicas if ready else 0}/{replicas} pods ready",
            "lastTransitionTime": NOW,
        },
        *extra.pop("conditions", []),
    ]
    return {
        "metadata": {
            "name": f"llama-{gang}-{role}",
            "namespace": "ns",
            "labels": {
                labels.LABEL_CLIQUESET: "llama",
                labels.LABEL_GANG_INDEX: str(gang),
                labels.LABEL_CLIQUE: role,
                labels.LABEL_TEMPLATE_HASH: "h1",
            },
            "annotations": extra.pop("annotations", {}),
        },
        "spec": {
            "cliqueName": role,
            "gangIndex": gang,
            "replicas": replicas,
            "template": {"spec": {"containers": [{"name": "main", "image": "vllm:1"}]}},
        },
        "status": {"conditions": conditions},
    }


def _pod(clique: str, index: int, ready: bool = True, **extra: Any) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    conditions += extra.pop("conditions", [])
    return {
        "metadata": {
            "name": f"{clique}-{index}",
            "namespace": "ns",
            "labels": {labels.LABEL_POD_INDEX: str(index)},
            "annotations": extra.pop("annotations", {}),
            "ownerReferences": [
                {"apiVersion": labels.API_VERSION, "kind": "Clique", "name": clique, "uid": "c"}
            ],
            **extra.pop("metadata", {}),
        },
        "spec": {"nodeName": "" if not ready else "node-1", **extra.pop("spec", {})},
        "status": {"phase": "Running" if ready else "Pending", "conditions": conditions, **extra},
    }


def _healthy_gang(gang: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    cliques = [_clique(gang, "leader"), _clique(gang, "worker")]
    pods = [_pod(f"llama-{gang}-leader", 0)] + [_pod(f"llama-{gang}-worker", i) for i in (0, 1)]
    return cliques, pods


def _build(
    cqs: dict[str, Any],
    cliques: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    claims: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> status.Status:
    return status.build(
        status.Inputs(
            msgspec.convert(cqs, CliqueSet),
            [msgspec.convert(c, Clique) for c in cliques],
            [msgspec.convert(p, Pod) for p in pods],
            [msgspec.convert(c, ResourceClaim) for c in claims],
            now=NOW,
        )
    )


def _broken_gang_1(
    *, clique: dict[str, Any] | None = None, **pod: Any
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Gang 0 healthy; gang 1's leader ready, its worker not, its pods as `pod` says."""
    cliques, pods = _healthy_gang(0)
    cliques += [_clique(1, "leader"), clique or _clique(1, "worker", ready=False)]
    pods += [_pod("llama-1-leader", 0)]
    pods += [_pod("llama-1-worker", i, ready=False, **json.loads(json.dumps(pod))) for i in (0, 1)]
    return cliques, pods


def _why(st: status.Status, gang: int) -> list[status.Why]:
    return list(st.gangs[gang].why)


def test_a_whole_set_is_a_tree_with_no_reasons() -> None:
    c0, p0 = _healthy_gang(0)
    c1, p1 = _healthy_gang(1)
    st = _build(_set(), c1 + c0, list(reversed(p0 + p1)))
    assert [g.index for g in st.gangs] == [0, 1]
    assert all(g.whole and g.why == () for g in st.gangs)
    assert st.whole == 2
    gang = st.gangs[0]
    assert [c.name for c in gang.cliques] == ["llama-0-leader", "llama-0-worker"]
    assert [p.name for p in gang.cliques[1].pods] == ["llama-0-worker-0", "llama-0-worker-1"]
    assert gang.cliques[1].ready_pods == 2


def test_the_schedulers_message_is_quoted_once_for_the_pods_it_is_about() -> None:
    unschedulable = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": SCHEDULER,
    }
    cliques, pods = _broken_gang_1(conditions=[unschedulable])
    st = _build(_set(), cliques, pods)
    assert st.gangs[0].whole and not st.gangs[1].whole
    (why,) = _why(st, 1)
    assert why.kind == status.UNSCHEDULABLE
    assert why.message == f'the scheduler cannot place 2 pods: "{SCHEDULER}"'
    assert why.objects == ("llama-1-worker-0", "llama-1-worker-1")
    assert [p.state for p in st.gangs[1].cliques[1].pods] == ["Unschedulable"] * 2


@pytest.mark.parametrize(
    "reason",
    ["ErrImagePull", "ImagePullBackOff", "CrashLoopBackOff", "CreateContainerConfigError"],
)
def test_containers_that_wait_say_the_kubelets_reason_and_message(reason: str) -> None:
    waiting = {"reason": reason, "message": f'{reason} for "vllm:nope"'}
    statuses = [{"name": "main", "state": {"waiting": waiting}}]
    cliques, pods = _broken_gang_1(containerStatuses=statuses)
    (why,) = _why(_build(_set(), cliques, pods), 1)
    assert why.kind == status.CONTAINERS
    assert why.message == f'{reason} in 2 pods: "{reason} for "vllm:nope""'
    assert why.objects == ("llama-1-worker-0", "llama-1-worker-1")


def test_a_container_being_created_is_no_reason() -> None:
    waiting = {"reason": "ContainerCreating"}
    statuses = [{"name": "main", "state": {"waiting": waiting}}]
    cliques, pods = _broken_gang_1(containerStatuses=statuses)
    (why,) = _why(_build(_set(), cliques, pods), 1)
    assert why.kind == status.STARTING  # what the Clique says of itself
    assert why.message == "llama-1-worker: Starting: 0/2 pods ready"


def test_kueue_admission_from_the_sets_status_and_from_the_pods_gate() -> None:
    gate = {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]}
    cqs = _set()
    cqs["status"]["queue"] = {
        "name": "lq",
        "gangs": [
            {"gang": 1, "state": "Queued", "reason": "Pending", "message": "insufficient quota"}
        ],
    }
    cliques, pods = _broken_gang_1(spec=gate)
    (why,) = _why(_build(cqs, cliques, pods), 1)
    assert why.kind == status.KUEUE
    assert why.message == 'Kueue: queued in queue lq (Pending): "insufficient quota"'
    assert why.objects == ("llama-1-worker-0", "llama-1-worker-1")
    # without the set's word for it, the gate alone says so
    (why,) = _why(_build(_set(), cliques, pods), 1)
    assert why.message.startswith("2 pod(s) wait for Kueue to admit the gang")
    assert [p.state for p in _build(_set(), cliques, pods).gangs[1].cliques[1].pods] == [
        "SchedulingGated"
    ] * 2


def test_another_scheduling_gate_is_named() -> None:
    cliques, pods = _broken_gang_1(spec={"schedulingGates": [{"name": "example.com/hold"}]})
    (why,) = _why(_build(_set(), cliques, pods), 1)
    assert (why.kind, why.message) == (
        status.GATED,
        "2 pod(s) held by the scheduling gate example.com/hold",
    )


def test_claims_not_allocated_named_by_the_template_or_owned_by_the_pods() -> None:
    cliques, pods = _broken_gang_1()
    worker = cliques[-1]
    worker["spec"]["template"]["metadata"] = {
        "annotations": {labels.ANNOTATION_RESOURCE_CLAIMS: '[{"name":"gpu"}]'}
    }
    worker["spec"]["template"]["spec"]["resourceClaims"] = [
        {"name": "gpu", "resourceClaimName": "llama-1-gpu-abc"}
    ]
    owned = {"kind": "Pod", "name": "llama-1-worker-0", "apiVersion": "v1", "uid": "p"}
    claims: list[dict[str, Any]] = [
        {"metadata": {"name": "llama-1-gpu-abc"}},
        {"metadata": {"name": "llama-1-worker-0-nic", "ownerReferences": [owned]}},
        {"metadata": {"name": "llama-0-gpu-abc"}},  # another gang's
        {"metadata": {"name": "ready", "ownerReferences": [owned]}, "status": {"allocation": {}}},
    ]
    (why,) = _why(_build(_set(), cliques, pods, claims), 1)
    assert why.kind == status.CLAIMS
    assert why.objects == ("llama-1-gpu-abc", "llama-1-worker-0-nic")


def test_a_closed_start_gate_says_what_it_waits_for() -> None:
    closed = {
        labels.ANNOTATION_START_GATE: "closed",
        labels.ANNOTATION_STARTS_AFTER: "llama-1-leader",
    }
    cliques, pods = _broken_gang_1(annotations=closed)
    for p in pods[-2:]:
        p["status"]["phase"] = "Pending"
        p["spec"]["nodeName"] = "node-2"
    st = _build(_set(), cliques, pods)
    (why,) = _why(st, 1)
    assert why.kind == status.START_GATE
    assert why.message == ("start gate closed on 2 pod(s): they start once llama-1-leader is Ready")
    assert st.gangs[1].cliques[1].pods[0].state == "StartGateClosed"


def test_a_clique_waiting_for_its_dependencies_says_so() -> None:
    started = {
        "type": "Started",
        "status": "False",
        "reason": "WaitingForDependencies",
        "message": "waiting for llama-1-leader to be Ready",
        "lastTransitionTime": NOW,
    }
    clique = _clique(1, "worker", ready=False, conditions=[started])
    cliques, pods = _broken_gang_1(clique=clique)
    pods = [p for p in pods if not p["metadata"]["name"].startswith("llama-1-worker")]
    (why,) = _why(_build(_set(), cliques, pods), 1)
    assert (why.kind, why.message) == (
        status.START_ORDER,
        "llama-1-worker: waiting for llama-1-leader to be Ready",
    )


def test_pod_backoff_and_refused_writes_come_from_the_cliques_conditions() -> None:
    conds = [
        {
            "type": "PodBackOff",
            "status": "True",
            "reason": "PodsKeepFinishing",
            "message": "pods that keep finishing at index(es) 1 are replaced after a back-off",
            "lastTransitionTime": NOW,
        },
        {
            "type": "ReplicaFailure",
            "status": "True",
            "reason": "FailedCreate",
            "message": "pods is forbidden: exceeded quota",
            "lastTransitionTime": NOW,
        },
    ]
    cliques, pods = _broken_gang_1(clique=_clique(1, "worker", ready=False, conditions=conds))
    kinds = [(w.kind, w.message) for w in _why(_build(_set(), cliques, pods), 1)]
    assert kinds == [
        (status.POD_BACKOFF, "llama-1-worker: " + conds[0]["message"]),
        (status.REPLICA_FAILURE, "llama-1-worker: pods is forbidden: exceeded quota"),
    ]


POLICY = {
    "restartPolicy": "RecreateGang",
    "minAvailableBreachedSeconds": 30,
    "maxGangRestarts": 3,
    "restartBackoff": {"initialSeconds": 10, "maxSeconds": 300},
}


def test_a_breached_gang_is_recreated_after_its_window_and_restart_backoff() -> None:
    marks = {labels.ANNOTATION_BREACH_SINCE: "2026-11-22T07:59:50Z"}
    marks[labels.ANNOTATION_GANG_RESTARTS] = "1"
    cliques, pods = _broken_gang_1(clique=_clique(1, "worker", ready=False, annotations=marks))
    cliques[-2]["metadata"]["annotations"] = dict(marks)
    (why,) = _why(_build(_set(failurePolicy=POLICY), cliques, pods), 1)
    assert why.kind == status.RESTART_BACKOFF
    # 30 s window + 20 s back-off (10 s doubled for one restart) after 07:59:50
    assert why.message == (
        "below minAvailable since 2026-11-22T07:59:50Z; recreated whole at "
        "2026-11-22T08:00:40Z (in 40s), after a restart back-off of 20s "
        "(restart 2 of at most 3)"
    )
    assert why.objects == ("llama-1-leader", "llama-1-worker")


def test_a_gang_out_of_restarts_is_failed() -> None:
    marks = {
        labels.ANNOTATION_BREACH_SINCE: "2026-11-22T07:00:00Z",
        labels.ANNOTATION_GANG_RESTARTS: "3",
    }
    cliques, pods = _broken_gang_1(clique=_clique(1, "worker", ready=False, annotations=marks))
    cliques[-2]["metadata"]["annotations"] = dict(marks)
    (why,) = _why(_build(_set(failurePolicy=POLICY), cliques, pods), 1)
    assert why.kind == status.GANG_FAILED
    assert "maxGangRestarts (3) reached" in why.message


def test_a_drained_pod_is_being_moved() -> None:
    evicted = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting",
    }
    cliques, pods = _broken_gang_1()
    pods[-1]["metadata"]["deletionTimestamp"] = NOW
    pods[-1]["status"]["conditions"].append(evicted)
    pods[-2]["metadata"]["deletionTimestamp"] = NOW
    why = _why(_build(_set(), cliques, pods), 1)
    assert [(w.kind, w.objects) for w in why] == [
        (status.MOVING, ("llama-1-worker-1",)),
        (status.TERMINATING, ("llama-1-worker-0",)),
    ]
    assert why[0].message == (
        "llama-1-worker-1 is being moved: evicted (a node drain or another eviction): "
        '"Eviction API: evicting"'
    )


@pytest.mark.parametrize(
    ("moved_at", "held"),
    [("2026-11-22T07:59:55Z", "held back 10s more"), ("2026-11-22T07:50:00Z", None)],
    ids=["holding", "making"],
)
def test_a_gang_the_operator_moves_off_a_drained_node_says_so(
    moved_at: str, held: str | None
) -> None:
    from cliques.controllers.features import drain

    marks, _ = drain.move_annotations(
        {"worker": msgspec.convert(_clique(1, "worker"), Clique)}, moved_at
    )["llama-1-worker"]
    cliques, pods = _broken_gang_1(clique=_clique(1, "worker", ready=False, annotations=marks))
    why = _why(_build(_set(), cliques, pods), 1)
    assert why[0].kind == status.DRAIN_MOVE
    assert why[0].message.startswith(
        f"the operator is moving this gang whole off a cordoned or tainted node (since {moved_at})"
    )
    assert (held is not None and held in why[0].message) or "held back" not in why[0].message
    # a later crash restart of the same gang is no move
    later = dict(marks, **{labels.ANNOTATION_GANG_RESTARTS: "2"})
    cliques, pods = _broken_gang_1(clique=_clique(1, "worker", ready=False, annotations=later))
    assert all(w.kind != status.DRAIN_MOVE for w in _why(_build(_set(), cliques, pods), 1))


def test_missing_cliques_and_gangs_beyond_replicas() -> None:
    c0, p0 = _healthy_gang(0)
    c2, p2 = _healthy_gang(2)
    st = _build(_set(replicas=2), c0[:1] + c2, p0[:1] + p2)
    assert [(g.index, g.whole) for g in st.gangs] == [(0, False), (1, False), (2, False)]
    assert st.gangs[0].missing == ("worker",)
    assert [w.message for w in st.gangs[0].why] == ["no Clique yet for clique(s) worker"]
    assert st.gangs[1].why[0].message == "no Cliques yet: the operator has not created this gang"
    assert st.gangs[2].why[0].kind == status.REMOVING


def test_the_sets_conditions_that_are_not_as_they_should_be() -> None:
    cqs = _set()
    cqs["status"]["conditions"] = [
        {"type": t, "status": s, "reason": r, "message": m, "lastTransitionTime": NOW}
        for t, s, r, m in (
            ("Available", "False", "GangsUnavailable", "1/2 gangs available"),
            ("Degraded", "True", "BelowMinAvailable", "below minAvailable: llama-1-worker"),
            ("GangScheduling", "False", "GangSchedulingDisabled", "backend None"),
            ("Admitted", "True", "AllGangsAdmitted", "all"),
        )
    ]
    c0, p0 = _healthy_gang(0)
    st = _build(cqs, c0, p0)
    assert [w.message for w in st.why] == [
        "Degraded=True BelowMinAvailable: below minAvailable: llama-1-worker"
    ]
    del cqs["status"]
    assert [w.message for w in _build(cqs, c0, p0).why] == [
        "no status yet: is the operator running?"
    ]


def _large() -> status.Status:
    """Fifty gangs of long names, every one with a long scheduler message."""
    name = "a-very-long-cliqueset-name-that-is-still-valid-x"
    cqs = _set(replicas=50)
    cqs["metadata"]["name"] = name
    cqs["spec"]["template"]["cliques"][1]["name"] = "prefill-workers-long"
    cliques, pods = [], []
    message = SCHEDULER * 6
    for g in range(50):
        for role in ("leader", "prefill-workers-long"):
            c = _clique(g, role, ready=False)
            c["metadata"]["name"] = f"{name}-{g}-{role}"
            c["spec"]["cliqueName"] = role
            cliques.append(c)
            for i in range(c["spec"]["replicas"]):
                p = _pod(
                    f"{name}-{g}-{role}",
                    i,
                    ready=False,
                    conditions=[
                        {
                            "type": "PodScheduled",
                            "status": "False",
                            "reason": "Unschedulable",
                            "message": message + str(i),
                        }
                    ],
                )
                p["spec"]["nodeName"] = "kwok-node-with-a-long-name-" + "x" * 40
                pods.append(p)
    cqs["status"]["conditions"] = [
        {
            "type": "Degraded",
            "status": "True",
            "reason": "BelowMinAvailable",
            "message": message,
            "lastTransitionTime": NOW,
        }
    ]
    return _build(cqs, cliques, pods)


def test_every_line_of_text_fits_100_columns() -> None:
    st = _large()
    lines = render.status_text(st)
    assert len(lines) > 50 * 6
    too_long = [line for line in lines if len(line) > render.WIDTH]
    assert too_long == []
    # the scheduler's words are there, cut after a few lines with "..."
    whys = [i for i, line in enumerate(lines) if line.startswith("  why: the scheduler")]
    # one per distinct message: pods 0 (leader and worker) share one, pod 1 has its own
    assert len(whys) == 50 * 2
    first = whys[0]
    assert lines[first].startswith('  why: the scheduler cannot place 2 pods: "0/4 nodes are')
    assert lines[first + render.WHY_LINES - 1].endswith(" ...")
    assert lines[first + render.WHY_LINES].startswith("  why: ")


def test_json_holds_the_tree_and_every_message_whole() -> None:
    st = _large()
    text = render.dumps(render.status_json(st))
    assert text == render.dumps(render.status_json(_large()))  # stable
    doc = json.loads(text)
    assert doc["cliqueSet"]["name"].startswith("a-very-long")
    assert doc["cliqueSet"]["whole"] == 0
    assert len(doc["gangs"]) == 50
    gang = doc["gangs"][7]
    assert gang["index"] == 7 and gang["whole"] is False
    assert [c["clique"] for c in gang["cliques"]] == ["leader", "prefill-workers-long"]
    pods = gang["cliques"][1]["pods"]
    assert [p["state"] for p in pods] == ["Unschedulable", "Unschedulable"]
    assert gang["why"][0]["kind"] == "Unschedulable"
    assert gang["why"][0]["message"].endswith(SCHEDULER * 6 + '0"')  # never cut
    assert doc["why"][0]["kind"] == "Condition"


def test_a_reason_wraps_under_itself() -> None:
    lines = render.wrap("  why: ", "word " * 60)
    assert 1 < len(lines) <= render.WHY_LINES
    assert all(line.startswith("       word") for line in lines[1:])
    assert render.wrap("  why: ", "x" * 1000)[-1].endswith(" ...")


def test_pods_that_cannot_fit_come_before_their_pod_group() -> None:
    def scheduled(message: str) -> list[dict[str, Any]]:
        return [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": m}
            for m in [message]
        ]

    cliques, pods = _broken_gang_1()
    pods[-3]["status"]["conditions"] += scheduled("pod group is unschedulable")
    pods[-3]["status"]["phase"] = "Pending"
    pods[-1]["status"]["conditions"] += scheduled(SCHEDULER)
    why = _why(_build(_set(), cliques, pods), 1)
    assert [w.objects for w in why] == [("llama-1-worker-1",), ("llama-1-leader-0",)]
