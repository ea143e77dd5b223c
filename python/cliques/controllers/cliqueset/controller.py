"""The CliqueSet controller: snapshot → `cliqueset_planner.plan` → `plan_runner`, per key.

It owns one work queue of CliqueSet keys. Events that enqueue a CliqueSet: the CliqueSet
itself, and any of its Cliques, gang Services or Workloads (found by the
`cliques.dev/cliqueset` label). What the cluster serves for gang scheduling (`gang_api`) is
asked once by the process and handed in; the Workload informer exists only where the
cluster serves the Workload API.
It only handles CliqueSets whose bucket this process owns (`owns(namespace, name)`).
Watch events of Cliques and Services also satisfy its expectations.

It keeps what is worth keeping between two plans of a CliqueSet, in one record per
CliqueSet UID (`SetState`, dropped whole when the set goes): the template hashes of its
generation (of the inputs `template_hash.INPUTS` declares: the user's template, with gang
0's placement terms when `spec.placement` asks for any, its claims, a queued set's
revision), and the gang verdicts of its last plan
(`cliqueset_rollout.Judgement`), which the next plan reuses for the gangs whose Cliques are
unchanged.

A CliqueSet whose last plan had nothing to do is not planned again until something the
planner reads changes (`Settled`): its spec (generation), its status, a child (every store
change of a Cliques, Service or Workload it controls counts), its expectations, a refused
write or its `kubernetes.io/change-cause` (which its current revision carries,
`revisions`). A change of its other labels or annotations, which the planner never reads,
then costs a lookup, not a plan of every gang.

A status that only reports a scale's progress (`cliqueset_status.progress_only`) is held
back for up to `status_hold` seconds (`status_hold.StatusHold`), as a Clique's is.

Each plan also sets the set's gang metrics (`gang_metrics`: its gangs desired, whole,
available, updated, restarting, failed and queued, rolls and time until whole), and the
status its informer shows counts its gang restarts; `forget` drops them with the rest.

A set deleted with propagation Orphan has its objects orphaned by the operator at once
(`orphaning`), ahead of a garbage collector that may not know them all yet.
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from cliques import gang_metrics
from cliques.api import labels
from cliques.api.clique import Clique, SharedTemplates
from cliques.api.cliqueset import CliqueSet, CliqueSetSpec
from cliques.api.cliqueset_status import CONDITION_PROGRESSING, CliqueSetStatus
from cliques.api.eviction import Eviction
from cliques.api.hpa import HorizontalPodAutoscaler
from cliques.api.kueue import LocalQueue
from cliques.api.meta import find_condition, format_now, only_status_changed, same_marks
from cliques.api.node import Node
from cliques.api.pod import Pod
from cliques.api.podgroup import PodGroup
from cliques.api.service import Service
from cliques.controllers.base import bounds, failures, orphaning
from cliques.controllers.base.executor import Executor
from cliques.controllers.base.plan_runner import PlanRunner
from cliques.controllers.base.revision import Hasher
from cliques.controllers.base.status_hold import StatusHold
from cliques.controllers.base.wiring import Clock, Wiring
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.cliqueset import rollout as cliqueset_rollout
from cliques.controllers.cliqueset import status as cliqueset_status
from cliques.controllers.cliqueset import template_hash
from cliques.controllers.features import (
    claims,
    drain,
    eviction_requests,
    gang_apis,
    gang_failures,
    gang_scheduling,
    inplace,
    kueue,
    placement,
    revisions,
    scaling,
)
from cliques.kube import gangapi, store
from cliques.kube.expectations import Expectations
from cliques.kube.informer import EventKind, Informer
from cliques.kube.objects import controller_uid, key_of
from cliques.kube.resources import (
    CLIQUES,
    CLIQUESETS,
    SERVICES,
)
from cliques.kube.runner import Result
from cliques.kube.watches import Watch
from cliques.kube.workqueue import WorkQueue

NAME = "cliqueset"
#: Seconds until a set deleted with propagation Orphan is looked at again while creates of
#: its own are not seen yet (`orphaning`).
ORPHAN_RECHECK = 0.2
#: Children whose status the planner does not read from the cache. (Not a
#: CliqueScalingGroup's: a plan that writes one leaves the set's own status to the next
#: reconcile, which the write's watch event starts.)
_STATUS_UNREAD = (HorizontalPodAutoscaler,)


def _unread_change(old: Any, new: Any) -> bool:
    """Whether a child's change is to what the planner does not read: an HPA's status (its
    controller rewrites it every sync), a PodGroup's or CompositePodGroup's (the scheduler
    writes it as it places the gang; the planner decodes no status of theirs, and their
    spec changes move no generation, so the specs themselves are compared)."""
    if isinstance(new, _STATUS_UNREAD):
        return only_status_changed(old, new)
    if isinstance(new, PodGroup) and isinstance(old, PodGroup):
        return bool(old.spec == new.spec and same_marks(old.metadata, new.metadata))
    return False


T = TypeVar("T")


def _gang_view(v: cliqueset_rollout.Verdict) -> gang_metrics.GangView:
    return gang_metrics.GangView(
        whole=v.facts.ready,
        available=v.facts.available,
        updated=v.facts.updated,
        outdated=v.outdated,
    )


def gang_views(
    judged: Mapping[int, tuple[tuple[Clique, ...], cliqueset_rollout.Verdict]], replicas: int
) -> dict[int, gang_metrics.GangView]:
    """The gang metrics' view (`gang_metrics.GangView`) of the gangs below `replicas` a
    plan judged, by gang, in the order judged."""
    return {g: _gang_view(v) for g, (_, v) in judged.items() if g < replicas}


def _stale(cliques: Iterable[Clique], hashes: Mapping[str, str]) -> list[Clique]:
    """The Cliques whose template hash label is not the one their clique's template has
    now (only these may need a rehash, `cliqueset_rollout.needs_rehash`; a clique the spec
    no longer has is not one): one lookup each."""
    label = labels.LABEL_TEMPLATE_HASH
    return [
        c
        for c in cliques
        if hashes.get(c.spec.clique_name, "") not in ("", c.metadata.labels.get(label, ""))
    ]


def moved_or_new(now: Sequence[T], before: Sequence[T]) -> list[T]:
    """The objects of `now` that are not, by identity, the object at the same place in
    `before` (those beyond its length included): what a check of each object of
    `before` does not cover in `now`. Unchanged lists cost a C loop, no Python step."""
    out = list(itertools.compress(now, map(operator.is_not, now, before)))
    if len(now) > len(before):
        out += now[len(before) :]
    return out


#: Child-event windows, as multiples of what the set's last plan cost: planning takes at
#: most ~5% of a core while the set has objects to write or gangs to roll, and ~1% while
#: it only waits for its pods (its status then trails them by at most WAITING_MAX seconds).
BUSY_FACTOR = 20.0
WAITING_FACTOR = 100.0
WAITING_MAX = 10.0


#: The informers the controller reads: the CliqueSets, and the objects they own, selected by
#: the label of the process's buckets and indexed by their controller (Kueue's Workloads by
#: the CliqueSet label Kueue copies from the pods, docs/kueue.md); the LocalQueues, all of
#: them. The gang-scheduling, DRA and Kueue kinds only where the cluster serves them.
WATCHES: tuple[Watch, ...] = (
    Watch("cliquesets", CliqueSet, CLIQUESETS),
    Watch(
        "cliques",
        Clique,
        CLIQUES,
        indexers=store.BY_CONTROLLER,
        faults=True,
        transform=SharedTemplates,
    ),
    Watch("services", Service, SERVICES, indexers=store.BY_CONTROLLER),
    *gang_scheduling.WATCHES,
    *claims.WATCHES,
    *kueue.WATCHES,
    *scaling.WATCHES,
    *revisions.WATCHES,
    *drain.WATCHES,
    *eviction_requests.WATCHES,
)


def child_debounce(cost: float, waiting: bool, floor: float, busy_max: float) -> float:
    """Seconds child events of a CliqueSet are gathered before it reconciles.

    A thousand Cliques changing status at once cost a few reconciles, not a thousand (its
    own events are not delayed). The window is `floor` (half a second by default) and grows
    with what a plan of the set costs, so that planning a big set stays a small share of a
    core however busy its children are: BUSY_FACTOR x `cost` up to `busy_max` while the
    set writes or rolls, WAITING_FACTOR x `cost` up to WAITING_MAX while its last plan only
    waited (`only_waits`). A 5,000-gang set whose plan costs 90 ms then plans every 9 s
    while it waits for its 10,000 pods, not every second.
    """
    if waiting:
        return min(max(WAITING_MAX, busy_max), max(floor, WAITING_FACTOR * cost))
    return min(busy_max, max(floor, BUSY_FACTOR * cost))


def only_waits(
    cqs: CliqueSet, plan: cliqueset_planner.CliqueSetPlan, expectations_satisfied: bool
) -> bool:
    """Whether `plan` writes no object, expects none of its writes to show up in the cache
    and the set is not rolling: all it can do is wait for its children (pods starting,
    gangs turning Ready) and report them."""
    if plan.writes or plan.requeue_after or not expectations_satisfied:
        return False
    status = plan.status or cqs.status
    if status is None:
        return False
    progressing = find_condition(status.conditions, CONDITION_PROGRESSING)
    return progressing is None or progressing.reason != "RollingUpdate"


@dataclasses.dataclass(frozen=True, slots=True)
class Settled:
    """What a plan that had nothing to do saw of its CliqueSet: while all of it is the
    same, planning again would find nothing to do either."""

    uid: str
    generation: int
    #: the count of store changes of its children when the plan began
    children: int
    status: CliqueSetStatus | None
    failure: failures.Failure | None
    #: its change-cause annotation (the one the planner reads: its revision carries it)
    cause: str = ""


@dataclasses.dataclass(slots=True)
class SetState:
    """What the controller keeps of one CliqueSet between its plans, by UID: made by
    `CliqueSetController._state` and dropped by `CliqueSetController.forget`, nowhere
    else, so nothing of a deleted set is left behind."""

    #: store changes of its children seen so far
    children: int = 0
    #: seconds its last plan took (what one more reconcile costs)
    plan_cost: float = 0.0
    #: its last plan only waited on its children (`only_waits`)
    waiting: bool = False
    #: what its last plan saw, when that plan had nothing to do
    settled: Settled | None = None
    #: the generation its template hashes are of, the cliques' hashes, the Kueue revision
    hashes: tuple[int, dict[str, str], str] | None = None
    #: the gang verdicts of its last plan, as the planner returned them
    judgement: cliqueset_rollout.Judgement | None = None
    #: the hashes and Cliques of its last plan when none of them was stale (`_stale`)
    fresh: tuple[dict[str, str], list[Clique]] | None = None
    #: the replicas and verdicts of its last gang metrics, and their views (`_gang_views`)
    views: (
        tuple[
            int,
            Mapping[int, tuple[tuple[Clique, ...], cliqueset_rollout.Verdict]],
            dict[int, gang_metrics.GangView],
        ]
        | None
    ) = None
    #: the spec `bounds.invalid` last judged (the very object), and what it found
    bounds: tuple[CliqueSetSpec, str] | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class SetInformers:
    """The informers of the controller's `WATCHES`: the CliqueSets, their Cliques and
    Services, and those of the kinds a cluster may not serve (None, or no claim informers,
    where it does not)."""

    cliquesets: Informer[CliqueSet]
    cliques: Informer[Clique]
    services: Informer[Service]
    #: each gang feature's informers (`WATCHES` of its module)
    gangs: gang_scheduling.Informers = dataclasses.field(default_factory=gang_scheduling.Informers)
    claims: claims.Informers = dataclasses.field(default_factory=claims.Informers)
    kueue: kueue.Informers = dataclasses.field(default_factory=kueue.Informers)
    scaling: scaling.Informers = dataclasses.field(default_factory=scaling.Informers)
    revisions: revisions.Informers = dataclasses.field(default_factory=revisions.Informers)
    drain: drain.Informers = dataclasses.field(default_factory=drain.Informers)
    evictions: eviction_requests.Informers = dataclasses.field(
        default_factory=eviction_requests.Informers
    )

    @classmethod
    def of(cls, informers: Mapping[str, Any]) -> SetInformers:
        """From the informers of `WATCHES` by name (one the cluster does not serve is
        missing)."""
        return cls(
            informers["cliquesets"],
            informers["cliques"],
            informers["services"],
            gangs=gang_scheduling.Informers.of(informers),
            claims=claims.Informers.of(informers),
            kueue=kueue.Informers.of(informers),
            scaling=scaling.Informers.of(informers),
            revisions=revisions.Informers.of(informers),
            drain=drain.Informers.of(informers),
            evictions=eviction_requests.Informers.of(informers),
        )

    def owned(self) -> tuple[Informer[Any], ...]:
        """The informers of the features' objects a change of which wakes their set."""
        features = (
            self.gangs,
            self.claims,
            self.kueue,
            self.scaling,
            self.revisions,
            self.drain,
            self.evictions,
        )
        return tuple(i for f in features for i in f.owned())


class CliqueSetController:
    NAME: ClassVar[str] = NAME
    WATCHES: ClassVar[tuple[Watch, ...]] = WATCHES

    @classmethod
    def wired(cls, informers: Mapping[str, Any], wiring: Wiring) -> CliqueSetController:
        """The controller on the informers of its `WATCHES` (by name; one the cluster does
        not serve is missing) and what the process hands every controller."""
        return cls(
            SetInformers.of(informers),
            wiring.executor,
            wiring.expectations,
            wiring.hasher,
            owns=wiring.owns,
            gang_api=wiring.gang_api,
            status_hold=wiring.status_hold,
            clock=wiring.clock,
        )

    def __init__(
        self,
        informers: SetInformers,
        executor: Executor,
        expectations: Expectations,
        hasher: Hasher,
        *,
        owns: Callable[[str, str], bool] = lambda ns, name: True,
        child_debounce: float = 0.5,
        max_child_debounce: float = 1.0,
        gang_api: gangapi.GangAPI | None = None,
        status_hold: float = 0.0,
        clock: Clock = format_now,
    ) -> None:
        #: the current time, for the planner's snapshots (`Wiring.clock`)
        self.clock = clock
        #: what the cluster serves for gang scheduling (asked once per process)
        self.gang_api = gang_api or gangapi.GangAPI()
        #: the same, as the planners use it (`gang_apis`)
        self.gang = gang_apis.pick(self.gang_api)
        #: the gang features' informers, which their views are read from
        self.features = informers
        self.child_debounce = child_debounce
        self.max_child_debounce = max_child_debounce
        self.cliquesets = cliquesets = informers.cliquesets
        self.cliques = cliques = informers.cliques
        self.services = services = informers.services
        self.expectations = expectations
        self.executor = executor
        self.hasher = hasher
        self.owns = owns
        self.queue = WorkQueue(NAME)
        #: the timers of the CliqueSets whose progress-only status is held back
        self.held = StatusHold(
            status_hold, self.queue.add, cliqueset_status.progress_only, name=NAME
        )
        #: CliqueSet UID -> what is kept of it between plans (while it is known)
        self.states: dict[str, SetState] = {}
        #: CliqueSet key -> the UID of its record in `states` (what `forget` drops by key)
        self.uids: dict[str, str] = {}
        #: the gang metrics of the sets this controller reconciles
        self.gang_metrics = gang_metrics.SetTable()
        self.runner = PlanRunner(
            NAME, CLIQUESETS, CliqueSet, executor, expectations, self._plan, hold=self.held
        )
        #: CliqueSets whose writes the API server refuses (their ReplicaFailure condition)
        self.failures = self.runner.failures
        cliquesets.add_handler(self._on_cliqueset)
        cliques.add_handler(self._on_child)
        services.add_handler(self._on_child)
        for informer in informers.owned():
            informer.add_handler(self._on_child)
        if informers.kueue.local_queues is not None:
            informers.kueue.local_queues.add_handler(self._on_local_queue)
        if informers.drain.nodes is not None:
            informers.drain.nodes.add_handler(self._on_node)
        if informers.evictions.served:
            assert informers.evictions.evictions is not None
            assert informers.evictions.pods is not None
            informers.evictions.evictions.add_handler(self._on_eviction)
            informers.evictions.pods.add_handler(self._on_eviction_target)

    # -- event handlers (enqueue only) ------------------------------------------------------

    def _on_cliqueset(self, kind: EventKind, old: Any, new: CliqueSet) -> None:
        meta = new.metadata
        if not self.owns(meta.namespace, meta.name):
            return
        if kind != "DELETED" and new.status is not None:
            self.gang_metrics.restarts_seen(meta.namespace, meta.name, new.status.gang_restarts)
        if kind == "MODIFIED" and old is not None and only_status_changed(old, new):
            # Its status is written by this controller alone, from a plan that already saw
            # everything the new status says: reconciling again would find nothing to do.
            return
        self.queue.add(key_of(new))

    def _on_local_queue(self, kind: EventKind, old: Any, new: LocalQueue) -> None:
        """A LocalQueue made or deleted: the sets of its namespace queued to it (its status,
        which Kueue rewrites on every admission, changes nothing the planner reads)."""
        if kind == "MODIFIED":
            return
        ns, name = new.metadata.namespace, new.metadata.name
        for cqs in self.cliquesets.store.objects():
            meta = cqs.metadata
            queued = meta.namespace == ns and meta.labels.get(kueue.QUEUE_LABEL) == name
            if queued and self.owns(ns, meta.name):
                self.queue.add(key_of(cqs))

    def _on_node(self, kind: EventKind, old: Any, new: Node) -> None:
        """A Node's cordon or taints changed (or it came or went): the sets with pods on it,
        found by the pod informer's node index (`drain`), plan again. Its status and
        heartbeats change nothing here and wake no set."""
        if kind == "MODIFIED" and not drain.changed(old, new):
            return
        for key in drain.sets_on(self.features.drain.pods_on(new.metadata.name)):
            ns, _, name = key.partition("/")
            if not self.owns(ns, name):
                continue
            cqs = self.cliquesets.store.get(key)
            state = self.states.get(cqs.metadata.uid) if cqs is not None else None
            if state is not None:
                state.children += 1  # (what the planner reads changed: not settled)
            self.queue.add(key)

    def _on_eviction(self, kind: EventKind, old: Any, new: Eviction) -> None:
        """An Eviction that names the operator's responder: the set of its target pod plans
        again (when the responder is or was active for it)."""
        was = old is not None and eviction_requests.open_for_us(old)
        if not (was or eviction_requests.open_for_us(new)):
            return
        self._wake(self.features.evictions.set_of(new))

    def _on_eviction_target(self, kind: EventKind, old: Any, new: Pod) -> None:
        """A pod an open Eviction targets changed or went: its set plans again (to report
        the pod gone, `eviction_requests.reports`)."""
        if kind == "ADDED":
            return
        for eviction in self.features.evictions.targets_of(key_of(new)):
            if eviction_requests.open_for_us(eviction):
                self._wake(self.features.evictions.set_of(eviction))

    def _wake(self, key: str) -> None:
        """The set `key` plans again, as after a change of what its planner reads."""
        ns, _, name = key.partition("/")
        if not key or not self.owns(ns, name):
            return
        cqs = self.cliquesets.store.get(key)
        state = self.states.get(cqs.metadata.uid) if cqs is not None else None
        if state is not None:
            state.children += 1  # (what the planner reads changed: not settled)
        self.queue.add(key)

    def _on_child(self, kind: EventKind, old: Any, new: Any) -> None:
        meta = new.metadata
        owner = controller_uid(new)
        for uid in {owner, controller_uid(old) if old is not None else None}:
            state = self.states.get(uid) if uid is not None else None
            if state is not None:
                state.children += 1
        if owner is not None:
            if kind == "DELETED":
                self.expectations.deleted(owner, meta.name)
            else:
                self.expectations.created(owner, meta.name)
                h = meta.labels.get(labels.LABEL_TEMPLATE_HASH)
                if h:
                    self.expectations.created(owner, f"{meta.name}@{h}")
                restart = gang_failures.observed_token(meta)
                if restart is not None:
                    self.expectations.created(owner, restart)
                renumbered = revisions.observed_token(new)
                if renumbered is not None:
                    self.expectations.created(owner, renumbered)
        if kind == "MODIFIED" and old is not None and _unread_change(old, new):
            return
        parent = meta.labels.get(labels.LABEL_CLIQUESET)
        if parent and self.owns(meta.namespace, parent):
            key = f"{meta.namespace}/{parent}"
            self.queue.add_after(key, self.debounce(key))

    def debounce(self, key: str) -> float:
        """How long child events of CliqueSet `key` are gathered before it reconciles
        (`child_debounce`, from what its last plan cost and whether it only waited)."""
        cqs = self.cliquesets.store.get(key)
        state = self.states.get(cqs.metadata.uid) if cqs is not None else None
        return child_debounce(
            state.plan_cost if state is not None else 0.0,
            state is not None and state.waiting,
            self.child_debounce,
            self.max_child_debounce,
        )

    # -- what is kept of a CliqueSet --------------------------------------------------------

    def _state(self, cqs: CliqueSet) -> SetState:
        """What is kept of `cqs` between plans (made here, the first time it is asked; what
        a set of the same name before it left is forgotten then)."""
        uid = cqs.metadata.uid
        state = self.states.get(uid)
        if state is None:
            key = key_of(cqs)
            if self.uids.get(key, uid) != uid:
                self.forget(key)
            state = self.states[uid] = SetState()
            self.uids[key] = uid
        return state

    def forget(self, key: str) -> None:
        """The CliqueSet `key` is gone (or going, or another of its name took its place):
        drop everything kept of it, its record, expectations, held status and refused
        write. The one place that cleans up after a set, called by `reconcile` when it
        finds it gone; a new container of per-set state is dropped here too
        (tests/unit/test_controller_forget.py finds any that is not)."""
        uid = self.uids.pop(key, None)
        if uid is not None:
            self.states.pop(uid, None)
            self.expectations.forget(uid)
        self.held.forget(key)
        self.failures.clear(key)
        self.gang_metrics.forget(key)

    def close(self) -> None:
        """The controller stops (its Manager ends): the gang metrics of its sets go."""
        self.gang_metrics.close()

    # -- reconcile --------------------------------------------------------------------------

    def _hashes(self, cqs: CliqueSet) -> tuple[dict[str, str], str]:
        """Each clique's template hash, and for a set Kueue queues the gangs' revision
        (`kueue.revision`), which every hash then covers: a queued gang is what Kueue
        admitted, so any change of it replaces it whole (`template_hash`, its inputs)."""
        state = self._state(cqs)
        generation = cqs.metadata.generation
        if state.hashes is None or state.hashes[0] != generation:
            hashes, rev = template_hash.hashes(cqs, self.hasher)
            state.hashes = (generation, hashes, rev)
        return state.hashes[1], state.hashes[2]

    def _out_of_bounds(self, cqs: CliqueSet) -> str:
        """`bounds.invalid(cqs)` (a pure function of the spec), judged again only for
        another spec object than the one it last judged: it encodes every pod template to
        count their bytes, and the set's plans between two of its own watch events read
        the same object. (Comparing specs by value costs as much as judging them.)"""
        state = self._state(cqs)
        spec = cqs.spec
        if state.bounds is None or state.bounds[0] is not spec:
            state.bounds = (spec, bounds.invalid(cqs))
        return state.bounds[1]

    def _rehashes(
        self,
        cqs: CliqueSet,
        cliques: list[Clique],
        hashes: dict[str, str],
        stale: list[Clique] | None = None,
    ) -> dict[str, str]:
        """The hashes under the current algorithm of the Cliques that need one (a ValueError
        of a template the canonical form refuses fails the reconcile); only `stale` may
        (`_stale`, of `cliques` unless given). A Clique's template carries its gang's
        placement terms: they are swapped for gang 0's, as in `placement.hash_basis`, and
        the claim entries the operator added are left out, as in `claims.hash_basis`."""
        algorithm = self.hasher.algorithm
        where, name = cqs.spec.placement, cqs.metadata.name
        if stale is None:
            stale = _stale(cliques, hashes)
        return {
            c.metadata.name: self.hasher.template_hash(
                dict(
                    placement.regang(
                        kueue.unresolve(claims.unresolve(c.spec.template)),
                        where,
                        name,
                        c.spec.gang_index,
                    )
                )
            )
            for c in stale
            if cliqueset_rollout.needs_rehash(c, hashes, algorithm)
        }

    def _stale_of(
        self, cqs: CliqueSet, cliques: list[Clique], hashes: dict[str, str]
    ) -> list[Clique]:
        """`_stale(cliques, hashes)`, reading only the Cliques that are not where they were
        in the last plan's list (`moved_or_new`) when that plan found none stale under the
        same hashes: the same object under the same hashes is as fresh as it was. A set
        waiting for its Cliques' statuses then reads the one or two that changed."""
        state = self._state(cqs)
        last = state.fresh
        check = (
            moved_or_new(cliques, last[1]) if last is not None and last[0] is hashes else cliques
        )
        stale = _stale(check, hashes)
        if stale and check is not cliques:
            stale = _stale(cliques, hashes)  # (in the order of the list, as the definition)
        state.fresh = (hashes, list(cliques)) if not stale else None
        return stale

    def snapshot(self, cqs: CliqueSet) -> cliqueset_planner.CliqueSetSnapshot:
        """What the planner sees of `cqs`: its Cliques and Services from the cache, and the
        gang verdicts of its last plan (reused for the gangs whose Cliques are unchanged)."""
        uid = cqs.metadata.uid
        owner = store.owner_key(cqs.metadata.namespace, uid)
        cliques = self.cliques.store.by_index("controller", owner)
        # A set that asks for more Cliques, pods or bytes of templates than one set may
        # (`bounds`), or a template the canonical form refuses, is an InvalidSpec.
        hashes: dict[str, str] = {}
        revision = ""
        invalid = self._out_of_bounds(cqs)
        if not invalid:
            try:
                hashes, revision = self._hashes(cqs)
            except ValueError as exc:
                invalid = f"invalid pod template: {exc}"
        return cliqueset_planner.CliqueSetSnapshot(
            cliqueset=cqs,
            cliques=cliques,
            services=self.services.store.by_index("controller", owner),
            hashes=hashes,
            rehashes=(
                self._rehashes(cqs, cliques, hashes, self._stale_of(cqs, cliques, hashes))
                if not invalid
                else {}
            ),
            algorithm=self.hasher.algorithm,
            expectations_satisfied=self.expectations.satisfied(uid),
            now=self.clock(),
            previous=self._state(cqs).judgement,
            failure=self.failures.current(key_of(cqs), cqs.metadata.generation),
            invalid=invalid,
            gangs=self.features.gangs.view(owner, self.gang),
            claims=self.features.claims.view(owner),
            kueue=self.features.kueue.view(cqs, revision),
            scaling=self.features.scaling.view(owner),
            inplace=inplace.View(resize_served=self.gang_api.resize),
            revisions=self.features.revisions.view(owner),
            drain=self.features.drain.view(cqs, owner),
            evictions=self.features.evictions.view(cqs),
        )

    async def _orphan(self, cqs: CliqueSet) -> None:
        """Remove `cqs`, deleted with propagation Orphan, from the owner references of the
        objects it controls, ahead of the garbage collector (`orphaning`)."""
        meta = cqs.metadata
        owner = store.owner_key(meta.namespace, meta.uid)
        informers: tuple[Informer[Any], ...] = (
            self.cliques,
            self.services,
            *self.features.owned(),
        )
        await orphaning.orphan(
            self.executor,
            cqs,
            (
                (i.resource, obj)
                for i in informers
                if i.store.indexed_by("controller")
                for obj in i.store.by_index("controller", owner)
            ),
        )

    def _plan(self, cqs: CliqueSet) -> cliqueset_planner.CliqueSetPlan:
        """Plan for `cqs` as the cache shows it now."""
        return self._planned(self.snapshot(cqs))

    def _planned(
        self, snap: cliqueset_planner.CliqueSetSnapshot
    ) -> cliqueset_planner.CliqueSetPlan:
        """The plan of `snap`; its verdicts are kept for the next plan."""
        plan = cliqueset_planner.plan(snap)
        if plan.judgement is not None:
            self._state(snap.cliqueset).judgement = plan.judgement
        return plan

    def _observe(self, cqs: CliqueSet, plan: cliqueset_planner.CliqueSetPlan) -> None:
        """The set's gang metrics from what this plan found (`gang_metrics`)."""
        meta, replicas = cqs.metadata, cqs.spec.replicas
        judged = plan.judgement.gangs if plan.judgement is not None else {}
        gangs = self._gang_views(cqs, judged)
        status = plan.status or cqs.status
        queue = status.queue if status is not None else None
        if cqs.status is not None:
            self.gang_metrics.restarts_seen(meta.namespace, meta.name, cqs.status.gang_restarts)
        self.gang_metrics.observe(
            meta.namespace,
            meta.name,
            desired=replicas,
            gangs=gangs,
            restarting=len(plan.restarting),
            moving=len([g for g in plan.moving if g < replicas]),
            failed=len(plan.failed),
            queued=max(0, replicas - queue.admitted_gangs) if queue is not None else 0,
        )

    def _gang_views(
        self,
        cqs: CliqueSet,
        judged: Mapping[int, tuple[tuple[Clique, ...], cliqueset_rollout.Verdict]],
    ) -> dict[int, gang_metrics.GangView]:
        """The gang metrics' view of gangs `0..replicas-1` as judged: `gang_views`, taken
        from the last plan's where its verdicts are the very ones of this plan (a verdict
        handed on, `rollout.judge_gangs`: only the gangs judged again are read)."""
        state = self._state(cqs)
        replicas = cqs.spec.replicas
        last = state.views
        if last is not None and last[0] == replicas and list(last[1]) == list(judged):
            views = dict(last[2])
            keys = list(judged)
            for g in itertools.compress(
                keys, map(operator.is_not, judged.values(), last[1].values())
            ):
                if g < replicas:
                    views[g] = _gang_view(judged[g][1])
        else:
            views = gang_views(judged, replicas)
        state.views = (replicas, judged, views)
        return dict(views)

    async def reconcile(self, key: str) -> Result:
        cqs = self.cliquesets.store.get(key)
        if cqs is None or cqs.metadata.deletion_timestamp is not None:
            if cqs is not None and orphaning.orphaning(cqs):
                await self._orphan(cqs)
                if not self.expectations.satisfied(cqs.metadata.uid):
                    # Creates of its own not seen yet: orphaned too once they are.
                    return Result(requeue_after=ORPHAN_RECHECK)
            self.forget(key)
            return Result()
        uid = cqs.metadata.uid
        state = self._state(cqs)
        settled = Settled(
            uid,
            cqs.metadata.generation,
            state.children,
            cqs.status,
            self.failures.current(key, cqs.metadata.generation),
            cqs.metadata.annotations.get(revisions.CHANGE_CAUSE, ""),
        )
        if state.settled == settled and self.expectations.satisfied(uid):
            return Result()  # nothing the planner reads has changed since it had nothing to do
        state.settled = None
        started = time.perf_counter()
        snap = self.snapshot(cqs)
        plan = self._planned(snap)
        state.plan_cost = time.perf_counter() - started
        self._observe(cqs, plan)
        state.waiting = only_waits(cqs, plan, snap.expectations_satisfied)
        satisfied = snap.expectations_satisfied
        result = await self.runner.run(key, cqs, plan, expectations_satisfied=satisfied)
        if (
            satisfied
            and not (plan.writes or plan.events or plan.requeue_after)
            and state.children == settled.children
        ):
            if plan.status is None:
                state.settled = settled
            elif key not in self.held:
                # Its status was written (and is in the cache): that is all it had to do.
                now = self.cliquesets.store.get(key)
                if now is not None and now.metadata.uid == uid and now.status == plan.status:
                    state.settled = dataclasses.replace(settled, status=now.status)
        return result
