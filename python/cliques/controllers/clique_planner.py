"""The Clique planner (pure): from a Clique and its pods, the next step and the status.

Rules, in the order they are applied:
1. Pods at index >= replicas are deleted, highest first (scale down); pods that finished
   (Succeeded/Failed) are deleted so they are recreated at their index, once the back-off
   of that index allows (`pod_backoff`: pods that keep finishing are replaced ever more
   slowly; the plan asks to be requeued when the next one is due).
2. Pods whose template-hash label is neither the Clique's hash nor one of its
   `previous-template-hashes` (hashes of the same template under an older hash algorithm)
   are deleted: the CliqueSet controller decided this gang rolls now.
   Pods recording another gang restart count than the Clique (`cliques.dev/gang-restarts`)
   are deleted too: the CliqueSet controller recreates the gang whole (`gang_failures`).
   Pods labelled with a hash the Clique may update in place from (`cliques.dev/update:
   InPlace:...`, `inplace`) are patched to the new images instead, keeping pod, node and
   claims; they count as ready for the new template once they run its images.
3. Pods labelled with a previous hash are re-labelled in place, never recreated.
4. Missing indices in 0..replicas-1 are created (lowest first), unless the Clique has not
   started yet and a clique it starts after is not Ready. A pod being deleted still holds
   its name, so its index is recreated only once it is gone. A Clique with `startGate`
   creates its pods anyway, with their start gates closed, and opens them (a pod patch)
   once the cliques it starts after are Ready (`start_gate`).
5. While expectations are pending (creates/deletes not yet seen in the cache), rules 1, 2
   and 4 are not applied: a stale cache never causes a second create or a wrong delete.

Status: replicas, readyReplicas, updatedReplicas, templateHash, gangRestarts (the gang
restart count it reports for) and the conditions `Started` and `Ready`, `ReplicaFailure`
while the API server refuses the Clique's pod writes (`snap.failure`, see `failures`), and
`PodsUnschedulable` while some of its pods wait for a node, `ContainersWaiting` while
containers of its pods wait for what does not come by itself (ImagePullBackOff, ...).

A status speaks for one *epoch* of the Clique: its template hash and its gang restart
count. Only the pods of that epoch count as ready, and Ready=False says why:

    Starting           not Ready since the epoch began (created, restarted)
    Updating           the first status of a new template
    Resizing           was Ready; its spec grew (replicas, minAvailable) and no ready pod
                       was lost: the new pods are on their way (or wait for room)
    BelowMinAvailable  was Ready and lost ready pods (a crash, an eviction, a node gone);
                       it stays so until Ready again. The only breach: the CliqueSet
                       reports the gang Degraded, and `failurePolicy` may restart it.

A Clique starts (and a Clique it starts after counts as Ready) only for the current
epoch: after a gang restart, start order is kept as on creation.
`progress_only` tells a new status that only reports pods on their way to Ready (the
controller may hold it back briefly) from one that carries news.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cliques.api import labels
from cliques.api.clique import CONDITION_READY, CONDITION_STARTED, Clique, CliqueStatus
from cliques.api.meta import CONDITION_REPLICA_FAILURE, Condition, find_condition, same_marks
from cliques.api.pod import Pod
from cliques.controllers import (
    builders,
    conditions,
    failures,
    inplace,
    kueue,
    pod_backoff,
    start_gate,
)
from cliques.controllers.actions import CREATE_BURST, Create, Delete, Event, Patch, Plan
from cliques.kube.resources import CLIQUES, PODS

REASON_BELOW_MIN = "BelowMinAvailable"
REASON_RESIZING = "Resizing"
REASON_STARTING = "Starting"
REASON_UPDATING = "Updating"
CONDITION_POD_BACKOFF = "PodBackOff"
CONDITION_UNSCHEDULABLE = "PodsUnschedulable"
CONDITION_CONTAINERS_WAITING = "ContainersWaiting"


@dataclass(frozen=True)
class CliqueSnapshot:
    clique: Clique
    pods: list[Pod]
    #: Names of the Cliques this one starts after that are not Ready yet.
    waiting_for: list[str] = field(default_factory=list)
    expectations_satisfied: bool = True
    template_hash: str = ""
    algorithm: int = 1
    now: str = "1970-01-01T00:00:00Z"
    #: the API server's refusal of this Clique's last writes, until a write succeeds
    failure: failures.Failure | None = None
    #: the image of the start gate's init container (`start_gate`)
    gate_image: str = ""


def same_to_planner(old: Pod, new: Pod) -> bool:
    """Whether `plan` would see no difference between two versions of a pod: the same
    metadata marks (`same_marks`), readiness and terminal state, containers (a resize goes
    on to the image patch once the cache shows it) and scheduling gates (Kueue admits).
    (A scheduler binding or a container status detail changes none of these.)"""
    return (
        old.is_ready == new.is_ready
        and old.spec.containers == new.spec.containers
        and old.spec.scheduling_gates == new.spec.scheduling_gates
        and old.is_terminal == new.is_terminal
        and old.is_unschedulable == new.is_unschedulable
        and inplace.settled(old) == inplace.settled(new)
        and inplace.waiting_reasons(old) == inplace.waiting_reasons(new)
        and same_marks(old.metadata, new.metadata)
    )


def _in_place_patch(pod: Pod, template: Mapping[str, Any], patch: list[Any]) -> Patch:
    """The next write of an in-place update of `pod`: its resize when its CPU or memory
    differs from the template's, else `patch` (images, hash label); the resize goes first
    so that a pod carries the new hash only once the server has taken every change."""
    resize = inplace.resize_patch(pod, template)
    if resize is not None:
        return Patch(
            PODS, pod.metadata.name, resize, patch_type="json", reason="InPlaceResize", sub="resize"
        )
    return Patch(PODS, pod.metadata.name, patch, patch_type="json", reason="InPlaceUpdate")


def _restarts(annotations: dict[str, str]) -> str:
    """A gang's restart count as recorded on a Clique or pod ("0" when not recorded)."""
    return annotations.get(labels.ANNOTATION_GANG_RESTARTS) or "0"


def restart_count(clique: Clique) -> int:
    """The gang restart count a Clique records (0 when none or unreadable)."""
    try:
        return int(_restarts(clique.metadata.annotations))
    except ValueError:
        return 0


def status_current(clique: Clique) -> bool:
    """The Clique's status speaks for its current epoch: its generation, its template hash
    and its gang restart count. (A status written before a gang restart says nothing
    about the gang as it is now.)"""
    status = clique.status
    return (
        status is not None
        and status.observed_generation == clique.metadata.generation
        and status.template_hash == clique.metadata.labels.get(labels.LABEL_TEMPLATE_HASH, "")
        and status.gang_restarts == restart_count(clique)
    )


def pod_index(name: str, pod_labels: dict[str, str]) -> int | None:
    """A pod's index: its label, else the number after the last '-' of its name."""
    raw = pod_labels.get(labels.LABEL_POD_INDEX)
    if raw is None:
        raw = name.rpartition("-")[2]
    try:
        value = int(raw)
    except ValueError:
        return None
    return value if value >= 0 else None


def plan(snap: CliqueSnapshot) -> Plan:
    clique = snap.clique
    meta = clique.metadata
    spec = clique.spec
    uid = meta.uid
    desired = snap.template_hash
    previous = {
        h for h in meta.annotations.get(labels.ANNOTATION_PREVIOUS_HASHES, "").split(",") if h
    }
    out = Plan()

    by_index: dict[int, Pod] = {}
    for pod in snap.pods:
        idx = pod_index(pod.metadata.name, pod.metadata.labels)
        if idx is not None:
            by_index[idx] = pod

    restarts = _restarts(meta.annotations)
    in_place_from = set(inplace.from_hashes(clique))
    finished = pod_backoff.parse(meta.annotations.get(labels.ANNOTATION_FINISHED_PODS, ""))
    counts = {i: c for i, c in finished.items() if i < spec.replicas}
    held: dict[int, float] = {}  # finished pods waiting for their back-off: index -> seconds
    deletes: list[Delete] = []
    in_place: list[Patch] = []  # pods updated in place (`inplace`)
    for idx in sorted(by_index, reverse=True):
        pod = by_index[idx]
        if pod.metadata.deletion_timestamp is not None:
            release = kueue.release_patch(pod)
            if release is not None:
                out.patches.append(
                    Patch(
                        PODS, pod.metadata.name, release, patch_type="json", reason="KueueRelease"
                    )
                )
            continue
        pod_hash = pod.metadata.labels.get(labels.LABEL_TEMPLATE_HASH, "")
        reason = ""
        if idx >= spec.replicas:
            reason = "ScaleDown"
        elif pod.is_terminal:
            lived = pod_backoff.age(pod.metadata.creation_timestamp, snap.now)
            wait, in_a_row = pod_backoff.decide(counts.get(idx, 0), lived)
            if wait > 0:
                held[idx] = wait
                continue
            reason = "PodFinished"
            counts[idx] = in_a_row
            if in_a_row > 1:
                out.events.append(
                    Event(
                        "Warning",
                        "BackOff",
                        f"pod {pod.metadata.name} finished ({pod.status.phase}): "
                        f"{in_a_row} pods in a row finished at index {idx}; if the next "
                        f"one finishes too it is replaced {pod_backoff.delay(in_a_row):.0f}s "
                        "after it was created at the earliest",
                    )
                )
        elif _restarts(pod.metadata.annotations) != restarts and pod_hash in in_place_from:
            reason = "GangRestart"
        elif pod_hash in in_place_from:
            patch = inplace.pod_patch(pod, spec.template, desired, snap.algorithm)
            if patch is not None:
                in_place.append(_in_place_patch(pod, spec.template, patch))
                continue
            reason = "TemplateChanged"  # its containers are not the template's
        elif pod_hash != desired and pod_hash not in previous:
            reason = "TemplateChanged"
        elif _restarts(pod.metadata.annotations) != restarts:
            reason = "GangRestart"
        if reason:
            deletes.append(Delete(PODS, pod.metadata.name, pod.metadata.uid, uid, reason))
        elif pod_hash in previous:
            out.patches.append(
                Patch(
                    PODS,
                    pod.metadata.name,
                    {
                        "metadata": {
                            "labels": {labels.LABEL_TEMPLATE_HASH: desired},
                            "annotations": {labels.ANNOTATION_HASH_ALGORITHM: str(snap.algorithm)},
                        }
                    },
                    reason="Relabel",
                )
            )

    status = clique.status or CliqueStatus()
    started_cond = find_condition(status.conditions, CONDITION_STARTED)
    # Started for this epoch, and some pod of the epoch exists: a Clique whose pods of
    # the epoch are all gone (old pods still holding the names after a roll, every pod
    # evicted) waits again for the Cliques it starts after, as on creation.
    started = (
        started_cond is not None
        and started_cond.status == "True"
        and status.template_hash == desired
        and status.gang_restarts == restart_count(clique)
        and any(
            p.metadata.deletion_timestamp is None
            and p.metadata.labels.get(labels.LABEL_TEMPLATE_HASH) == desired
            and _restarts(p.metadata.annotations) == restarts
            for p in by_index.values()
        )
    )
    # Waiting for the Cliques it starts after: hold the pods back, or with a start gate
    # create them (the gang is scheduled whole) and keep their gates closed.
    waiting = bool(snap.waiting_for) and not started
    gate = spec.start_gate and bool(spec.starts_after)
    gated = waiting and not gate
    missing = [i for i in range(spec.replicas) if i not in by_index]

    if snap.expectations_satisfied:
        out.deletes = deletes
        out.patches.extend(in_place)
        if counts != finished:
            value = pod_backoff.encode(counts) or None
            body = {"metadata": {"annotations": {labels.ANNOTATION_FINISHED_PODS: value}}}
            out.patches.append(Patch(CLIQUES, meta.name, body, reason="FinishedPods"))
        if held:
            out.requeue_after = min(held.values())
        if not gated:
            algorithm = snap.algorithm
            out.creates = [
                Create(
                    PODS,
                    labels.pod_name(meta.name, i),
                    builders.pod_body(
                        clique,
                        i,
                        desired,
                        algorithm,
                        gate_image=snap.gate_image,
                        gate_open=not waiting,
                    ),
                    uid,
                )
                for i in missing[:CREATE_BURST]
            ]
    if gate and not waiting:
        out.patches += [
            Patch(PODS, pod.metadata.name, start_gate.open_patch(), reason="OpenStartGate")
            for pod in start_gate.to_open(by_index.values())[:CREATE_BURST]
        ]
    # No Event per Clique for a roll: the CliqueSet's RollingUpdate event names the gangs
    # (one Event per Clique was a fifth of the operator's requests in a 1,000-pod rollout).
    out.status = _status(snap, by_index, desired, waiting, gate, held)
    if out.status == clique.status:
        out.status = None
    return out


def progress_only(old: CliqueStatus | None, new: CliqueStatus) -> bool:
    """Whether `new` only reports progress towards Ready that `old` does not show yet.

    True when the Clique has started and stays not Ready for the same reason, and no pod
    stopped being ready: pods created, scheduled or updated while Ready is still False. Any
    condition change (a Clique that starts, turns Ready, drops below minAvailable, begins
    an update, has its writes refused or accepted again) and a lower readyReplicas are
    news, never progress.
    """
    ready = find_condition(new.conditions, CONDITION_READY)
    started = find_condition(new.conditions, CONDITION_STARTED)
    if ready is None or ready.status != "False" or started is None or started.status != "True":
        return False
    failing = find_condition(new.conditions, CONDITION_REPLICA_FAILURE) is not None
    if old is not None and failing != (
        find_condition(old.conditions, CONDITION_REPLICA_FAILURE) is not None
    ):
        return False  # writes refused, or accepted again: news
    if old is None:
        return new.ready_replicas == 0
    old_ready = find_condition(old.conditions, CONDITION_READY)
    old_started = find_condition(old.conditions, CONDITION_STARTED)
    return (
        old_ready is not None
        and old_ready.status == "False"
        and old_ready.reason == ready.reason
        and old_started is not None
        and old_started.status == "True"
        and new.ready_replicas >= old.ready_replicas
    )


def _current_condition(clique: Clique, type_: str) -> str | None:
    """The status ("True", "False", ...) of the condition `type_` that the Clique reports
    for its current epoch (`status_current`); None if it reports none for it."""
    status = clique.status
    if status is None or not status_current(clique):
        return None
    cond = find_condition(status.conditions, type_)
    return cond.status if cond is not None else None


def clique_ready(clique: Clique) -> bool:
    """The Clique reports Ready for its current epoch (template, generation, restarts)."""
    return _current_condition(clique, CONDITION_READY) == "True"


def clique_starting(clique: Clique) -> bool:
    """The Clique reports, for its current epoch, that it has started and is not Ready
    yet: its pods are on their way."""
    return (
        _current_condition(clique, CONDITION_STARTED) == "True"
        and _current_condition(clique, CONDITION_READY) == "False"
    )


def waiting_for(clique: Clique, deps: Mapping[str, Clique | None]) -> list[str]:
    """The names of `deps` (the Cliques `clique` starts after, None where not seen) that
    are not Ready for the gang as it is now: Ready for their own epoch, and recording the
    same gang restart count as `clique` (the restart's patches are one per Clique, so a
    sibling may not have been reached yet)."""
    restarts = restart_count(clique)
    return [
        name
        for name, dep in deps.items()
        if dep is None or not clique_ready(dep) or restart_count(dep) != restarts
    ]


def _status(
    snap: CliqueSnapshot,
    by_index: dict[int, Pod],
    desired: str,
    waiting: bool,
    gate: bool,
    held: dict[int, float],
) -> CliqueStatus:
    clique = snap.clique
    spec = clique.spec
    old = clique.status or CliqueStatus()
    gen = clique.metadata.generation
    live = [p for p in by_index.values() if p.metadata.deletion_timestamp is None]
    updated = [p for p in live if p.metadata.labels.get(labels.LABEL_TEMPLATE_HASH) == desired]
    ready = sum(1 for p in live if p.is_ready and inplace.settled(p))
    restarts = _restarts(clique.metadata.annotations)
    current = [p for p in updated if _restarts(p.metadata.annotations) == restarts]
    ready_current = sum(1 for p in current if p.is_ready and inplace.settled(p))
    stuck = sorted(
        (p.metadata.name, reason) for p in current for reason in inplace.waiting_reasons(p)[:1]
    )
    pending = sorted((p for p in current if p.is_unschedulable), key=lambda p: p.metadata.name)
    unschedulable = [p.metadata.name for p in pending]
    why = pending[0].unschedulable_why if pending else ""
    min_available = spec.effective_min_available
    queued = sum(1 for p in live if any(g.name == kueue.GATE for g in p.spec.scheduling_gates))

    conds = conditions.Setter(old.conditions, snap.now, gen)
    if waiting:
        deps = ", ".join(sorted(snap.waiting_for))
        message = (
            f"pods created; their start gates open when {deps} "
            + ("is" if len(snap.waiting_for) == 1 else "are")
            + " Ready"
            if gate
            else f"waiting for {deps} to be Ready"
        )
        started_c = conds.set(CONDITION_STARTED, "False", "WaitingForDependencies", message)
    else:
        started_c = conds.set(CONDITION_STARTED, "True", "Started", "pods may be created")

    if ready_current >= min_available:
        enough = f"{ready_current}/{spec.replicas} pods ready (minAvailable {min_available})"
        ready_c = conds.set(CONDITION_READY, "True", "MinAvailable", enough)
    else:
        reason = _not_ready_reason(old, desired, restart_count(clique), ready_current)
        short = f"{ready_current}/{spec.replicas} pods ready, minAvailable {min_available}"
        if queued:
            short += f"; {queued} pod(s) wait for Kueue to admit the gang"
        if unschedulable:
            short += f"; {len(unschedulable)} pod(s) wait for a node"
        ready_c = conds.set(CONDITION_READY, "False", reason, short)
    return CliqueStatus(
        observed_generation=gen,
        replicas=len(live),
        ready_replicas=ready,
        updated_replicas=len(updated),
        queued_replicas=queued,
        template_hash=desired,
        hash_algorithm=snap.algorithm,
        selector=_selector(clique),
        gang_restarts=restart_count(clique),
        conditions=[
            started_c,
            ready_c,
            *failures.condition(conds, snap.failure),
            *_backoff_condition(conds, held),
            *_unschedulable_condition(conds, unschedulable, why),
            *_waiting_condition(conds, stuck),
        ],
    )


def _not_ready_reason(old: CliqueStatus, desired: str, restarts: int, ready: int) -> str:
    """Why a Clique with `ready` ready pods of its epoch is not Ready (the reasons of the
    module docstring), from its last status `old`. Only a Clique that was Ready in this
    very epoch and has fewer ready pods than it reported is BelowMinAvailable: one that is
    short because it starts, was restarted, rolls or grew is not broken."""
    prev = find_condition(old.conditions, CONDITION_READY)
    if old.template_hash != desired:
        return REASON_UPDATING if old.template_hash else REASON_STARTING
    if old.gang_restarts != restarts or prev is None:
        return REASON_STARTING
    if prev.reason == REASON_BELOW_MIN and prev.status == "False":
        return REASON_BELOW_MIN  # until Ready again
    if prev.status == "True" or prev.reason == REASON_RESIZING:
        return REASON_BELOW_MIN if ready < old.ready_replicas else REASON_RESIZING
    return REASON_UPDATING if prev.reason == REASON_UPDATING else REASON_STARTING


#: Characters of the scheduler's message kept in a condition.
WHY_LENGTH = 400


def _unschedulable_condition(
    conds: conditions.Setter, names: list[str], why: str = ""
) -> list[Condition]:
    """PodsUnschedulable while pods of the Clique's epoch wait for a node, naming a few,
    and what the scheduler says of the first (its devices, say: `claims`)."""
    if not names:
        return []
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    message = (
        f"{len(names)} pod(s) Pending: the scheduler finds no node with room for them "
        f"({shown}); they start when room appears"
    )
    if why:
        cut = why if len(why) <= WHY_LENGTH else why[: WHY_LENGTH - 3] + "..."
        message += f". The scheduler of {names[0]}: {cut}"
    return [conds.set(CONDITION_UNSCHEDULABLE, "True", "Unschedulable", message)]


def _waiting_condition(conds: conditions.Setter, stuck: list[tuple[str, str]]) -> list[Condition]:
    """ContainersWaiting while containers of the epoch's pods wait for something that does
    not come by itself (an image that cannot be pulled, a container that keeps crashing):
    its reason is the first pod's, and the message names a few pods and their reasons."""
    if not stuck:
        return []
    shown = ", ".join(f"{name} ({reason})" for name, reason in stuck[:3])
    more = f" and {len(stuck) - 3} more" if len(stuck) > 3 else ""
    message = f"{len(stuck)} pod(s) have containers that wait: {shown}{more}"
    reason = stuck[0][1] if _REASON.fullmatch(stuck[0][1]) else CONDITION_CONTAINERS_WAITING
    return [conds.set(CONDITION_CONTAINERS_WAITING, "True", reason, message)]


#: What a condition reason may be (the CRD's pattern).
_REASON = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")


def _backoff_condition(conds: conditions.Setter, held: dict[int, float]) -> list[Condition]:
    """PodBackOff while finished pods wait for their back-off, naming their indices."""
    if not held:
        return []
    first = min(held.values())
    message = (
        f"pods that keep finishing at index(es) {', '.join(map(str, sorted(held)))} are "
        f"replaced after a back-off (the next in {first:.0f}s)"
    )
    return [conds.set(CONDITION_POD_BACKOFF, "True", "PodsKeepFinishing", message)]


def _selector(clique: Clique) -> str:
    cl = clique.metadata.labels
    out = (
        f"{labels.LABEL_CLIQUESET}={cl.get(labels.LABEL_CLIQUESET, '')},"
        f"{labels.LABEL_GANG_INDEX}={clique.spec.gang_index},"
        f"{labels.LABEL_CLIQUE}={clique.spec.clique_name}"
    )
    instance = cl.get(labels.LABEL_GROUP_INDEX)
    if instance is not None:  # an instance of a scaling group: its own pods only
        out += f",{labels.LABEL_GROUP_INDEX}={instance}"
    return out
