"""A Clique's status (pure): its counts and conditions for its epoch, from its pods.

An epoch is the Clique's template hash and gang restart count (`restart_count`); only the
pods of that epoch (`of_epoch`) count as ready, by their containers (`serving`). The Ready
condition's reasons when False (`REASON_*`) are those of the planner's docstring;
`PodBackOff`, `PodsUnschedulable` and `ContainersWaiting` say what the Clique's pods wait
for.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from cliques.api import labels
from cliques.api.clique import CONDITION_READY, CONDITION_STARTED, Clique, CliqueStatus
from cliques.api.meta import Condition, find_condition
from cliques.api.pod import Pod
from cliques.controllers.base import conditions, failures
from cliques.controllers.clique.snapshot import CliqueSnapshot
from cliques.controllers.features import inplace, kueue

REASON_BELOW_MIN = "BelowMinAvailable"
REASON_RESIZING = "Resizing"
REASON_STARTING = "Starting"
REASON_UPDATING = "Updating"
CONDITION_POD_BACKOFF = "PodBackOff"
CONDITION_UNSCHEDULABLE = "PodsUnschedulable"
CONDITION_CONTAINERS_WAITING = "ContainersWaiting"


def restarts_of(annotations: dict[str, str]) -> str:
    """A gang's restart count as recorded on a Clique or pod ("0" when not recorded)."""
    return annotations.get(labels.ANNOTATION_GANG_RESTARTS) or "0"


def restart_count(clique: Clique) -> int:
    """The gang restart count a Clique records (0 when none or unreadable)."""
    try:
        return int(restarts_of(clique.metadata.annotations))
    except ValueError:
        return 0


def of_epoch(pods: Iterable[Pod], template_hash: str, restarts: str) -> list[Pod]:
    """The live pods of one epoch of a Clique: of its template and its gang restart."""
    return [
        p
        for p in pods
        if p.metadata.deletion_timestamp is None
        and p.metadata.labels.get(labels.LABEL_TEMPLATE_HASH) == template_hash
        and restarts_of(p.metadata.annotations) == restarts
    ]


def serving(pod: Pod) -> bool:
    """Ready by its containers (`Pod.containers_ready`: not its Ready, which with
    `podReadiness: Gang` waits for the gang to be whole), and done with any in-place update
    (`inplace.settled`)."""
    return pod.containers_ready and inplace.settled(pod)


def status(
    snap: CliqueSnapshot,
    pods: dict[int, Pod],
    waiting: bool,
    start_gates: bool,
    backoff: dict[int, float],
) -> CliqueStatus:
    """The Clique's status: the counts and conditions of the module docstring."""
    clique = snap.clique
    desired = snap.template_hash
    spec = clique.spec
    old = clique.status or CliqueStatus()
    gen = clique.metadata.generation
    live = [p for p in pods.values() if p.metadata.deletion_timestamp is None]
    updated = [p for p in live if p.metadata.labels.get(labels.LABEL_TEMPLATE_HASH) == desired]
    ready = sum(1 for p in live if serving(p))
    current = of_epoch(updated, desired, restarts_of(clique.metadata.annotations))
    ready_current = sum(1 for p in current if serving(p))
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
            if start_gates
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
            *_backoff_condition(conds, backoff),
            *_unschedulable_condition(conds, unschedulable, why),
            *_containers_waiting_condition(conds, stuck),
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


def _containers_waiting_condition(
    conds: conditions.Setter, stuck: list[tuple[str, str]]
) -> list[Condition]:
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


def _backoff_condition(conds: conditions.Setter, backoff: dict[int, float]) -> list[Condition]:
    """PodBackOff while finished pods wait for their back-off, naming their indices."""
    if not backoff:
        return []
    first = min(backoff.values())
    message = (
        f"pods that keep finishing at index(es) {', '.join(map(str, sorted(backoff)))} are "
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
