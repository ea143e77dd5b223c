"""`kubectl cliques status` (pure): a CliqueSet as a tree, gangs -> Cliques -> pods, and for
each gang that is not whole, why.

`build` reads only decoded objects (the set, its Cliques, its pods, the ResourceClaims of its
namespace) and the time; `render` prints what it returns. A gang is whole when it has a
Clique for every clique of the template and each of them is Ready (the Clique's own
condition, which counts only the pods of its current epoch; its ready pods against
`minAvailable` where it has no status yet). A gang that is not whole gets its reasons,
each a `Why`, in the order a person looks for them:

- its Cliques are missing (not created yet), or it is beyond `spec.replicas` (going);
- the operator is moving it whole off a cordoned or tainted node (`nodeDrain`: its current
  epoch began with the move), its new pods held back for a few seconds so that
  `kubectl drain` finds their names free;
- its pods are being moved: deleted with a `DisruptionTarget` condition (a drain's
  eviction, a taint, a preemption), or simply terminating;
- Kueue has not admitted it (the set's `status.queue`), or its pods still carry Kueue's
  admission gate, or another scheduling gate;
- the scheduler cannot place its pods: the scheduler's own message, quoted, once per
  distinct message;
- ResourceClaims its pods use are not allocated;
- containers wait for what does not come by itself (`ErrImagePull`, `ImagePullBackOff`,
  `CrashLoopBackOff`, `CreateContainerConfigError`, ...), with the kubelet's message;
- its start order holds it: pods whose start gate is closed until the Cliques they start
  after are Ready, or a Clique that waits for them (`Started=False`);
- pods that keep finishing are replaced after a back-off (`PodBackOff`), or the API server
  refuses the Clique's writes (`ReplicaFailure`);
- `failurePolicy: RecreateGang`: the gang is below minAvailable and is recreated whole once
  its breach window and restart back-off have passed, or has used up `maxGangRestarts`;
- otherwise what its first Clique that is not Ready says (its pods are starting).

The set's own conditions that are not as they should be (Available=False, Degraded=True,
Admitted=False, ...) are the set's reasons.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from cliques.api import labels
from cliques.api.clique import CONDITION_READY, CONDITION_STARTED, Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.meta import Condition, find_condition, format_time, parse_time
from cliques.api.pod import Pod
from cliques.api.policies import GangRestartPolicy
from cliques.controllers.features import (
    claims,
    drain,
    gang_failures,
    kueue,
    same_nodes,
    start_gate,
    workload,
)
from cliques.kubectl.objects import ResourceClaim

# The kinds of reasons, as they appear in `-o json` (`why[].kind`).
MISSING: Final = "CliquesMissing"
REMOVING: Final = "Removing"
DRAIN_MOVE: Final = "DrainMove"
MOVING: Final = "Moving"
TERMINATING: Final = "Terminating"
KUEUE: Final = "KueueAdmission"
GATED: Final = "SchedulingGated"
UNSCHEDULABLE: Final = "Unschedulable"
CLAIMS: Final = "ClaimsNotAllocated"
CONTAINERS: Final = "ContainersWaiting"
START_GATE: Final = "StartGate"
START_ORDER: Final = "StartOrder"
POD_BACKOFF: Final = "PodBackOff"
REPLICA_FAILURE: Final = "ReplicaFailure"
RESTART_BACKOFF: Final = "RestartBackOff"
GANG_FAILED: Final = "GangFailed"
STARTING: Final = "Starting"
CONDITION: Final = "Condition"

#: The Clique conditions the Clique planner reports while something holds its pods.
_POD_BACKOFF_CONDITION: Final = "PodBackOff"
_REPLICA_FAILURE_CONDITION: Final = "ReplicaFailure"
#: Container waiting reasons that are a start on its way, not a problem.
_ON_ITS_WAY: Final = frozenset({"", "ContainerCreating", "PodInitializing"})
#: A pod condition the control plane sets on a pod it is about to delete (Kubernetes
#: DisruptionTarget), and Kueue's own for a pod it stops.
_DISRUPTION_CONDITIONS: Final = ("DisruptionTarget", kueue.TERMINATION_TARGET)
_DISRUPTION_WORDS: Final[Mapping[str, str]] = {
    "EvictionByEvictionAPI": "evicted (a node drain or another eviction)",
    "DeletionByTaintManager": "deleted: its node has a NoExecute taint",
    "PreemptionByScheduler": "preempted by the scheduler for a pod of higher priority",
    "TerminationByKubelet": "stopped by the kubelet (node pressure or shutdown)",
}
#: Each set condition's healthy status; a condition in another status is one of the set's
#: reasons. (Progressing is news, not a problem: it is shown when True.)
_HEALTHY: Final[Mapping[str, str]] = {
    "Available": "True",
    "Progressing": "False",
    "Degraded": "False",
    "ReplicaFailure": "False",
    gang_failures.CONDITION_RESTARTING: "False",
    gang_failures.CONDITION_FAILED: "False",
    kueue.CONDITION_ADMITTED: "True",
    claims.CONDITION_CLAIMS: "True",
    "GangScheduling": "True",
}
#: GangScheduling=False for these reasons is what the spec asked for, not a problem.
_GANG_SCHEDULING_FINE: Final = frozenset({workload.REASON_DISABLED})


@dataclass(frozen=True)
class Why:
    """One reason a gang (or the set) is not whole: its kind, a sentence, and the objects
    it is about (pods, Cliques, claims), in order."""

    kind: str
    message: str
    objects: tuple[str, ...] = ()


@dataclass(frozen=True)
class PodNode:
    name: str
    phase: str
    ready: bool
    node: str
    #: what the pod is doing in a word or two: Running, Pending, Unschedulable,
    #: ImagePullBackOff, Gated, GateClosed, Terminating...
    state: str


@dataclass(frozen=True)
class CliqueNode:
    name: str
    role: str
    replicas: int
    min_available: int
    ready_pods: int
    ready: bool
    template_hash: str
    pods: tuple[PodNode, ...] = ()


@dataclass(frozen=True)
class GangNode:
    index: int
    whole: bool
    cliques: tuple[CliqueNode, ...] = ()
    #: clique templates with no Clique in this gang
    missing: tuple[str, ...] = ()
    why: tuple[Why, ...] = ()


@dataclass(frozen=True)
class SetCondition:
    type: str
    status: str
    reason: str
    message: str


@dataclass(frozen=True)
class Status:
    """The whole tree of one CliqueSet."""

    name: str
    namespace: str
    replicas: int
    ready: int
    updated: int
    available: int
    template_hash: str
    conditions: tuple[SetCondition, ...] = ()
    why: tuple[Why, ...] = ()
    gangs: tuple[GangNode, ...] = ()

    @property
    def whole(self) -> int:
        return sum(1 for g in self.gangs if g.whole)


@dataclass(frozen=True)
class Inputs:
    """What `build` reads: the set, its Cliques and pods (any order), the ResourceClaims of
    its namespace (empty when they cannot be read) and the time (RFC 3339)."""

    cliqueset: CliqueSet
    cliques: Sequence[Clique] = ()
    pods: Sequence[Pod] = ()
    claims: Sequence[ResourceClaim] = ()
    now: str = "1970-01-01T00:00:00Z"


def build(inputs: Inputs) -> Status:
    """The tree and the reasons of the module docstring."""
    cqs = inputs.cliqueset
    st = cqs.status
    by_gang: dict[int, list[Clique]] = {}
    for c in inputs.cliques:
        by_gang.setdefault(c.spec.gang_index, []).append(c)
    pods_of = _pods_by_clique(inputs.cliques, inputs.pods)
    roles = [c.name for c in cqs.spec.template.cliques]
    gangs = []
    for index in sorted(set(range(cqs.spec.replicas)) | set(by_gang)):
        members = sorted(by_gang.get(index, []), key=lambda c: c.metadata.name)
        gangs.append(_gang(inputs, index, members, roles, pods_of))
    conditions = tuple(
        SetCondition(c.type, c.status, c.reason, c.message) for c in (st.conditions if st else [])
    )
    return Status(
        name=cqs.metadata.name,
        namespace=cqs.metadata.namespace,
        replicas=cqs.spec.replicas,
        ready=st.ready_replicas if st else 0,
        updated=st.updated_replicas if st else 0,
        available=st.available_replicas if st else 0,
        template_hash=st.template_hash if st else "",
        conditions=conditions,
        why=tuple(_set_why(cqs, conditions)),
        gangs=tuple(gangs),
    )


# --- the tree -------------------------------------------------------------------------------


def _pods_by_clique(cliques: Iterable[Clique], pods: Iterable[Pod]) -> dict[str, list[Pod]]:
    """Each Clique's pods, by its name: a pod's owner, else its name's stem."""
    names = {c.metadata.name for c in cliques}
    out: dict[str, list[Pod]] = {n: [] for n in names}
    for pod in pods:
        owner = next(
            (o.name for o in pod.metadata.owner_references if o.kind == labels.KIND_CLIQUE), ""
        )
        if not owner:
            stem, _, index = pod.metadata.name.rpartition("-")
            owner = stem if index.isdigit() else ""
        if owner in out:
            out[owner].append(pod)
    for group in out.values():
        group.sort(key=_pod_order)
    return out


def _pod_order(pod: Pod) -> tuple[int, str]:
    index = pod.metadata.labels.get(labels.LABEL_POD_INDEX, "")
    return (int(index) if index.isdigit() else 1 << 30, pod.metadata.name)


def _clique_ready(clique: Clique, ready_pods: int) -> bool:
    cond = find_condition(clique.status.conditions, CONDITION_READY) if clique.status else None
    if cond is not None:
        return cond.status == "True"
    return ready_pods >= clique.spec.effective_min_available


def _pod_node(pod: Pod) -> PodNode:
    return PodNode(
        name=pod.metadata.name,
        phase=pod.status.phase or "Pending",
        ready=pod.is_ready,
        node=pod.spec.node_name,
        state=_pod_state(pod),
    )


def _pod_state(pod: Pod) -> str:
    if pod.metadata.deletion_timestamp is not None:
        return "Terminating"
    if pod.spec.scheduling_gates:
        return "SchedulingGated"
    if pod.is_unschedulable:
        return "Unschedulable"
    waiting = _waiting(pod)
    if waiting:
        return waiting[0][0]
    if start_gate.is_closed(pod) and not pod.is_ready:
        return "StartGateClosed"
    if pod.status.phase == "Running" and not pod.is_ready:
        return "NotReady"
    return pod.status.phase or "Pending"


def _waiting(pod: Pod) -> list[tuple[str, str]]:
    """(reason, message) of each container of the pod that waits for what does not come by
    itself."""
    return [
        (s.state.waiting.reason, s.state.waiting.message)
        for s in pod.status.container_statuses
        if s.state.waiting is not None and s.state.waiting.reason not in _ON_ITS_WAY
    ]


def _gang(
    inputs: Inputs,
    index: int,
    members: list[Clique],
    roles: list[str],
    pods_of: Mapping[str, list[Pod]],
) -> GangNode:
    nodes = []
    for c in members:
        pods = pods_of.get(c.metadata.name, [])
        ready_pods = sum(1 for p in pods if p.is_ready)
        nodes.append(
            CliqueNode(
                name=c.metadata.name,
                role=c.spec.clique_name,
                replicas=c.spec.replicas,
                min_available=c.spec.effective_min_available,
                ready_pods=ready_pods,
                ready=_clique_ready(c, ready_pods),
                template_hash=c.metadata.labels.get(labels.LABEL_TEMPLATE_HASH, ""),
                pods=tuple(_pod_node(p) for p in pods),
            )
        )
    present = {c.spec.clique_name for c in members}
    missing = tuple(r for r in roles if r not in present)
    going = index >= inputs.cliqueset.spec.replicas
    whole = not going and not missing and all(n.ready for n in nodes)
    why: tuple[Why, ...] = ()
    if not whole:
        gang_pods = [p for c in members for p in pods_of.get(c.metadata.name, [])]
        why = tuple(_gang_why(inputs, index, members, gang_pods, missing, going, nodes))
    return GangNode(index, whole, tuple(nodes), missing, why)


# --- why a gang is not whole ------------------------------------------------------------------


def _gang_why(
    inputs: Inputs,
    index: int,
    members: list[Clique],
    pods: list[Pod],
    missing: tuple[str, ...],
    going: bool,
    nodes: list[CliqueNode],
) -> list[Why]:
    out: list[Why] = []
    if going:
        out.append(
            Why(REMOVING, f"beyond spec.replicas ({inputs.cliqueset.spec.replicas}): being removed")
        )
    if missing and not going:
        if members:
            message = f"no Clique yet for clique(s) {', '.join(missing)}"
        else:
            message = "no Cliques yet: the operator has not created this gang"
        out.append(Why(MISSING, message, tuple(missing)))
    out += _drain_move(members, inputs.now)
    out += _moving(pods)
    out += _admission(inputs.cliqueset, index, pods)
    out += _unschedulable(pods)
    out += _claims(inputs, index, members, pods)
    out += _containers(pods)
    out += _start_order(members, pods)
    out += _clique_conditions(members)
    out += _restarts(inputs, members)
    if not out:
        out += _starting(members, nodes)
    return out


def _names(pods: Iterable[Pod]) -> tuple[str, ...]:
    return tuple(p.metadata.name for p in pods)


def _drain_move(members: list[Clique], now: str) -> list[Why]:
    """The operator moves the gang off a drained node: a member's current epoch began with
    a move (its restart record is the move's, `same_nodes.closed`)."""
    for clique in members:
        notes = clique.metadata.annotations
        restarts = notes.get(labels.ANNOTATION_GANG_RESTARTS) or "0"
        if notes.get(labels.ANNOTATION_RESTART_NODES) != same_nodes.closed(restarts):
            continue
        since = notes.get(labels.ANNOTATION_MOVED_AT, "")
        message = "the operator is moving this gang whole off a cordoned or tainted node"
        if since:
            message += f" (since {since})"
        held = drain.hold(clique, now)
        if held > 0:
            message += (
                f"; its new pods are held back {held:.0f}s more, so that kubectl drain "
                "finds their names free"
            )
        return [Why(DRAIN_MOVE, message)]
    return []


def _moving(pods: list[Pod]) -> list[Why]:
    """Pods being deleted: moved by a drain, a taint or a preemption (their
    DisruptionTarget condition says which), or simply terminating."""
    out: list[Why] = []
    plain: list[Pod] = []
    for pod in pods:
        if pod.metadata.deletion_timestamp is None:
            continue
        cond = next(
            (
                c
                for c in pod.status.conditions
                if c.type in _DISRUPTION_CONDITIONS and c.status == "True"
            ),
            None,
        )
        if cond is None:
            plain.append(pod)
            continue
        what = _DISRUPTION_WORDS.get(cond.reason, cond.reason or "disrupted")
        message = f"{pod.metadata.name} is being moved: {what}"
        if cond.message:
            message += f': "{cond.message}"'
        out.append(Why(MOVING, message, (pod.metadata.name,)))
    if plain:
        out.append(
            Why(
                TERMINATING,
                f"{len(plain)} pod(s) terminating; they are made again once gone",
                _names(plain),
            )
        )
    return out


def _admission(cqs: CliqueSet, index: int, pods: list[Pod]) -> list[Why]:
    """Kueue's admission of the gang (the set's status.queue, else its pods' gate) and any
    other scheduling gate."""
    out: list[Why] = []
    queue = cqs.status.queue if cqs.status else None
    told = next((g for g in queue.gangs if g.gang == index), None) if queue else None
    gated = [p for p in pods if any(g.name == kueue.GATE for g in p.spec.scheduling_gates)]
    if told is not None:
        message = f"Kueue: {told.state.value.lower()} in queue {queue.name if queue else ''}"
        if told.reason:
            message += f" ({told.reason})"
        if told.message:
            message += f': "{told.message}"'
        out.append(Why(KUEUE, message, _names(gated)))
    elif gated:
        where = f" in queue {queue.name}" if queue else ""
        out.append(
            Why(
                KUEUE,
                f"{len(gated)} pod(s) wait for Kueue to admit the gang{where} "
                f"(scheduling gate {kueue.GATE})",
                _names(gated),
            )
        )
    others: dict[str, list[Pod]] = {}
    for pod in pods:
        for gate in pod.spec.scheduling_gates:
            if gate.name != kueue.GATE:
                others.setdefault(gate.name, []).append(pod)
    for gate_name, held in sorted(others.items()):
        out.append(
            Why(GATED, f"{len(held)} pod(s) held by the scheduling gate {gate_name}", _names(held))
        )
    return out


def _unschedulable(pods: list[Pod]) -> list[Why]:
    """The scheduler's message, quoted, once per distinct message, with the pods it is
    about."""
    by_message: dict[str, list[Pod]] = {}
    for pod in pods:
        if pod.is_unschedulable and pod.metadata.deletion_timestamp is None:
            by_message.setdefault(pod.unschedulable_why.strip(), []).append(pod)
    out = []
    # what the scheduler says of the pods that cannot fit first, then of their pod group
    for message, held in sorted(by_message.items(), key=lambda kv: kv[0].startswith("pod group")):
        who = held[0].metadata.name if len(held) == 1 else f"{len(held)} pods"
        said = f'"{message}"' if message else "no message"
        out.append(Why(UNSCHEDULABLE, f"the scheduler cannot place {who}: {said}", _names(held)))
    return out


def _claims(inputs: Inputs, index: int, members: list[Clique], pods: list[Pod]) -> list[Why]:
    """ResourceClaims the gang's pods use that are not allocated: those the Cliques'
    templates name, and those made for the gang's pods (owned by them)."""
    if not inputs.claims:
        return []
    named = {
        ref.name
        for c in members
        for ref in claims.references(c.spec.template, index)
        if ref.resource.kind == "ResourceClaim"
    }
    pod_names = {p.metadata.name for p in pods}
    waiting = sorted(
        c.metadata.name
        for c in inputs.claims
        if not c.allocated
        and (
            c.metadata.name in named
            or any(o.kind == "Pod" and o.name in pod_names for o in c.metadata.owner_references)
        )
    )
    if not waiting:
        return []
    return [
        Why(
            CLAIMS,
            f"{len(waiting)} ResourceClaim(s) not allocated: {', '.join(waiting)}",
            tuple(waiting),
        )
    ]


def _containers(pods: list[Pod]) -> list[Why]:
    """Containers that wait for what does not come by itself, by reason, with the first
    pod's message."""
    by_reason: dict[str, list[tuple[Pod, str]]] = {}
    for pod in pods:
        if pod.metadata.deletion_timestamp is not None:
            continue
        for reason, message in _waiting(pod)[:1]:
            by_reason.setdefault(reason, []).append((pod, message))
    out = []
    for reason, found in by_reason.items():
        first, message = found[0]
        who = first.metadata.name if len(found) == 1 else f"{len(found)} pods"
        text = f"{reason} in {who}"
        if message:
            text += f': "{message}"'
        out.append(Why(CONTAINERS, text, _names(p for p, _ in found)))
    return out


def _start_order(members: list[Clique], pods: list[Pod]) -> list[Why]:
    """Pods at a closed start gate, by what they start after; Cliques that wait for their
    dependencies before making their pods."""
    out = []
    closed: dict[str, list[Pod]] = {}
    for pod in pods:
        if start_gate.is_closed(pod) and pod.metadata.deletion_timestamp is None:
            after = pod.metadata.annotations.get(labels.ANNOTATION_STARTS_AFTER, "")
            closed.setdefault(after, []).append(pod)
    for after, held in sorted(closed.items()):
        deps = after.replace(",", ", ") or "the Cliques it starts after"
        out.append(
            Why(
                START_GATE,
                f"start gate closed on {len(held)} pod(s): they start once {deps} "
                + ("is" if "," not in after else "are")
                + " Ready",
                _names(held),
            )
        )
    for c in members:
        cond = _condition(c, CONDITION_STARTED)
        if cond is not None and cond.status == "False" and not closed:
            out.append(Why(START_ORDER, f"{c.metadata.name}: {cond.message}", (c.metadata.name,)))
    return out


def _condition(clique: Clique, type_: str) -> Condition | None:
    return find_condition(clique.status.conditions, type_) if clique.status else None


def _clique_conditions(members: list[Clique]) -> list[Why]:
    out = []
    for kind, type_ in (
        (POD_BACKOFF, _POD_BACKOFF_CONDITION),
        (REPLICA_FAILURE, _REPLICA_FAILURE_CONDITION),
    ):
        for c in members:
            cond = _condition(c, type_)
            if cond is not None and cond.status == "True":
                out.append(Why(kind, f"{c.metadata.name}: {cond.message}", (c.metadata.name,)))
    return out


def _restarts(inputs: Inputs, members: list[Clique]) -> list[Why]:
    """`failurePolicy: RecreateGang`: a breached gang's restart, when it falls due (after
    the breach window and the restart back-off), or its restarts used up."""
    policy = inputs.cliqueset.spec.failure_policy
    if policy.restart_policy != GangRestartPolicy.RECREATE_GANG or not members:
        return []
    by_name = {c.metadata.name: c for c in members}
    names = tuple(sorted(by_name))
    marks = [c.metadata.annotations.get(gang_failures.ANNOTATION_BREACH_SINCE, "") for c in members]
    since = min((m for m in marks if m), default="")
    counted = gang_failures.counted_restarts(by_name)
    restarts = gang_failures.restarts_of(by_name)
    if not since:
        if restarts:
            last = max(
                c.metadata.annotations.get(gang_failures.ANNOTATION_LAST_RESTART, "")
                for c in members
            )
            text = f"recreated whole {restarts} time(s)" + (f", last at {last}" if last else "")
            return [Why(RESTART_BACKOFF, text + "; starting again", names)]
        return []
    if counted >= policy.max_gang_restarts:
        return [
            Why(
                GANG_FAILED,
                f"below minAvailable since {since} after {counted} restart(s): "
                f"maxGangRestarts ({policy.max_gang_restarts}) reached, left as it is",
                names,
            )
        ]
    wait = policy.min_available_breached_seconds + gang_failures.backoff(policy, counted)
    start = parse_time(since)
    now = parse_time(inputs.now)
    text = f"below minAvailable since {since}; recreated whole"
    if start is not None:
        due = start + datetime.timedelta(seconds=wait)
        text += f" at {format_time(due)}"
        if now is not None:
            left = (due - now).total_seconds()
            text += f" (in {left:.0f}s)" if left > 0 else " (due; within maxUnavailable)"
    text += (
        f", after a restart back-off of {gang_failures.backoff(policy, counted):.0f}s "
        f"(restart {counted + 1} of at most {policy.max_gang_restarts})"
    )
    return [Why(RESTART_BACKOFF, text, names)]


def _starting(members: list[Clique], nodes: list[CliqueNode]) -> list[Why]:
    """What the first Clique that is not Ready says of itself."""
    for c, n in zip(members, nodes, strict=True):
        if n.ready:
            continue
        cond = _condition(c, CONDITION_READY)
        if cond is not None:
            message = f"{c.metadata.name}: {cond.reason}: {cond.message}"
        else:
            message = f"{c.metadata.name}: {n.ready_pods}/{n.replicas} pods ready (no status yet)"
        return [Why(STARTING, message, (c.metadata.name,))]
    return []


# --- why the set is not as it should be -------------------------------------------------------


def _set_why(cqs: CliqueSet, conditions: Sequence[SetCondition]) -> list[Why]:
    out = []
    if cqs.status is None:
        out.append(Why(CONDITION, "no status yet: is the operator running?"))
    elif cqs.status.observed_generation < cqs.metadata.generation:
        out.append(
            Why(
                CONDITION,
                f"the status is of generation {cqs.status.observed_generation}, the spec is "
                f"at {cqs.metadata.generation}: the operator has not caught up",
            )
        )
    for c in conditions:
        healthy = _HEALTHY.get(c.type)
        if healthy is None or c.status == healthy:
            continue
        if c.type == "GangScheduling" and c.reason in _GANG_SCHEDULING_FINE:
            continue
        if (c.type, c.reason) in (("Available", "GangsUnavailable"), ("Progressing", "Scaling")):
            continue  # the counts and the gangs below say it, one by one
        out.append(Why(CONDITION, f"{c.type}={c.status} {c.reason}: {c.message}"))
    return out
