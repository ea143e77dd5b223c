"""Gangs admitted by Kueue (pure): what a queued CliqueSet's pods carry, and what the set
says of each gang's admission (docs/kueue.md).

A CliqueSet labelled `kueue.x-k8s.io/queue-name: <LocalQueue>` (and optionally
`kueue.x-k8s.io/priority-class: <WorkloadPriorityClass>`) has each gang admitted by Kueue as
one plain pod group, the integration Kueue itself uses for LeaderWorkerSet:

- **Every pod of a gang carries the group** (`resolve`): the queue and priority labels, the
  group's name (`group_name`: `<set>-<gang>-<revision>`), its size (the gang's pods), the
  `serving` mark (the pods do not run to completion; a pod that goes is replaced in the
  group) and the role (its clique, one pod set of the group's Workload per clique). Kueue's
  pod webhook gates each pod (`GATE`), Kueue makes the group's Workload once all its pods
  exist, admits it whole within the ClusterQueue's quota and in queue order, then lifts
  the gates and adds the flavor's node selectors and tolerations. A gang it evicts or
  preempts loses all its pods; the Cliques make them again, gated, and the group queues
  again whole.
- **A gang is what Kueue admitted** (`revision`): a hash of the queue, the priority, and
  every clique's template and replicas. It is part of each clique's template hash
  (`hash_basis`), so any change to a queued set (an image, a clique's size, the queue)
  replaces whole gangs, each as a new group queued again, within `maxUnavailable`:
  Kueue admitted a fixed pod set and cannot grow one.
- **A pod being deleted is released** (`release_patch`): the Clique takes Kueue's
  finalizer off it, so that its replacement, under the same name, can be made. Only the
  pod seen going, owned by the Clique seen owning it (`release_of`: both UIDs), is
  released: another pod of the same name, made by someone else, never is.
- **What the set says** (`gang_states`, `verdict`): per gang, Queued (some pod still
  gated), Admitted, or Evicted, with Kueue's reason and message from the group's
  Workload where the operator sees it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from cliques import _core
from cliques.api import labels
from cliques.api.cliqueset import CliqueSet
from cliques.api.cliqueset_status import AdmissionState
from cliques.api.kueue import KueueWorkload, LocalQueue
from cliques.api.meta import ConditionStatus
from cliques.api.pod import Pod
from cliques.kube import gangapi, store
from cliques.kube.informer import Informer
from cliques.kube.resources import KUEUE_WORKLOADS, LOCAL_QUEUES, Resource
from cliques.kube.watches import Watch

QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL: Final = "kueue.x-k8s.io/priority-class"
GROUP_LABEL: Final = "kueue.x-k8s.io/pod-group-name"
TOTAL_ANNOTATION: Final = "kueue.x-k8s.io/pod-group-total-count"
SERVING_ANNOTATION: Final = "kueue.x-k8s.io/pod-group-serving"
ROLE_ANNOTATION: Final = "kueue.x-k8s.io/role-hash"
#: The scheduling gate Kueue's pod webhook puts on each pod until its group is admitted.
GATE: Final = "kueue.x-k8s.io/admission"
#: The pod condition Kueue sets on a pod it stops (evicted, preempted) before deleting it.
TERMINATION_TARGET: Final = "TerminationTarget"
#: The finalizer Kueue's pod webhook puts on each pod of a group it manages.
FINALIZER: Final = "kueue.x-k8s.io/managed"
#: The annotation that carries the gang's revision into each clique's template hash.
REVISION_ANNOTATION: Final = labels.ANNOTATION_KUEUE_REVISION

CONDITION_ADMITTED: Final = "Admitted"
#: A gang's state once Kueue admitted it (the others are `AdmissionState`'s).
ADMITTED: Final = "Admitted"
#: At most this many gangs are listed one by one in the set's status.
MAX_LISTED: Final = 20

_MAX_LABEL: Final = 63
_KEYS: Final = (QUEUE_LABEL, PRIORITY_LABEL, GROUP_LABEL)
_ANNOTATIONS: Final = (TOTAL_ANNOTATION, SERVING_ANNOTATION, ROLE_ANNOTATION)


def _kueue_workloads(api: gangapi.GangAPI) -> Resource | None:
    return KUEUE_WORKLOADS if api.kueue else None


def _local_queues(api: gangapi.GangAPI) -> Resource | None:
    return LOCAL_QUEUES if api.kueue else None


#: What Kueue admission watches, where Kueue is installed: its Workloads of the gangs' pod
#: groups (labelled with their CliqueSet by Kueue's labelKeysToCopy, docs/kueue.md), and
#: the LocalQueues, all of them.
WATCHES: Final[tuple[Watch, ...]] = (
    Watch(
        "kueue_workloads",
        KueueWorkload,
        _kueue_workloads,
        indexers={"cliqueset": store.by_label(labels.LABEL_CLIQUESET)},
    ),
    Watch("local_queues", LocalQueue, _local_queues, owned=False),
)


@dataclass(frozen=True)
class View:
    """What the CliqueSet planner reads for Kueue: for a set Kueue queues (`queue_of`), the
    gangs' revision (`revision`); whether the server serves Kueue's API, the LocalQueues of
    the set's namespace, and the Workloads of its gangs' pod groups, by name."""

    revision: str = ""
    served: bool = False
    local_queues: frozenset[str] = frozenset()
    workloads: Mapping[str, KueueWorkload] = field(default_factory=dict)


@dataclass(frozen=True)
class Informers:
    """The informers of `WATCHES` (None where Kueue is not installed)."""

    workloads: Informer[KueueWorkload] | None = None
    local_queues: Informer[LocalQueue] | None = None

    @classmethod
    def of(cls, informers: Mapping[str, Any]) -> Informers:
        """From the informers by watch name."""
        return cls(*(informers.get(w.name) for w in WATCHES))

    def owned(self) -> tuple[Informer[Any], ...]:
        """The informers of objects of the CliqueSets (a change wakes the set)."""
        return (self.workloads,) if self.workloads is not None else ()

    def view(self, cqs: CliqueSet, revision: str) -> View:
        """What the planner reads for `cqs`, whose gangs' revision is `revision` ("" for a
        set Kueue does not queue)."""
        queues: frozenset[str] = frozenset()
        if self.local_queues is not None and queue_of(cqs) is not None:
            ns = cqs.metadata.namespace
            queues = frozenset(
                q.metadata.name
                for q in self.local_queues.store.objects()
                if q.metadata.namespace == ns
            )
        workloads: dict[str, KueueWorkload] = {}
        if self.workloads is not None and revision:
            key = f"{cqs.metadata.namespace}/{cqs.metadata.name}"
            for w in self.workloads.store.by_index("cliqueset", key):
                workloads[w.metadata.name] = w
        return View(revision, self.workloads is not None, queues, workloads)


@dataclass(frozen=True)
class Queue:
    """The LocalQueue a CliqueSet's gangs are admitted through, and their priority class."""

    name: str
    priority: str = ""


@dataclass(frozen=True)
class GangState:
    """One gang's admission: `ADMITTED`, or an `AdmissionState` (queued, evicted), with
    Kueue's reason and message (from the group's Workload, when seen)."""

    gang: int
    state: str
    reason: str = ""
    message: str = ""


def queue_of(cqs: CliqueSet) -> Queue | None:
    """The queue of a CliqueSet labelled for Kueue, None for one that is not."""
    meta_labels = cqs.metadata.labels
    name = meta_labels.get(QUEUE_LABEL, "")
    if not name:
        return None
    return Queue(name, meta_labels.get(PRIORITY_LABEL, ""))


def gang_size(cqs: CliqueSet) -> int:
    """The pods of one gang: the sum of its cliques' replicas."""
    return sum(c.replicas for c in cqs.spec.template.cliques)


def revision(cqs: CliqueSet, base_hashes: Mapping[str, str]) -> str:
    """What Kueue admits of each gang, hashed (10 label-safe characters): the queue, the
    priority class, and each clique's name, template hash (`base_hashes`, taken without
    this revision) and replicas."""
    queue = queue_of(cqs)
    doc = {
        "queue": queue.name if queue else "",
        "priority": queue.priority if queue else "",
        "cliques": [
            [c.name, base_hashes.get(c.name, ""), c.replicas] for c in cqs.spec.template.cliques
        ],
    }
    text = json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()
    return _core.safe_encode(_core.fnv1a_64(text))[:10]


def hash_basis(template: Mapping[str, Any], rev: str) -> Mapping[str, Any]:
    """A clique's hash basis with the gang's revision in its annotations."""
    out = dict(template)
    meta = dict(out.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), REVISION_ANNOTATION: rev}
    out["metadata"] = meta
    return out


def group_name(cliqueset: str, gang: int, rev: str) -> str:
    """The pod group (and Kueue Workload) of gang `gang`: `<set>-<gang>-<revision>` while
    it is shorter than a label value's 63 characters (it reads back one way: neither the
    index nor the revision has a '-'), else the set's name cut and the hash of all three
    added (`labels.generated_name`): two sets whose names share their first 50
    characters never share a group."""
    return labels.generated_name(cliqueset, gang, rev, limit=_MAX_LABEL)


def group_names(cliqueset: str, gang: int, rev: str) -> tuple[str, ...]:
    """The names gang `gang`'s pod group may have: `group_name`, then the name an operator
    before `generated_name` gave a group it cut (`<set cut>-<gang>-<revision>`), which the
    pods of a gang made then keep until the gang is made again."""
    suffix = f"-{gang}-{rev}"
    legacy = f"{cliqueset[: _MAX_LABEL - len(suffix)].rstrip('-.')}{suffix}"
    name = group_name(cliqueset, gang, rev)
    return (name,) if legacy == name else (name, legacy)


def resolve(
    template: Mapping[str, Any], cqs: CliqueSet, clique: str, gang: int, rev: str
) -> Mapping[str, Any]:
    """The pod template of `clique` in gang `gang` of a queued set: the hash basis's
    revision annotation, and the group's labels and annotations Kueue reads."""
    queue = queue_of(cqs)
    if queue is None:
        return template
    out = dict(hash_basis(template, rev))
    meta = dict(out["metadata"])
    meta_labels = {**(meta.get("labels") or {}), QUEUE_LABEL: queue.name}
    meta_labels[GROUP_LABEL] = group_name(cqs.metadata.name, gang, rev)
    if queue.priority:
        meta_labels[PRIORITY_LABEL] = queue.priority
    meta["labels"] = meta_labels
    meta["annotations"] = {
        **meta["annotations"],
        TOTAL_ANNOTATION: str(gang_size(cqs)),
        SERVING_ANNOTATION: "true",
        ROLE_ANNOTATION: clique,
    }
    out["metadata"] = meta
    return out


def unresolve(template: Mapping[str, Any]) -> Mapping[str, Any]:
    """A Clique's template without the group's labels and annotations (the revision
    annotation kept): what `hash_basis` made, for a rehash."""
    meta = template.get("metadata") or {}
    meta_labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    if not any(k in meta_labels for k in _KEYS) and not any(k in annotations for k in _ANNOTATIONS):
        return template
    out = dict(template)
    new_meta = dict(meta)
    kept = {k: v for k, v in meta_labels.items() if k not in _KEYS}
    if kept:
        new_meta["labels"] = kept
    else:
        new_meta.pop("labels", None)
    new_meta["annotations"] = {k: v for k, v in annotations.items() if k not in _ANNOTATIONS}
    out["metadata"] = new_meta
    return out


def release_patch(pod: Pod) -> list[Any] | None:
    """The JSON patch that takes Kueue's finalizer off a pod being deleted, None when it has
    none. Kueue lets a deleted pod of a group go only once a replacement has joined the
    group, and a Clique makes the replacement, under the same name, only once the old pod
    is gone: the owner of pods with stable names releases them itself, as Kueue's own
    StatefulSet and LeaderWorkerSet integrations do."""
    finalizers = pod.metadata.finalizers
    if FINALIZER not in finalizers:
        return None
    i = finalizers.index(FINALIZER)
    return [
        {"op": "test", "path": "/metadata/uid", "value": pod.metadata.uid},
        {"op": "test", "path": f"/metadata/finalizers/{i}", "value": FINALIZER},
        {"op": "remove", "path": f"/metadata/finalizers/{i}"},
    ]


def release_of(pod: Pod | None, pod_uid: str, owner_uid: str) -> list[Any] | None:
    """The release (`release_patch`) of pod `pod_uid` controlled by the Clique `owner_uid`,
    read again as `pod` (None when gone): None unless `pod` is that very pod (its UID),
    still controlled by that Clique (the controller reference's kind and UID) and being
    deleted. A pod re-read by name may be another one of the same name, made since by
    anyone: it is never released. (The patch's own `test` of the UID keeps the API server
    to the same pod.)"""
    if pod is None or not pod_uid or not owner_uid or pod.metadata.uid != pod_uid:
        return None
    if pod.metadata.deletion_timestamp is None:
        return None
    ref = pod.metadata.controller_ref()
    if ref is None or ref.kind != labels.KIND_CLIQUE or ref.uid != owner_uid:
        return None
    return release_patch(pod)


def _workload_state(workload: KueueWorkload) -> tuple[str, str, str] | None:
    """(state, reason, message) a group's Workload tells, None when it tells nothing yet."""
    conds = {c.type: c for c in workload.status.conditions}
    evicted = conds.get("Evicted")
    admitted = conds.get("Admitted")
    if evicted is not None and evicted.status == "True":
        return AdmissionState.EVICTED, evicted.reason, evicted.message
    if admitted is not None and admitted.status == "True":
        return ADMITTED, admitted.reason, admitted.message
    reserved = conds.get("QuotaReserved")
    if reserved is not None and reserved.status != "True":
        return AdmissionState.QUEUED, reserved.reason, reserved.message
    return None


def gang_states(
    gangs: Iterable[int],
    queued_pods: Mapping[int, int],
    workloads: Mapping[int, KueueWorkload],
) -> list[GangState]:
    """Each gang's admission: Queued while any of its pods is held by Kueue's gate
    (`queued_pods`: gang -> pods still held), else Admitted; the group's Workload
    (`workloads`, by gang) names why it waits, and that it was evicted while its pods are
    being made again."""
    out = []
    for gang in sorted(gangs):
        told = _workload_state(workloads[gang]) if gang in workloads else None
        waiting = queued_pods.get(gang, 0) > 0
        if told is not None and told[0] == AdmissionState.EVICTED:
            out.append(GangState(gang, AdmissionState.EVICTED, told[1], told[2]))
        elif waiting:
            reason, message = (
                (told[1], told[2]) if told and told[0] == AdmissionState.QUEUED else ("", "")
            )
            out.append(GangState(gang, AdmissionState.QUEUED, reason or "Pending", message))
        else:
            out.append(GangState(gang, ADMITTED))
    return out


def problem(queue: Queue, served: bool, local_queues: frozenset[str], namespace: str) -> str:
    """Why no gang of a queued set can be admitted ("Reason: message"), "" when it can."""
    if not served:
        return (
            "KueueNotInstalled: the API server does not serve kueue.x-k8s.io/v1beta2 (Kueue "
            "is not installed, or the operator may not list its Workloads and LocalQueues)"
        )
    if queue.name not in local_queues:
        return (
            f"LocalQueueNotFound: LocalQueue {queue.name} does not exist in namespace {namespace}"
        )
    return ""


def verdict(
    queue: Queue, states: Sequence[GangState], why: str = ""
) -> tuple[ConditionStatus, str, str]:
    """The set's `Admitted` condition (status, reason, message): True when Kueue admitted
    every gang; False naming the first gang that waits or was evicted (with Kueue's
    message), or `why` (`problem`)."""
    where = f"queue {queue.name}" + (f", priority class {queue.priority}" if queue.priority else "")
    if why:
        reason, _, message = why.partition(": ")
        return "False", reason, f"{message} ({where}); no pod is created until it does"
    waiting = [s for s in states if s.state != ADMITTED]
    if not waiting:
        return "True", "AllGangsAdmitted", f"Kueue admitted all {len(states)} gang(s) ({where})"
    evicted = [s for s in waiting if s.state == AdmissionState.EVICTED]
    first = (evicted or waiting)[0]
    message = (
        f"{len(waiting)} of {len(states)} gang(s) not admitted by Kueue ({where}); "
        f"gang {first.gang} {first.state.lower()}"
        + (f" ({first.reason})" if first.reason else "")
        + (f": {first.message}" if first.message else "")
    )
    return "False", AdmissionState.EVICTED if evicted else AdmissionState.QUEUED, message
