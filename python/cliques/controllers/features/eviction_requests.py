"""EvictionRequests answered as a responder (pure): a gang whose pod is asked to go moves
whole, as off a drained node (docs/gangs.md#with-evictionrequests-kubernetes-137-alpha).

Kubernetes 1.37 serves, behind the alpha gate `EvictionRequestAPI`, lifecycle.k8s.io/v1alpha1
EvictionRequests (a requester asks for one pod's eviction) and Evictions (one per pod,
made by kube-controller-manager's evictionrequest-controller from 1.38 on, `api.eviction`).
The pods the operator makes outside PodGroups name its responder in
`spec.evictionResponders` (`labels.LABEL_RESPONDER` at `RESPONDER_PRIORITY`,
`clique.bodies`; the API forbids responders on a pod with `spec.schedulingGroup`); the
controller copies them into
the Eviction's `status.targetResponders` and makes the highest one `Active`.

- **Seen** (`Informers`): the Evictions labelled with the responder's name (the controller
  labels an Eviction with each of its responders), indexed by target pod. An Eviction
  whose state for the responder is `Active` and whose status has no `completionTime` yet is
  open; its target is found in the pod informer by name, and is one of the set's if that
  pod carries the set's label (remembered, `seen`, so that its set still finds it once
  the pod is gone).
- **Asked** (`asked`): a live target pod of the gang's current restart asks its gang to
  move (a pod of an older restart is being replaced by its Clique already). The gang then
  moves like a gang stuck on a drained node (`drain.Stuck.requested`, `merged`): made
  again whole, surge gangs first, within `maxUnavailable` against every gang down, with the
  set's PodDisruptionBudget holding off piecemeal evictions. Not where every requester has
  withdrawn (the controller cancels such an eviction: a move not begun is not begun), nor
  for a set whose `nodeDrain.policy` is None.
- **Reported** (`reports`): the responder's `status.responders[]` entry, by a strategic
  merge patch of `evictions/status`: `heartbeatTime` and a `message` (the gang moved now,
  waiting for the budget, or being made again) whenever the message changes and at least
  every `HEARTBEAT_EVERY` seconds (the API asks for no more than one every 20 s, and takes
  the eviction away after 20 minutes without one); `completionTime` once the target pod
  is being deleted or gone (its UID replaced), so the controller marks the responder
  `Completed` and the request `TargetEvicted`. A set that does not move gangs completes
  at once, saying so: the default responder (`imperative-eviction.k8s.io/evictor`) then
  evicts the pod through the Eviction API, as without the operator.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.eviction import ACTIVE, Eviction
from cliques.api.meta import parse_time
from cliques.api.pod import Pod
from cliques.controllers.base.actions import Patch
from cliques.controllers.features import drain
from cliques.kube.gangapi import GangAPI
from cliques.kube.informer import EventKind, Informer
from cliques.kube.objects import key_of
from cliques.kube.resources import EVICTIONS, PODS, Resource
from cliques.kube.watches import Watch

#: Seconds between two heartbeats of an eviction whose message is unchanged: well within
#: the API's 20 minutes, and above the 20 s it asks responders not to go below.
HEARTBEAT_EVERY: Final = 60.0
#: Where a target pod is (`Target.where`).
LIVE: Final = "live"
LEAVING: Final = "leaving"
GONE: Final = "gone"
#: The most requests named in one message.
MAX_NAMED: Final = 5


def _evictions(api: GangAPI) -> Resource | None:
    return EVICTIONS if api.evictions else None


def by_target(eviction: Eviction) -> Iterable[str]:
    """Index function: the `namespace/name` of an Eviction's target pod."""
    pod = eviction.spec.target.pod
    return (f"{eviction.metadata.namespace}/{pod.name}",) if pod is not None and pod.name else ()


#: What the responder watches: the Evictions that name it (every namespace the process
#: watches, by the label the evictionrequest-controller gives each responder), and the pods
#: of the process's buckets (the Clique controller's pod informer, shared).
WATCHES: Final[tuple[Watch, ...]] = (
    Watch(
        "evictions",
        Eviction,
        _evictions,
        owned=False,
        selector=labels.LABEL_RESPONDER,
        indexers={"target": by_target},
    ),
    Watch("pods", Pod, PODS),
)


def open_for_us(eviction: Eviction) -> bool:
    """The responder is the active one and has not completed."""
    if eviction.state_of(labels.LABEL_RESPONDER) != ACTIVE:
        return False
    status = eviction.status_of(labels.LABEL_RESPONDER)
    return status is None or status.completion_time is None


@dataclass(frozen=True)
class Target:
    """An open Eviction of one of the set's pods (`open_for_us`)."""

    eviction: str
    #: the EvictionRequests it answers (its owners)
    requests: tuple[str, ...]
    pod: str
    #: LIVE, LEAVING (being deleted) or GONE (deleted, or its name taken by a new pod)
    where: str
    gang: int
    #: the UID of its Clique, and the gang restart count it was made in
    clique_uid: str = ""
    restarts: str = "0"
    node: str = ""
    #: every requester withdrew
    withdrawn: bool = False
    #: the last heartbeat (or the start, before the first), and the last message written
    heartbeat: str = ""
    message: str = ""


@dataclass(frozen=True)
class View:
    """What the CliqueSet planner reads of EvictionRequests: whether they are answered here,
    and the open Evictions of the set's pods."""

    served: bool = False
    targets: tuple[Target, ...] = ()


class Informers:
    """The informers of `WATCHES`, and the set each open Eviction's pod was seen in."""

    def __init__(
        self, evictions: Informer[Eviction] | None = None, pods: Informer[Pod] | None = None
    ) -> None:
        self.evictions = evictions
        self.pods = pods
        #: Eviction key -> the key of the set its target pod belonged to
        self.seen: dict[str, str] = {}
        if evictions is not None:
            evictions.add_handler(self._on_eviction)

    @classmethod
    def of(cls, informers: Mapping[str, Any]) -> Informers:
        """From the informers by watch name."""
        return cls(*(informers.get(w.name) for w in WATCHES))

    @property
    def served(self) -> bool:
        return self.evictions is not None and self.pods is not None

    def owned(self) -> tuple[Informer[Any], ...]:
        """None: an Eviction belongs to no set (the controller's own handler wakes it)."""
        return ()

    def _on_eviction(self, kind: EventKind, old: Any, new: Eviction) -> None:
        if kind == "DELETED" or not open_for_us(new):
            self.seen.pop(key_of(new), None)

    def set_of(self, eviction: Eviction) -> str:
        """The key of the set whose pod `eviction` targets ("" if none of this process's)."""
        key = key_of(eviction)
        pod = self._pod(eviction)
        if pod is not None:
            parent = pod.metadata.labels.get(labels.LABEL_CLIQUESET)
            if parent:
                self.seen[key] = f"{pod.metadata.namespace}/{parent}"
        return self.seen.get(key, "")

    def _pod(self, eviction: Eviction) -> Pod | None:
        """The live target pod (its UID the one asked for), None when gone or replaced."""
        ref = eviction.spec.target.pod
        if self.pods is None or ref is None:
            return None
        pod = self.pods.store.get(f"{eviction.metadata.namespace}/{ref.name}")
        return pod if pod is not None and pod.metadata.uid == ref.uid else None

    def targets_of(self, pod_key: str) -> list[Eviction]:
        """The Evictions of the pod `namespace/name`."""
        return self.evictions.store.by_index("target", pod_key) if self.evictions else []

    def view(self, cqs: CliqueSet) -> View:
        """What the planner reads of EvictionRequests for `cqs`."""
        if not self.served:
            return View()
        assert self.evictions is not None
        me = key_of(cqs)
        out: list[Target] = []
        for eviction in sorted(self.evictions.store.objects(), key=key_of):
            if eviction.metadata.namespace != cqs.metadata.namespace or not open_for_us(eviction):
                continue
            if self.set_of(eviction) != me:
                continue
            out.append(target(eviction, self._pod(eviction)))
        return View(served=True, targets=tuple(out))


def target(eviction: Eviction, pod: Pod | None) -> Target:
    """The Target of an open Eviction whose live pod is `pod` (None: gone or replaced)."""
    ref = eviction.spec.target.pod
    status = eviction.status_of(labels.LABEL_RESPONDER)
    heartbeat = ""
    message = ""
    if status is not None:
        heartbeat = status.heartbeat_time or status.start_time or ""
        message = status.message or ""
    gone = Target(
        eviction=eviction.metadata.name,
        requests=tuple(eviction.requests()),
        pod=ref.name if ref is not None else "",
        where=GONE,
        gang=-1,
        withdrawn=eviction.withdrawn(),
        heartbeat=heartbeat,
        message=message,
    )
    if pod is None:
        return gone
    pm = pod.metadata
    gang = pm.labels.get(labels.LABEL_GANG_INDEX, "")
    return dataclasses.replace(
        gone,
        where=LEAVING if pm.deletion_timestamp is not None else LIVE,
        gang=int(gang) if gang.isdigit() else -1,
        clique_uid=next((r.uid for r in pm.owner_references if r.controller), ""),
        restarts=pm.annotations.get(labels.ANNOTATION_GANG_RESTARTS) or "0",
        node=pod.spec.node_name,
    )


def _restarts(clique: Clique) -> str:
    return clique.metadata.annotations.get(labels.ANNOTATION_GANG_RESTARTS) or "0"


def asked(view: View, cqs: CliqueSet, cliques: Sequence[Clique]) -> dict[int, tuple[str, ...]]:
    """The gangs the set's open Evictions ask to move, each with the EvictionRequests that
    ask (module docstring): a live pod of its Clique's current restart, not withdrawn, of
    a set that moves gangs."""
    return _by_gang(view, cqs, cliques, moving=False)


def under_way(view: View, cqs: CliqueSet, cliques: Sequence[Clique]) -> dict[int, tuple[str, ...]]:
    """The gangs whose open Evictions' pods are being replaced already (a pod of an earlier
    restart, or being deleted): moving, not to be moved again, and still said."""
    return _by_gang(view, cqs, cliques, moving=True)


def _by_gang(
    view: View, cqs: CliqueSet, cliques: Sequence[Clique], *, moving: bool
) -> dict[int, tuple[str, ...]]:
    if not view.served or not view.targets or not drain.moves(cqs):
        return {}
    by_uid = {c.metadata.uid: c for c in cliques if c.metadata.deletion_timestamp is None}
    out: dict[int, set[str]] = {}
    for t in view.targets:
        if t.where == GONE or t.withdrawn:
            continue
        clique = by_uid.get(t.clique_uid)
        if clique is None:
            continue  # its Clique is gone: its pods go with it
        current = t.where == LIVE and _restarts(clique) == t.restarts
        if current != moving:
            out.setdefault(clique.spec.gang_index, set()).update(t.requests or (t.eviction,))
    return {g: tuple(sorted(r)) for g, r in sorted(out.items())}


def merged(
    stuck: drain.Stuck,
    requested: Mapping[int, tuple[str, ...]],
    moving: Mapping[int, tuple[str, ...]] | None = None,
) -> drain.Stuck:
    """`stuck` with the gangs EvictionRequests ask to move (`requested`, in `gangs`: one
    also on a drained node keeps its nodes, one that is not has none) and those they are
    moving already (`moving`: said, not moved again), both in `drain.Stuck.requested`."""
    if not requested and not moving:
        return stuck
    gangs = dict(stuck.gangs)
    for gang in requested:
        gangs.setdefault(gang, ())
    said = {g: set(r) for g, r in (moving or {}).items()}
    for gang, names in requested.items():
        said.setdefault(gang, set()).update(names)
    return drain.Stuck(
        {g: gangs[g] for g in sorted(gangs)},
        stuck.why,
        next_due=stuck.next_due,
        requested={g: tuple(sorted(said[g])) for g in sorted(said)},
    )


def named(requests: Sequence[str]) -> str:
    """`EvictionRequest a, b` (at most `MAX_NAMED`)."""
    shown = ", ".join(requests[:MAX_NAMED])
    more = len(requests) - MAX_NAMED
    return f"EvictionRequest {shown}" + (f" and {more} more" if more > 0 else "")


def _elapsed(since: str, now: str) -> float | None:
    at, then = parse_time(now), parse_time(since)
    if at is None or then is None:
        return None
    return (at - then).total_seconds()


@dataclass
class Reports:
    """The writes to the open Evictions, and when the plan must look again to heartbeat."""

    patches: list[Patch] = field(default_factory=list)
    #: seconds until the next heartbeat falls due (0: none is open)
    requeue_after: float = 0.0


def message_for(
    t: Target, moves: bool, moved: Iterable[int], waiting: Iterable[int]
) -> tuple[str, bool]:
    """(the message for target `t`, whether the responder is done with it)."""
    if t.where == GONE:
        return f"pod {t.pod} is gone: its gang was made again whole elsewhere", True
    if t.where == LEAVING:
        return f"pod {t.pod} is being deleted with the rest of gang {t.gang}", True
    if not moves:
        return (
            "the CliqueSet's nodeDrain.policy is None: gangs are not moved whole; left to "
            "the next responder",
            True,
        )
    if t.withdrawn:
        return f"every requester withdrew: gang {t.gang} stays", False
    if t.gang in set(moved):
        return f"moving gang {t.gang} whole: every pod of it is made again elsewhere", False
    if t.gang in set(waiting):
        return f"gang {t.gang} waits for maxUnavailable to move whole", False
    return f"gang {t.gang} is being made again whole", False


def reports(
    view: View,
    cqs: CliqueSet,
    now: str,
    moved: Iterable[int] = (),
    waiting: Iterable[int] = (),
) -> Reports:
    """The status writes of the responder (module docstring): a heartbeat with the message
    for each open Eviction whose message changed or whose last heartbeat is
    `HEARTBEAT_EVERY` old, with `completionTime` where it is done."""
    out = Reports()
    if not view.served:
        return out
    moves = drain.moves(cqs)
    moved, waiting = list(moved), list(waiting)
    due: list[float] = []
    for t in view.targets:
        message, done = message_for(t, moves, moved, waiting)
        elapsed = _elapsed(t.heartbeat, now) if t.heartbeat else None
        stale = elapsed is None or elapsed >= HEARTBEAT_EVERY
        if not done and not stale:
            due.append(HEARTBEAT_EVERY - (elapsed or 0.0))
        if not done and not stale and message == t.message:
            continue
        entry: dict[str, Any] = {
            "name": labels.LABEL_RESPONDER,
            "heartbeatTime": now,
            "message": message,
        }
        if done:
            entry["completionTime"] = now
        else:
            due.append(HEARTBEAT_EVERY)
        body = {"status": {"responders": [entry]}}
        out.patches.append(
            Patch(
                EVICTIONS,
                t.eviction,
                body,
                patch_type="strategic",
                reason="Eviction",
                sub="status",
                status_neutral=True,  # (the set's status does not wait for it)
                moot_if_stale=True,  # (gone, or canceled meanwhile: nothing to report)
            )
        )
    out.requeue_after = min(due) if due else 0.0
    return out
