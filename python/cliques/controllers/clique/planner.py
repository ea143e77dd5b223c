"""The Clique planner (pure): from a Clique and its pods, the next step and the status.

`plan` is a sequence of phases, each a pure function of the snapshot and of what the
phases before it decided:

1. `_pods_by_index`: the pods by their index (`pod_index`).
2. `_pod_rules` and `_judge_pods`: what becomes of each pod, highest index first; the
   first rule that applies decides (`_judge`):
   - a pod being deleted still holds its name (its index is recreated only once it is
     gone); nothing is done to it but its release from Kueue's finalizer (`kueue`);
   - a pod at an index >= replicas is deleted (ScaleDown: highest first);
   - a pod that finished (Succeeded/Failed) is deleted so it is recreated at its index,
     once the back-off of that index allows (`_finished`, `pod_backoff`: pods that keep
     finishing are replaced ever more slowly); until then it waits for its back-off;
   - a pod labelled with a hash the Clique may update in place from (`cliques.dev/update:
     InPlace:...`, `inplace`) is patched to the new images instead, keeping pod, node and
     claims (it counts as ready for the new template once it runs its images); it is
     deleted if it records another gang restart count, or if its containers are not the
     template's;
   - a pod whose template-hash label is neither the Clique's hash nor one of its
     `previous-template-hashes` (hashes of the same template under an older hash
     algorithm) is deleted: the CliqueSet controller decided this gang rolls now;
   - a pod recording another gang restart count than the Clique (`cliques.dev/gang-restarts`)
     is deleted: the CliqueSet controller recreates the gang whole (`gang_failures`);
   - a pod labelled with a previous hash is re-labelled in place, never recreated.
3. `_releases_and_relabels` and `_backoff_events`: the writes of phase 2 made in any case
   (Kueue releases, relabels) and a warning for a pod that finished again and again.
4. `_start_order`: whether the Clique waits for the Cliques it starts after (it has not
   started in its epoch and one of them is not Ready), and whether its start gates keep
   that order (`startGate`): then its pods are created anyway, with closed gates. Without
   start gates, a waiting Clique's creates are held back (`_StartOrder.creates_held`).
5. Only while expectations are satisfied (every create and delete seen in the cache, so a
   stale cache never causes a second create or a wrong delete):
   `_deletes` (phase 2's), `_in_place_updates` (phase 2's), `_finished_pods_patch` (the
   back-off's record of pods finished in a row), `_restart_nodes` (the nodes the pods of an
   earlier gang restart leave, recorded on the Clique, `same_nodes`), `_backoff` (the plan
   is requeued when the next finished pod is due) and `_creates` (the missing indices in
   0..replicas-1, lowest first, CREATE_BURST at a time, none while creates are held back,
   nor for a few seconds after its gang moved off a drained node, `drain.hold`; the pods
   of a gang restart prefer the recorded nodes).
6. `_open_start_gates`: a Clique with start gates opens them (a pod patch) once it no
   longer waits (`start_gate`).
7. `_changed_status`: the new status (`status.status`), unless it is the one the Clique has.
8. `_gang_gates`: with `podReadiness: Gang`, the Clique that keeps its gang's gates
   (`keeper`, one per gang) sets each pod's `cliques.dev/gang-ready` condition where it is
   not what the gang says (`gang_ready`: True while the gang is whole, `gang_whole`, read
   across the gang's Cliques, `snap.gang`).

Status: replicas, readyReplicas, updatedReplicas, templateHash, gangRestarts (the gang
restart count it reports for) and the conditions `Started` and `Ready`, `ReplicaFailure`
while the API server refuses the Clique's pod writes (`snap.failure`, see `failures`),
`PodBackOff` while finished pods wait for their back-off,
`PodsUnschedulable` while some of its pods wait for a node, `ContainersWaiting` while
containers of its pods wait for what does not come by itself (ImagePullBackOff, ...).

A pod counts as ready by its containers (`Pod.containers_ready`): with `podReadiness:
Gang`, its Ready waits for its gang to be whole, and the Clique's own judgement must not.

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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cliques.api import labels
from cliques.api.clique import CONDITION_READY, CONDITION_STARTED, Clique, CliqueStatus
from cliques.api.meta import CONDITION_REPLICA_FAILURE, find_condition, same_marks
from cliques.api.pod import Pod
from cliques.controllers.base.actions import CREATE_BURST, Create, Delete, Event, Patch, Plan
from cliques.controllers.clique import bodies
from cliques.controllers.clique import status as clique_status
from cliques.controllers.clique.snapshot import CliqueSnapshot, GangView
from cliques.controllers.clique.status import (
    REASON_UPDATING,
    of_epoch,
    restart_count,
    restarts_of,
    serving,
)
from cliques.controllers.features import (
    drain,
    gang_ready,
    inplace,
    kueue,
    pod_backoff,
    same_nodes,
    start_gate,
)
from cliques.kube.resources import CLIQUES, PODS

#: The planner's input, output and entry point.
__all__ = ["CliqueSnapshot", "GangView", "Plan", "plan"]


def same_to_planner(old: Pod, new: Pod) -> bool:
    """Whether `plan` would see no difference between two versions of a pod: the same
    metadata marks (`same_marks`), readiness of its containers (`Pod.containers_ready`: not
    its Ready, nor its gang readiness condition, which the operator itself sets: `gang_ready`)
    and terminal state, containers (a resize goes on to the image patch once the cache shows
    it) and scheduling gates (Kueue admits).
    (A scheduler binding or a container status detail changes none of these.)"""
    return (
        old.containers_ready == new.containers_ready
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
    """The next step for the Clique of `snap` and its status: the phases of the module
    docstring, in order."""
    # 1. The pods by index.
    pods = _pods_by_index(snap.pods)
    # 2. What becomes of each pod.
    rules = _pod_rules(snap)
    verdicts = _judge_pods(snap, rules, pods)
    # 3. The writes that do not wait for expectations, and back-off warnings.
    out = Plan(patches=_releases_and_relabels(verdicts), events=_backoff_events(verdicts))
    # 4. Start order.
    order = _start_order(snap, pods)
    # 5. Deletes, in-place updates, the back-off's record and creates, once the cache has
    # seen every earlier create and delete. No Event per Clique for a roll: the CliqueSet's
    # RollingUpdate event names the gangs (one Event per Clique was a fifth of the
    # operator's requests in a 1,000-pod rollout).
    backoff = _backoff(verdicts)
    if snap.expectations_satisfied:
        out.deletes = _deletes(snap, verdicts)
        out.patches += _in_place_updates(verdicts)
        out.patches += _finished_pods_patch(snap, rules, verdicts)
        out.patches += _restart_nodes(snap, rules, verdicts)
        if backoff:
            out.requeue_after = min(backoff.values())
        # A gang moved off a drained node makes its pods again a few seconds later (`drain`).
        held = drain.hold(snap.clique, snap.now)
        if held:
            out.requeue_after = min(out.requeue_after or held, held)
        else:
            out.creates = _creates(snap, pods, order)
    # 6. Start gates opened.
    out.patches += _open_start_gates(pods, order)
    # 7. Status, of the pods it leaves: one this plan deletes, or one deleted before whose
    # delete the cache has not shown yet, counts as going (a cache that shows it Ready a
    # moment longer must not make the Clique Ready meanwhile).
    going = snap.deleting | {d.name for d in out.deletes}
    left = {i: p for i, p in pods.items() if p.metadata.name not in going} if going else pods
    out.status = _changed_status(snap, left, order, backoff)
    # 8. Gang readiness gates set (`podReadiness: Gang`), but on the pods it deletes.
    out.patches += _gang_gates(snap, going)
    return out


def _pods_by_index(pods: list[Pod]) -> dict[int, Pod]:
    """Phase 1: the pods by their index (`pod_index`); a pod without one is left out."""
    by_index: dict[int, Pod] = {}
    for pod in pods:
        idx = pod_index(pod.metadata.name, pod.metadata.labels)
        if idx is not None:
            by_index[idx] = pod
    return by_index


@dataclass(frozen=True, slots=True)
class _PodRules:
    """What the Clique's pods are judged by (`_judge`): its epoch and its records."""

    #: the template hash of the Clique
    desired: str
    #: hashes of the same template under an older hash algorithm (relabelled, not recreated)
    previous: frozenset[str]
    #: hashes the Clique may update its pods in place from (`inplace`)
    in_place_from: frozenset[str]
    #: the gang restart count the Clique records (`status.restarts_of`)
    restarts: str
    #: pods finished in a row by index, as the Clique records them (`pod_backoff`)
    finished: dict[int, int]


def _pod_rules(snap: CliqueSnapshot) -> _PodRules:
    """Phase 2a: what the Clique's pods are judged by, read from the snapshot once."""
    annotations = snap.clique.metadata.annotations
    previous = annotations.get(labels.ANNOTATION_PREVIOUS_HASHES, "").split(",")
    return _PodRules(
        desired=snap.template_hash,
        previous=frozenset(h for h in previous if h),
        in_place_from=frozenset(inplace.from_hashes(snap.clique)),
        restarts=restarts_of(annotations),
        finished=pod_backoff.parse(annotations.get(labels.ANNOTATION_FINISHED_PODS, "")),
    )


@dataclass(frozen=True, slots=True)
class _Verdict:
    """What becomes of one pod that does not stay as it is (`_judge`)."""

    index: int
    pod: Pod
    #: why it is deleted ("ScaleDown", "PodFinished", "TemplateChanged", "GangRestart"),
    #: "" if it is not
    delete: str = ""
    #: a finished pod waiting for its back-off: seconds until it may be replaced
    backoff: float = 0.0
    #: a finished pod replaced now: how many pods finished in a row at its index
    in_a_row: int = 0
    #: a patch made whatever the expectations: its Kueue release (a pod being deleted) or
    #: its relabel (a pod with a previous hash)
    patch: Patch | None = None
    #: the next write of its in-place update (`inplace`)
    in_place: Patch | None = None


def _judge_pods(snap: CliqueSnapshot, rules: _PodRules, pods: dict[int, Pod]) -> list[_Verdict]:
    """Phase 2b: what becomes of each pod that does not stay as it is, highest index first."""
    verdicts = (_judge(snap, rules, idx, pods[idx]) for idx in sorted(pods, reverse=True))
    return [v for v in verdicts if v is not None]


def _judge(snap: CliqueSnapshot, rules: _PodRules, idx: int, pod: Pod) -> _Verdict | None:
    """What becomes of one pod: the first rule of the module docstring's phase 2 that
    applies; None if it stays as it is."""
    meta = pod.metadata
    if meta.deletion_timestamp is not None:
        release = kueue.release_of(pod, meta.uid, snap.clique.metadata.uid)
        if release is None:
            return None
        return _Verdict(
            idx,
            pod,
            patch=Patch(PODS, meta.name, release, patch_type="json", reason="KueueRelease"),
        )
    spec = snap.clique.spec
    pod_hash = meta.labels.get(labels.LABEL_TEMPLATE_HASH, "")
    other_restart = restarts_of(meta.annotations) != rules.restarts
    if idx >= spec.replicas:
        return _Verdict(idx, pod, delete="ScaleDown")
    if pod.is_terminal:
        return _finished(snap, rules, idx, pod)
    if pod_hash in rules.in_place_from:
        if other_restart:
            return _Verdict(idx, pod, delete="GangRestart")
        patch = inplace.pod_patch(pod, spec.template, rules.desired, snap.algorithm)
        if patch is None:  # its containers are not the template's
            return _Verdict(idx, pod, delete="TemplateChanged")
        return _Verdict(idx, pod, in_place=_in_place_patch(pod, spec.template, patch))
    if pod_hash != rules.desired and pod_hash not in rules.previous:
        return _Verdict(idx, pod, delete="TemplateChanged")
    if other_restart:
        return _Verdict(idx, pod, delete="GangRestart")
    if pod_hash in rules.previous:
        return _Verdict(idx, pod, patch=_relabel(snap, pod))
    return None


def _finished(snap: CliqueSnapshot, rules: _PodRules, idx: int, pod: Pod) -> _Verdict:
    """A finished pod: deleted to be recreated at its index, or kept until the back-off of
    its index (`pod_backoff`) allows."""
    lived = pod_backoff.age(pod.metadata.creation_timestamp, snap.now)
    wait, in_a_row = pod_backoff.decide(rules.finished.get(idx, 0), lived)
    if wait > 0:
        return _Verdict(idx, pod, backoff=wait)
    return _Verdict(idx, pod, delete="PodFinished", in_a_row=in_a_row)


def _relabel(snap: CliqueSnapshot, pod: Pod) -> Patch:
    """The patch that gives a pod labelled with a previous hash the Clique's hash."""
    body = {
        "metadata": {
            "labels": {labels.LABEL_TEMPLATE_HASH: snap.template_hash},
            "annotations": {labels.ANNOTATION_HASH_ALGORITHM: str(snap.algorithm)},
        }
    }
    return Patch(PODS, pod.metadata.name, body, reason="Relabel")


def _releases_and_relabels(verdicts: list[_Verdict]) -> list[Patch]:
    """Phase 3: the pod patches made whatever the expectations (Kueue releases, relabels)."""
    return [v.patch for v in verdicts if v.patch is not None]


def _backoff_events(verdicts: list[_Verdict]) -> list[Event]:
    """Phase 3: a warning for each finished pod replaced now whose index keeps finishing."""
    return [
        Event(
            "Warning",
            "BackOff",
            f"pod {v.pod.metadata.name} finished ({v.pod.status.phase}): "
            f"{v.in_a_row} pods in a row finished at index {v.index}; if the next "
            f"one finishes too it is replaced {pod_backoff.delay(v.in_a_row):.0f}s "
            "after it was created at the earliest",
        )
        for v in verdicts
        if v.in_a_row > 1
    ]


@dataclass(frozen=True, slots=True)
class _StartOrder:
    """Where the Clique stands in its gang's start order (`_start_order`)."""

    #: it waits for the Cliques it starts after: not started in its epoch, some not Ready
    waiting: bool
    #: its start order is kept by start gates (`startGate`, `start_gate`): its pods are
    #: created with closed gates, opened once the Cliques it starts after are Ready
    start_gates: bool

    @property
    def creates_held(self) -> bool:
        """Its creates are held back by the Cliques it starts after, not Ready yet: it
        waits, and has no start gates to create its pods behind."""
        return self.waiting and not self.start_gates


def _start_order(snap: CliqueSnapshot, pods: dict[int, Pod]) -> _StartOrder:
    """Phase 4: whether the Clique waits for the Cliques it starts after, and how."""
    spec = snap.clique.spec
    return _StartOrder(
        waiting=bool(snap.waiting_for) and not _started(snap, pods),
        start_gates=spec.start_gate and bool(spec.starts_after),
    )


def _started(snap: CliqueSnapshot, pods: dict[int, Pod]) -> bool:
    """Started for this epoch, and some pod of the epoch has started: a Clique whose pods
    of the epoch are all gone (old pods still holding the names after a roll, every pod
    evicted) waits again for the Cliques it starts after, as on creation, and so does one
    whose pods of the epoch all wait at a closed start gate (made while it waited: none of
    them has started, and a gate is opened only once the Cliques it starts after are
    Ready)."""
    clique = snap.clique
    status = clique.status or CliqueStatus()
    cond = find_condition(status.conditions, CONDITION_STARTED)
    epoch = of_epoch(pods.values(), snap.template_hash, restarts_of(clique.metadata.annotations))
    return (
        cond is not None
        and cond.status == "True"
        and status.template_hash == snap.template_hash
        and status.gang_restarts == restart_count(clique)
        and any(not start_gate.is_closed(p) for p in epoch)
    )


def keeper(gang: Iterable[Clique]) -> str:
    """The name of the Clique that keeps a gang's gates (`_gang_gates`): the first by name
    of its Cliques not being deleted ("" for none). One Clique writes every pod's gate, so
    that no two reconciles of the gang write the same condition."""
    return min((c.metadata.name for c in gang if c.metadata.deletion_timestamp is None), default="")


def gang_whole(
    gang: Sequence[Clique],
    pods: Mapping[str, Sequence[Pod]],
    going: frozenset[str] | set[str] = frozenset(),
) -> bool:
    """Whether a gang is whole (`gang_ready`): it has Cliques, all recording the same gang
    restart count, and each (`gang`, not being deleted) has, in the cache (`pods`: each
    Clique's pods by its name; `going`: names of pods deleted meanwhile), `replicas` pods of
    its epoch (its template hash and restart count) ready by their containers, at indices
    below `replicas`. A Clique without a template-hash label is never whole."""
    live = [c for c in gang if c.metadata.deletion_timestamp is None]
    if not live or len({restart_count(c) for c in live}) > 1:
        return False
    for clique in live:
        want = clique.metadata.labels.get(labels.LABEL_TEMPLATE_HASH)
        if not want:
            return False
        replicas = clique.spec.replicas
        own = pods.get(clique.metadata.name, ())
        epoch = of_epoch(own, want, restarts_of(clique.metadata.annotations))
        ready = {
            i
            for p in epoch
            if serving(p)
            and p.metadata.name not in going
            and (i := pod_index(p.metadata.name, p.metadata.labels)) is not None
            and i < replicas
        }
        if len(ready) < replicas:
            return False
    return True


def _gang_gates(snap: CliqueSnapshot, going: frozenset[str] | set[str]) -> list[Patch]:
    """Phase 8: with `podReadiness: Gang`, for the Clique that keeps its gang's gates
    (`snap.gang`, `keeper`): the status patches of the gang's pods whose
    `cliques.dev/gang-ready` condition is not what the gang says (`gang_ready`; True only
    for a pod of its Clique's current epoch while the gang is whole, `gang_whole`). None for
    a pod this plan deletes."""
    view = snap.gang
    if view is None:
        return []
    whole = gang_whole(view.cliques, view.pods, going)
    pods: list[tuple[Pod, bool]] = []
    for clique in view.cliques:
        want = clique.metadata.labels.get(labels.LABEL_TEMPLATE_HASH, "")
        own = view.pods.get(clique.metadata.name, ())
        epoch = {
            p.metadata.name for p in of_epoch(own, want, restarts_of(clique.metadata.annotations))
        }
        pods += [(p, p.metadata.name in epoch) for p in own if p.metadata.name not in going]
    clique = snap.clique
    gang = f"{clique.metadata.labels.get(labels.LABEL_CLIQUESET, '')}/{clique.spec.gang_index}"
    return gang_ready.gate_patches(pods, whole, snap.now, gang)


def _deletes(snap: CliqueSnapshot, verdicts: list[_Verdict]) -> list[Delete]:
    """Phase 5: the pods deleted (phase 2), highest index first, each with its reason."""
    uid = snap.clique.metadata.uid
    return [
        Delete(PODS, v.pod.metadata.name, v.pod.metadata.uid, uid, v.delete)
        for v in verdicts
        if v.delete
    ]


def _in_place_updates(verdicts: list[_Verdict]) -> list[Patch]:
    """Phase 5: the next write of each in-place update (phase 2)."""
    return [v.in_place for v in verdicts if v.in_place is not None]


def _finished_pods_patch(
    snap: CliqueSnapshot, rules: _PodRules, verdicts: list[_Verdict]
) -> list[Patch]:
    """Phase 5: the Clique's new record of pods finished in a row by index, if it changes:
    indices beyond replicas are dropped, and each finished pod replaced now counts."""
    counts = {i: c for i, c in rules.finished.items() if i < snap.clique.spec.replicas}
    counts.update({v.index: v.in_a_row for v in verdicts if v.delete == "PodFinished"})
    if counts == rules.finished:
        return []
    value = pod_backoff.encode(counts) or None
    body = {"metadata": {"annotations": {labels.ANNOTATION_FINISHED_PODS: value}}}
    return [Patch(CLIQUES, snap.clique.metadata.name, body, reason="FinishedPods")]


def _restart_nodes(snap: CliqueSnapshot, rules: _PodRules, verdicts: list[_Verdict]) -> list[Patch]:
    """Phase 5: the nodes the pods of an earlier gang restart ran on, recorded for the
    pods made for this one to prefer (`same_nodes`)."""
    if not snap.same_nodes:
        return []
    leaving = [
        (v.index, v.pod)
        for v in verdicts
        if v.delete and restarts_of(v.pod.metadata.annotations) != rules.restarts
    ]
    patch = same_nodes.record(snap.clique, rules.restarts, leaving) if leaving else None
    return [patch] if patch is not None else []


def _backoff(verdicts: list[_Verdict]) -> dict[int, float]:
    """Phase 5: the finished pods waiting for their back-off: index -> seconds to wait."""
    return {v.index: v.backoff for v in verdicts if v.backoff > 0}


def _creates(snap: CliqueSnapshot, pods: dict[int, Pod], order: _StartOrder) -> list[Create]:
    """Phase 5: the pods of the missing indices, lowest first, CREATE_BURST at a time; none
    while the creates are held back (`_StartOrder.creates_held`)."""
    if order.creates_held:
        return []
    clique = snap.clique
    missing = [i for i in range(clique.spec.replicas) if i not in pods]
    nodes = (
        same_nodes.recorded(clique, restarts_of(clique.metadata.annotations))
        if snap.same_nodes
        else {}
    )
    return [
        Create(
            PODS,
            labels.pod_name(clique.metadata.name, i),
            same_nodes.prefer(
                bodies.pod_body(
                    clique,
                    i,
                    snap.template_hash,
                    snap.algorithm,
                    gate_image=snap.gate_image,
                    gate_open=not order.waiting,
                    responder=snap.responder,
                ),
                nodes.get(i),
            ),
            clique.metadata.uid,
        )
        for i in missing[:CREATE_BURST]
    ]


def _open_start_gates(pods: dict[int, Pod], order: _StartOrder) -> list[Patch]:
    """Phase 6: the start gates opened, CREATE_BURST at a time, once the Clique no longer
    waits (`start_gate.to_open`)."""
    if not order.start_gates or order.waiting:
        return []
    return [
        Patch(PODS, pod.metadata.name, start_gate.open_patch(), reason="OpenStartGate")
        for pod in start_gate.to_open(pods.values())[:CREATE_BURST]
    ]


def _changed_status(
    snap: CliqueSnapshot, pods: dict[int, Pod], order: _StartOrder, backoff: dict[int, float]
) -> CliqueStatus | None:
    """Phase 7: the Clique's new status (`status.status`), None if it is the one it has."""
    status = clique_status.status(snap, pods, order.waiting, order.start_gates, backoff)
    return None if status == snap.clique.status else status


def progress_only(old: CliqueStatus | None, new: CliqueStatus) -> bool:
    """Whether `new` only reports progress towards Ready that `old` does not show yet.

    True when the Clique has started and stays not Ready for the same reason, and no pod
    stopped being ready: pods created, scheduled or updated while Ready is still False.
    True also for the first status of a new template (`Updating`, from a status of another
    template): nobody reads it as news, since a status speaks only for the template it
    names (`status_current`), so the CliqueSet, the Cliques that start after this one and
    `kubectl cliques` take the Clique for one on its way from its new template alone; held,
    it is overtaken by the Ready of a roll that takes less than the hold, one write per
    Clique saved. Any other condition change (a Clique that starts, turns Ready, drops below
    minAvailable, has its writes refused or accepted again) and a lower readyReplicas are
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
    if (
        ready.reason == REASON_UPDATING
        and old.template_hash
        and old.template_hash != new.template_hash
        and old.gang_restarts == new.gang_restarts
    ):
        return True  # a new template's first status
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


def waiting_for(
    clique: Clique,
    deps: Mapping[str, Clique | None],
    pods: Mapping[str, Sequence[Pod]],
) -> list[str]:
    """The names of `deps` (the Cliques `clique` starts after, None where not seen) that
    are not Ready for the gang as it is now: Ready for their own epoch, recording the same
    gang restart count as `clique` (the restart's patches are one per Clique, so a sibling
    may not have been reached yet), and with `minAvailable` Ready pods of that epoch in the
    cache (`pods`: each dependency's pods by its name). A dependency's status is written by
    its own reconcile: a pod it lost a moment ago is in the cache before it is in that
    status, and a pod made then would not start after it."""
    restarts = restart_count(clique)
    return [
        name
        for name, dep in deps.items()
        if dep is None
        or not clique_ready(dep)
        or restart_count(dep) != restarts
        or not _ready_in_cache(dep, pods.get(name, ()))
    ]


def _ready_in_cache(dep: Clique, pods: Sequence[Pod]) -> bool:
    """Whether the cache shows `minAvailable` Ready pods of `dep`'s template and restart
    count (a Clique without a template-hash label is judged by its status alone)."""
    want = dep.metadata.labels.get(labels.LABEL_TEMPLATE_HASH)
    if not want:
        return True
    ready = sum(
        1 for p in of_epoch(pods, want, restarts_of(dep.metadata.annotations)) if serving(p)
    )
    return ready >= dep.spec.effective_min_available
