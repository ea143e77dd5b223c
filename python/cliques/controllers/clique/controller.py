"""The Clique controller: snapshot → `clique_planner.plan` → `plan_runner`, per key.

It owns one work queue of Clique keys. Events that enqueue a Clique: the Clique itself, its
pods (by controller owner reference), and a change of a Clique it starts after (its siblings
in the gang are looked up through the `gang` index); with `podReadiness: Gang`, for the
Clique that keeps its gang's gates (`clique_planner.keeper`), a change of any Clique of the
gang or of their pods' readiness (`gang_ready`: pods are Ready only while their gang is
whole). Pod watch events satisfy its expectations.

Status writes: a status that only reports progress towards Ready (pods created, not Ready
yet; `clique_planner.progress_only`) is held back for up to `status_hold` seconds, since
in most cases the pods turn Ready within that time and one write then says both. News (a
condition change, a pod that stopped being ready) is written at once, and a held status is
written when its time is up, so the published status is never more than the hold behind.
The hold is `status_hold`, stretched (up to HOLD_STRETCH times) to 1.5x the time this
controller's Cliques have lately taken from their first pods to news: on a control plane
slow to start pods, a write halfway would only say the pods are still on their way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from cliques.api import labels
from cliques.api.clique import Clique, SharedTemplates
from cliques.api.meta import format_now, only_status_changed
from cliques.api.pod import Pod, SharedParts
from cliques.controllers.base import orphaning
from cliques.controllers.base.actions import Patch, Plan
from cliques.controllers.base.executor import Executor
from cliques.controllers.base.plan_runner import PlanRunner
from cliques.controllers.base.revision import Hasher
from cliques.controllers.base.status_hold import StatusHold
from cliques.controllers.base.wiring import Clock, Wiring
from cliques.controllers.clique import planner as clique_planner
from cliques.controllers.features import gang_ready, kueue
from cliques.kube import store
from cliques.kube.events import ObjectRef
from cliques.kube.expectations import Expectations
from cliques.kube.informer import EventKind, Informer
from cliques.kube.objects import controller_uid, key_of
from cliques.kube.resources import CLIQUES, PODS
from cliques.kube.runner import Result
from cliques.kube.watches import Watch
from cliques.kube.workqueue import WorkQueue

NAME = "clique"
#: Work-queue keys of pods to release from Kueue's finalizer (`_release`), not Cliques.
RELEASE = "release:"


def release_key(pod: Pod, owner_uid: str) -> str:
    """The work-queue key of the release of `pod`, controlled by the Clique `owner_uid`:
    `release:<namespace>/<name>@<pod uid>@<Clique uid>` (no name or UID holds an `@`)."""
    return f"{RELEASE}{key_of(pod)}@{pod.metadata.uid}@{owner_uid}"


def parse_release_key(key: str) -> tuple[str, str, str]:
    """(pod key, pod UID, Clique UID) of a `release_key` without its prefix; empty UIDs for
    a key without them, which `kueue.release_of` never releases."""
    pod_key, _, uids = key.partition("@")
    pod_uid, _, owner_uid = uids.partition("@")
    return pod_key, pod_uid, owner_uid


#: The status hold stretches up to this multiple of `status_hold` while pods are slow to
#: turn Ready (`StatusHold`).
HOLD_STRETCH = 12.0


def gang_key(obj: Any) -> list[str]:
    """Index function: `namespace/cliqueset/gang` of a Clique."""
    lab = obj.metadata.labels
    cqs = lab.get(labels.LABEL_CLIQUESET)
    gang = lab.get(labels.LABEL_GANG_INDEX)
    return [f"{obj.metadata.namespace}/{cqs}/{gang}"] if cqs and gang is not None else []


#: The informers the controller reads: the Cliques (indexed by their CliqueSet and by gang)
#: and their pods (by their Clique), those of the process's buckets.
WATCHES: tuple[Watch, ...] = (
    Watch(
        "cliques",
        Clique,
        CLIQUES,
        indexers={"controller": store.by_controller, "gang": gang_key},
        faults=True,
        transform=SharedTemplates,
    ),
    Watch(
        "pods",
        Pod,
        PODS,
        indexers={"controller": store.by_controller},
        faults=True,
        transform=SharedParts,
    ),
)


def _may_change_whole(kind: EventKind, old: Clique | None, new: Clique) -> bool:
    """Whether a Clique's event may change whether its gang is whole, beyond its pods'
    events: it goes, or its spec (replicas), template hash or gang restart count changes.
    (One that joins a gang can only break a whole one: `CliqueController._gates_up`.)"""
    if kind == "DELETED":
        return True
    if kind != "MODIFIED" or old is None:
        return False
    o, n = old.metadata, new.metadata
    key, restarts = labels.LABEL_TEMPLATE_HASH, labels.ANNOTATION_GANG_RESTARTS
    return (
        o.generation != n.generation
        or o.labels.get(key) != n.labels.get(key)
        or o.annotations.get(restarts) != n.annotations.get(restarts)
    )


class CliqueController:
    NAME: ClassVar[str] = NAME
    WATCHES: ClassVar[tuple[Watch, ...]] = WATCHES

    @classmethod
    def wired(cls, informers: Mapping[str, Any], wiring: Wiring) -> CliqueController:
        """The controller on the informers of its `WATCHES` (by name) and what the process
        hands every controller."""
        made = cls(
            informers["cliques"],
            informers["pods"],
            wiring.executor,
            wiring.expectations,
            wiring.hasher,
            owns=wiring.owns,
            status_hold=wiring.status_hold,
            clock=wiring.clock,
            gate_image=wiring.gate_image,
            same_nodes=wiring.same_nodes,
        )
        made.responder = wiring.gang_api.evictions
        return made

    def __init__(
        self,
        cliques: Informer[Clique],
        pods: Informer[Pod],
        executor: Executor,
        expectations: Expectations,
        hasher: Hasher,
        *,
        owns: Callable[[str, str], bool] = lambda ns, name: True,
        status_hold: float = 0.0,
        gate_image: str = "",
        same_nodes: bool = True,
        clock: Clock = format_now,
    ) -> None:
        #: the current time, for the planners' snapshots (`Wiring.clock`)
        self.clock = clock
        self.gate_image = gate_image
        self.same_nodes = same_nodes
        #: the cluster serves Evictions: new pods outside PodGroups name the operator's
        #: responder (`eviction_requests`; set by `wired`, from `Wiring.gang_api`)
        self.responder = False
        #: how long a pod event waits for the next before its Clique is reconciled, s
        self.pod_debounce = 0.25
        self.queue = WorkQueue(NAME, group=self.fair_group)
        #: the timers of the Cliques whose progress-only status is held back
        self.held = StatusHold(
            status_hold,
            self.queue.add,
            clique_planner.progress_only,
            stretch=HOLD_STRETCH,
            name=NAME,
        )
        #: Cliques whose last reconcile found creates or deletes not yet seen
        self._blocked: set[str] = set()
        self.cliques = cliques
        self.pods = pods
        self.expectations = expectations
        self.hasher = hasher
        self.owns = owns
        self.runner = PlanRunner(
            NAME, CLIQUES, Clique, executor, expectations, self._plan, hold=self.held
        )
        #: Cliques whose pod writes the API server refuses (their ReplicaFailure condition)
        self.failures = self.runner.failures
        #: Clique key -> the UID its reconciles last saw (the owner of its expectations)
        self.uids: dict[str, str] = {}
        cliques.add_handler(self._on_clique)
        pods.add_handler(self._on_pod)

    def forget(self, key: str) -> None:
        """The Clique `key` is gone (or going, or another of its name took its place):
        drop everything kept of it, its expectations, held status, refused write and
        blocked mark. The one place that cleans up after a Clique, called by `reconcile`
        when it finds it gone; a new container of per-Clique state is dropped here too
        (tests/unit/test_controller_forget.py finds any that is not)."""
        uid = self.uids.pop(key, None)
        if uid is not None:
            self.expectations.forget(uid)
        self.held.forget(key)
        self._blocked.discard(key)
        self.failures.clear(key)

    def fair_group(self, key: str) -> tuple[str, str]:
        """The unit of fairness of a Clique's key (`WorkQueue.group`): its CliqueSet, in
        its namespace, so that a set of many Cliques competes as one."""
        ns, _, name = key.rpartition("/")
        cq = self.cliques.store.get(key)
        owner = cq.metadata.labels.get(labels.LABEL_CLIQUESET) if cq is not None else None
        return ns, owner or name

    def _owned(self, obj: Any) -> bool:
        parent = obj.metadata.labels.get(labels.LABEL_CLIQUESET)
        return parent is not None and self.owns(obj.metadata.namespace, parent)

    def _on_clique(self, kind: EventKind, old: Any, new: Clique) -> None:
        if not self._owned(new):
            return
        if kind != "MODIFIED" or old is None or not only_status_changed(old, new):
            # A status-only change is this controller's own write: nothing new to plan.
            self.queue.add(key_of(new))
        # A dependency's readiness may have changed: wake the Cliques that wait for it.
        if old is None or old.status != new.status or kind == "DELETED":
            self._wake_dependents(new)
        # A Clique that leaves a gang, joins a whole one or changes its spec or epoch may
        # change whether the gang is whole: the Clique that keeps its gates looks again.
        if _may_change_whole(kind, old, new) or (kind == "ADDED" and self._gates_up(new)):
            self._wake_keeper(new)

    def _wake_dependents(self, clique: Clique) -> None:
        """Enqueue the Cliques of `clique`'s gang that start after it."""
        for key in gang_key(clique):
            for sib in self.cliques.store.by_index("gang", key):
                if clique.metadata.name in sib.spec.starts_after:
                    self.queue.add(key_of(sib))

    def _gang(self, clique: Clique) -> list[Clique]:
        """The Cliques of `clique`'s gang in the cache (itself included)."""
        return [c for key in gang_key(clique) for c in self.cliques.store.by_index("gang", key)]

    def _gates_up(self, clique: Clique) -> bool:
        """Whether some pod of `clique`'s gang has its gang readiness condition True."""
        ns = clique.metadata.namespace
        return any(
            p.gang_ready == "True"
            for c in self._gang(clique)
            for p in self.pods.store.by_index("controller", store.owner_key(ns, c.metadata.uid))
        )

    def _wake_keeper(self, clique: Clique) -> None:
        """With `podReadiness: Gang`, enqueue (debounced) the Clique that keeps the gates of
        `clique`'s gang (`clique_planner.keeper`), if another: whether the gang is whole may
        have changed."""
        if not gang_ready.enabled(clique):
            return
        name = clique_planner.keeper(self._gang(clique))
        if name and name != clique.metadata.name:
            self.queue.add_after(f"{clique.metadata.namespace}/{name}", self.pod_debounce)

    def _on_pod(self, kind: EventKind, old: Any, new: Pod) -> None:
        meta = new.metadata
        owner = controller_uid(new)
        if owner is None:
            return
        own_create = False
        if kind == "DELETED":
            self.expectations.deleted(owner, meta.name)
        else:
            own_create = self.expectations.created(owner, meta.name) and kind == "ADDED"
            if kind == "MODIFIED" and old is not None and clique_planner.same_to_planner(old, new):
                return
        ref = meta.controller_ref()
        if ref is not None and ref.kind == labels.KIND_CLIQUE and self._owned(new):
            key = f"{meta.namespace}/{ref.name}"
            clique = self.cliques.store.get(key)
            if clique is None or clique.metadata.deletion_timestamp is not None:
                # Its Clique is gone (a deletion cascading) or not seen yet (its ADDED event
                # enqueues it): a reconcile would find nothing to do, but a pod going with
                # its Clique is still released from Kueue's finalizer (`kueue`).
                # Only the Clique it names by UID: one being deleted, or one not in the
                # cache (deleted already, or not seen yet).
                going = kind != "DELETED" and meta.deletion_timestamp is not None
                mine = clique is None or clique.metadata.uid == ref.uid
                if going and mine and kueue.release_of(new, meta.uid, ref.uid) is not None:
                    self.queue.add(release_key(new, ref.uid))
                return
            if kind == "DELETED" or old is None or old.containers_ready != new.containers_ready:
                # The Cliques that start after this one judge it by its pods too
                # (`clique_planner.waiting_for`): a Ready pod lost or back wakes them, even
                # where this Clique's status is the same before and after.
                self._wake_dependents(clique)
            if kind == "DELETED" or (
                old is not None and old.containers_ready != new.containers_ready
            ):
                # A gang whose pods are Ready only while it is whole: the Clique that keeps
                # its gates looks again (a new pod, not ready, makes no gang whole).
                self._wake_keeper(clique)
            if own_create and self._only_progress(key, clique, new):
                return
            # Debounced: a pod goes through several updates in quick succession (created,
            # bound, running, ready) and a gang's pods move together; one reconcile (and at
            # most one status write) per Clique per window covers them all.
            self.queue.add_after(key, self.pod_debounce)

    def _only_progress(self, key: str, clique: Clique, pod: Pod) -> bool:
        """Whether the ADDED event of a pod this controller created brings the Clique
        nothing but progress to publish, which the status hold would hold back anyway: then
        it arms the hold's timer instead of waking a reconcile. That is the case when the
        pod is not Ready or finished, no reconcile of the Clique waited for its creates to
        be seen, and the Clique has no status yet or a current one that says Started and
        not Ready (a Ready one turns not Ready when its pods are replaced, and a waiting one
        starts: news, written at once)."""
        if self.held.base <= 0 or key in self._blocked or pod.containers_ready or pod.is_terminal:
            return False
        if clique.status is not None and not clique_planner.clique_starting(clique):
            return False
        self.held.arm(key)
        return True

    def _waiting_for(self, clique: Clique) -> list[str]:
        """The Cliques `clique` starts after that are not Ready for the gang's current
        restart (`clique_planner.waiting_for`)."""
        ns = clique.metadata.namespace
        deps = {dep: self.cliques.store.get(f"{ns}/{dep}") for dep in clique.spec.starts_after}
        pods = {
            name: self.pods.store.by_index("controller", store.owner_key(ns, dep.metadata.uid))
            for name, dep in deps.items()
            if dep is not None
        }
        return clique_planner.waiting_for(clique, deps, pods)

    def _gang_view(self, clique: Clique) -> clique_planner.GangView | None:
        """With `podReadiness: Gang`, for the Clique that keeps its gang's gates
        (`clique_planner.keeper`): the gang's Cliques and their pods in the cache; None for
        any other."""
        if not gang_ready.enabled(clique):
            return None
        gang = self._gang(clique)
        if clique_planner.keeper(gang) != clique.metadata.name:
            return None
        ns = clique.metadata.namespace
        live = tuple(c for c in gang if c.metadata.deletion_timestamp is None)
        pods = {
            c.metadata.name: self.pods.store.by_index(
                "controller", store.owner_key(ns, c.metadata.uid)
            )
            for c in live
        }
        return clique_planner.GangView(live, pods)

    def snapshot(self, clique: Clique) -> clique_planner.CliqueSnapshot:
        uid, ns = clique.metadata.uid, clique.metadata.namespace
        desired = clique.metadata.labels.get(labels.LABEL_TEMPLATE_HASH) or (
            self.hasher.template_hash(clique.spec.template)
        )
        return clique_planner.CliqueSnapshot(
            clique=clique,
            pods=self.pods.store.by_index("controller", store.owner_key(ns, uid)),
            waiting_for=self._waiting_for(clique),
            expectations_satisfied=self.expectations.satisfied(uid),
            template_hash=desired,
            algorithm=self.hasher.algorithm,
            now=self.clock(),
            failure=self.failures.current(key_of(clique), clique.metadata.generation),
            gate_image=self.gate_image,
            responder=self.responder,
            same_nodes=self.same_nodes,
            deleting=self.expectations.pending(uid)[1],
            gang=self._gang_view(clique),
        )

    def _plan(self, clique: Clique) -> Plan:
        return clique_planner.plan(self.snapshot(clique))

    async def _release(self, key: str) -> Result:
        """Take Kueue's finalizer off a pod that goes with its Clique (`kueue.release_of`):
        nothing else of the operator looks at it any more, and Kueue waits for a replacement
        that will not come before it lets the pod go. `key` (`release_key`) names the pod
        and the UIDs of the pod and its Clique as they were seen: a pod of that name read
        now is released only if it is that pod, still that Clique's."""
        pod_key, pod_uid, owner_uid = parse_release_key(key)
        pod = self.pods.store.get(pod_key)
        patch = kueue.release_of(pod, pod_uid, owner_uid)
        if pod is None or patch is None:
            return Result()
        meta = pod.metadata
        release = Patch(PODS, meta.name, patch, patch_type="json", reason="KueueRelease")
        ref = ObjectRef("v1", "Pod", meta.namespace, meta.name, meta.uid)
        await self.runner.executor.execute(Plan(patches=[release]), ref)
        return Result()

    async def reconcile(self, key: str) -> Result:
        if key.startswith(RELEASE):
            return await self._release(key.removeprefix(RELEASE))
        clique = self.cliques.store.get(key)
        if clique is None or clique.metadata.deletion_timestamp is not None:
            if clique is not None and orphaning.orphaning(clique):
                # Its pods let go at once, ahead of the garbage collector (`orphaning`).
                pods = self.pods.store.by_index(
                    "controller", store.owner_key(clique.metadata.namespace, clique.metadata.uid)
                )
                await orphaning.orphan(self.runner.executor, clique, ((PODS, p) for p in pods))
            self.forget(key)
            return Result()
        uid = clique.metadata.uid
        if self.uids.setdefault(key, uid) != uid:
            self.forget(key)  # deleted and made again since its last reconcile
            self.uids[key] = uid
        snap = self.snapshot(clique)
        if snap.expectations_satisfied:
            self._blocked.discard(key)
        else:
            self._blocked.add(key)
        plan = clique_planner.plan(snap)
        satisfied = snap.expectations_satisfied
        return await self.runner.run(key, clique, plan, expectations_satisfied=satisfied)
