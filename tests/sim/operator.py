"""The operator, simulated around its real controllers.

`SimOperator` builds the production `CliqueSetController` and `CliqueController` (so
their snapshots, the planners, the hashes, the `Judgement` kept between plans, the
expectations, the executor, the status writes and their 409 retries are the operator's
own code) and gives them:

- informers (`SimInformer`): the production `Store` with the production indexers, fed
  from the cluster's watch log, calling the controllers' own event handlers; the
  executor's write-through (`observe_write`) as in production;
- work queues (`SimQueue`): the handlers' `add` and debounced `add_after` mark a key for
  the next round of the current second (debounce windows collapse to nothing); a
  reconcile's `requeue_after` is honoured on the simulated clock; a failed reconcile is
  retried with the work queue's exponential backoff (5 ms doubling; under a second it is
  the next round);
- an API client (`SimClient`, a `kube.protocol.Client` like the real one) that is the
  simulated API server, with the controller's name as the actor of every write;
- an executor (`SimExecutor`, the production one) that first tells the cluster the reason
  of each delete and patch for the history;
- the simulated clock: the controllers are built by their own `wired` from a `Wiring`
  whose `clock` is the cluster's (`Cluster.stamp`), and the expectations count on it too.

At each instant `settle` runs rounds: deliver the watch events (the handlers enqueue
keys), reconcile every queued CliqueSet then every queued Clique (or, with `shuffle`, all
of them in a random order), until no key is queued or due and the caches are up to date.
With `lag` the watch events of a round reach the caches only at the next one. The status hold is off
(`status_hold=0`). An operator restart is a new `SimOperator` on the same cluster:
queues, expectations, verdicts and refused-write memories are lost, and the initial lists
enqueue everything.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast

import msgspec

from cliques.api.clique import Clique, SharedTemplates
from cliques.api.cliqueset import CliqueSet
from cliques.api.controllerrevision import ControllerRevision
from cliques.api.node import Node
from cliques.api.pdb import PodDisruptionBudget
from cliques.api.pod import Pod
from cliques.api.podgroup import PodGroup
from cliques.api.service import Service
from cliques.api.workload import Workload
from cliques.controllers.base.actions import Plan
from cliques.controllers.base.executor import ExecutionError, Executor
from cliques.controllers.base.revision import Hasher
from cliques.controllers.base.wiring import Wiring
from cliques.controllers.clique import controller as clique_controller
from cliques.controllers.clique.controller import CliqueController
from cliques.controllers.cliqueset import controller as cliqueset_controller
from cliques.controllers.cliqueset.controller import CliqueSetController
from cliques.controllers.features import drain, start_gate
from cliques.kube import errors, store
from cliques.kube.events import ObjectRef
from cliques.kube.expectations import Expectations
from cliques.kube.gangapi import GangAPI
from cliques.kube.objects import key_of
from cliques.kube.resources import Resource
from tests.sim.cluster import Cluster, seconds_of

T = TypeVar("T")
Handler = Callable[[str, Any, Any], None]

#: Rounds of reconciles at one instant before the operator is declared not quiescent (the
#: rest waits for the next second).
MAX_ROUNDS = 40


class SimulatorError(Exception):
    """The simulation itself is wrong (not the operator): e.g. a status stamped with the wall
    clock."""


class OperatorError(Exception):
    """A reconcile raised something no API failure explains (a planner crashed)."""


class SimInformer(Generic[T]):
    """An informer over the cluster's watch log: the production `Store` and the
    production dispatch rules (a version not newer than the cached one is skipped)."""

    def __init__(
        self,
        cluster: Cluster,
        kind: str,
        type_: type[T],
        indexers: dict[str, Any] | None = None,
        transform: Callable[[T], T] | None = None,
    ) -> None:
        self.cluster = cluster
        self.kind = kind
        self.store: store.Store[Any] = store.Store(indexers)
        self._decode: Callable[[bytes], T] = msgspec.json.Decoder(type_).decode
        self._transform = transform
        self._handlers: list[Handler] = []
        self._pos = 0

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    def _typed(self, raw: bytes) -> Any:
        obj = self._decode(raw)
        return self._transform(obj) if self._transform is not None else obj

    def _dispatch(self, kind: str, old: Any, new: Any) -> None:
        for handler in self._handlers:
            handler(kind, old, new)

    def start(self) -> None:
        """The initial list: every object is ADDED."""
        for obj in self.cluster.objects_of(self.kind):
            typed = self._typed(msgspec.json.encode(obj))
            self.store.upsert(typed)
            self._dispatch("ADDED", None, typed)
        self._pos = len(self.cluster.watch_log)

    @property
    def behind(self) -> bool:
        return self._pos < len(self.cluster.watch_log)

    def sync(self, upto: int | None = None) -> None:
        """Deliver the watch events since the last sync (up to position `upto`)."""
        for pos, event in self.cluster.events_since(self._pos):
            if upto is not None and pos > upto:
                break
            self._pos = pos
            if event.kind != self.kind:
                continue
            obj = self._typed(event.raw)
            key = key_of(obj)
            if event.type == "DELETED":
                old = self.store.remove(key)
                self._dispatch("DELETED", old if old is not None else obj, obj)
                continue
            old = self.store.get(key)
            if old is not None and int(old.metadata.resource_version) >= int(
                obj.metadata.resource_version
            ):
                continue  # already known through the write-through
            self.store.upsert(obj)
            self._dispatch("MODIFIED" if old is not None else "ADDED", old, obj)

    def observe_write(self, raw: bytes) -> None:
        """The executor's write-through of an object it updated."""
        obj = self._typed(raw)
        old = self.store.get(key_of(obj))
        if old is None or int(obj.metadata.resource_version) <= int(old.metadata.resource_version):
            return
        self.store.upsert(obj)
        self._dispatch("MODIFIED", old, obj)


class SimQueue:
    """A work queue: keys marked for the next round, in the order they came."""

    def __init__(self) -> None:
        self.keys: dict[str, None] = {}

    def add(self, key: str) -> None:
        self.keys[key] = None

    def add_after(self, key: str, delay: float) -> None:
        self.add(key)  # debounce windows collapse: the next round sees every event anyway

    def drain(self) -> list[str]:
        keys = list(self.keys)
        self.keys.clear()
        return keys


class SimClient:
    """The API client of one controller: the simulated API server, as `actor`. A
    `kube.protocol.Client`, as the executor takes it (mypy checks tests/sim)."""

    def __init__(self, cluster: Cluster, actor: str) -> None:
        self.cluster = cluster
        self.actor = actor

    @staticmethod
    def _as(obj: dict[str, Any], type_: type[T]) -> T:
        return msgspec.json.decode(msgspec.json.encode(obj), type=type_)

    async def create(
        self,
        resource: Resource,
        namespace: str | None,
        obj: Any,
        type_: type[T],
        *,
        sub: str = "",
        name: str | None = None,
    ) -> T:
        # Over the wire as JSON, as the real client sends it (a body may hold raw bytes).
        body = msgspec.json.decode(msgspec.json.encode(obj))
        return self._as(self.cluster.create(self.actor, resource.kind, body), type_)

    async def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        patch: Any,
        type_: type[T],
        *,
        patch_type: str = "merge",
        sub: str = "",
        force: bool = False,
    ) -> T:
        if sub == "status":
            self._check_times(patch)
        new = self.cluster.patch(
            self.actor, resource.kind, name, patch, patch_type=patch_type, sub=sub
        )
        return self._as(new, type_)

    async def delete(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation: str = "Background",
    ) -> None:
        self.cluster.delete(self.actor, resource.kind, name, uid=uid)

    async def get(self, resource: Resource, namespace: str | None, name: str, type_: type[T]) -> T:
        obj = self.cluster.get(resource.kind, name)
        if obj is None:
            raise errors.NotFound(404, "NotFound", f"{resource.kind} {name} not found")
        return self._as(obj, type_)

    async def request(
        self,
        verb: str,
        resource: Resource,
        *,
        namespace: str | None = None,
        name: str | None = None,
        **_: Any,
    ) -> bytes:
        if verb != "get" or name is None:
            raise SimulatorError(f"the simulated client does not serve {verb} {resource.kind}")
        obj = self.cluster.get(resource.kind, name)
        if obj is None:
            raise errors.NotFound(404, "NotFound", f"{resource.kind} {name} not found")
        return msgspec.json.encode(obj)

    def _check_times(self, patch: Any) -> None:
        """Every condition written carries a simulated time (not the wall clock's)."""
        status = patch.get("status") if isinstance(patch, dict) else None
        for cond in (status or {}).get("conditions") or ():
            t = seconds_of(str(cond.get("lastTransitionTime", "")))
            if t is None or not 0 <= t <= self.cluster.now:
                raise SimulatorError(
                    f"a status condition carries {cond.get('lastTransitionTime')!r}, not the "
                    f"simulated time (t={self.cluster.now}s): the planners got another clock"
                )


class SimRecorder:
    """Events, into the history."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def record(self, ref: ObjectRef, type_: str, reason: str, message: str) -> None:
        self.cluster.history.add(
            self.cluster.now, "event", f"{type_} {reason} {ref.name}: {message}"
        )
        self.cluster.count(f"event {reason}")


class SimExecutor(Executor):
    """The production executor; it tells the cluster why each write is made."""

    def __init__(
        self,
        cluster: Cluster,
        client: SimClient,
        expectations: Expectations,
        recorder: SimRecorder,
        written: Callable[[Resource, bytes], None],
    ) -> None:
        super().__init__(client, expectations, cast(Any, recorder), parallelism=32, written=written)
        self.cluster = cluster

    async def execute(self, plan: Plan, ref: ObjectRef) -> None:
        reasons = self.cluster.reasons
        for d in plan.deletes:
            reasons[("delete", d.resource.kind, d.name)] = d.reason
        for p in plan.patches:
            reasons[("patch", p.resource.kind, p.name)] = p.reason
        try:
            await super().execute(plan, ref)
        finally:
            reasons.clear()


class SimOperator:
    """One incarnation of the operator (a restart is a new one)."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        gang_api: str = "",
        shuffle: random.Random | None = None,
        lag: bool = False,
        drains: bool = False,
    ) -> None:
        self.cluster = cluster
        #: watch events reach the caches one round late (the write-through still works):
        #: a reconcile may not see the pods its Clique's last one created, nor the world's
        #: latest changes, and must rely on its expectations
        self.lag = lag
        self._mark = 0
        #: when given, each round reconciles its keys in a random order (CliqueSets and
        #: Cliques mixed), as two controllers running side by side would: a Clique's status
        #: write can then come between the CliqueSet's read and its guarded patches (409s)
        self.shuffle = shuffle
        clock = lambda: float(cluster.now)  # noqa: E731
        self.cqs_exp = Expectations(cliqueset_controller.NAME, ttl=300.0, clock=clock)
        self.cq_exp = Expectations(clique_controller.NAME, ttl=300.0, clock=clock)
        ctl = store.by_controller
        inf: dict[str, SimInformer[Any]] = {
            "CliqueSet": SimInformer(cluster, "CliqueSet", CliqueSet),
            "Clique": SimInformer(
                cluster,
                "Clique",
                Clique,
                {"controller": ctl, "gang": clique_controller.gang_key},
                transform=SharedTemplates(),
            ),
            "Pod": SimInformer(cluster, "Pod", Pod, {"controller": ctl, "node": drain.by_node}),
            "Service": SimInformer(cluster, "Service", Service, {"controller": ctl}),
            "ControllerRevision": SimInformer(
                cluster, "ControllerRevision", ControllerRevision, {"controller": ctl}
            ),
        }
        if gang_api:
            inf["Workload"] = SimInformer(cluster, "Workload", Workload, {"controller": ctl})
        if gang_api in ("v1alpha2", "v1beta1"):
            inf["PodGroup"] = SimInformer(cluster, "PodGroup", PodGroup, {"controller": ctl})
        if drains:
            inf["Node"] = SimInformer(cluster, "Node", Node)
            inf["PodDisruptionBudget"] = SimInformer(
                cluster, "PodDisruptionBudget", PodDisruptionBudget, {"controller": ctl}
            )
        self.informers = inf

        def written(resource: Resource, raw: bytes) -> None:
            informer = inf.get(resource.kind)
            if informer is not None:
                informer.observe_write(raw)

        recorder = SimRecorder(cluster)
        hasher = Hasher()

        def wiring(actor: str, expectations: Expectations) -> Wiring:
            client = SimClient(cluster, actor)
            return Wiring(
                SimExecutor(cluster, client, expectations, recorder, written),
                expectations,
                hasher,
                owns=lambda ns, name: True,
                gang_api=GangAPI(gang_api, drain=drains),
                status_hold=0.0,
                gate_image=start_gate.default_image(),
                clock=cluster.stamp,
            )

        by_name = {
            "cliquesets": inf["CliqueSet"],
            "cliques": inf["Clique"],
            "services": inf["Service"],
            "controller_revisions": inf["ControllerRevision"],
            "pods": inf["Pod"],
            **({"workloads": inf["Workload"]} if gang_api else {}),
            **({"pod_groups": inf["PodGroup"]} if "PodGroup" in inf else {}),
            **(
                {"nodes": inf["Node"], "pod_disruption_budgets": inf["PodDisruptionBudget"]}
                if drains
                else {}
            ),
        }
        self.cqs = CliqueSetController.wired(by_name, wiring("op:set", self.cqs_exp))
        self.cq = CliqueController.wired(by_name, wiring("op:clique", self.cq_exp))
        self.queues = {"CliqueSet": SimQueue(), "Clique": SimQueue()}
        self.cqs.queue = cast(Any, self.queues["CliqueSet"])
        self.cq.queue = cast(Any, self.queues["Clique"])
        #: (kind, key) -> the second a requeue or a retry falls due
        self.due: dict[tuple[str, str], int] = {}
        self._failures: dict[tuple[str, str], int] = {}
        self.reconciles = 0
        for informer in inf.values():
            informer.start()

    def next_due(self) -> int | None:
        later = [t for t in self.due.values() if t > self.cluster.now]
        if any(q.keys for q in self.queues.values()):
            later.append(self.cluster.now + 1)
        return min(later) if later else None

    def _schedule(self, kind: str, key: str, seconds: float) -> None:
        if seconds < 1.0:
            self.queues[kind].add(key)
            return
        when = self.cluster.now + math.ceil(seconds)
        self.due[(kind, key)] = min(self.due.get((kind, key), when), when)

    async def _reconcile(self, kind: str, key: str) -> None:
        ctl: CliqueSetController | CliqueController = self.cqs if kind == "CliqueSet" else self.cq
        self.reconciles += 1
        try:
            result = await ctl.reconcile(key)
        except (ExecutionError, errors.ApiError) as exc:
            n = self._failures[(kind, key)] = self._failures.get((kind, key), 0) + 1
            self.cluster.history.add(self.cluster.now, "operator", f"reconcile {key} failed: {exc}")
            self.cluster.count("failed reconcile")
            self._schedule(kind, key, min(300.0, 0.005 * 2 ** (n - 1)))
            return
        except Exception as exc:
            raise OperatorError(f"reconcile of {kind} {key} raised {exc!r}") from exc
        self._failures.pop((kind, key), None)
        if result.requeue_after > 0:
            self._schedule(kind, key, max(1.0, result.requeue_after))

    async def settle(self, before_round: Callable[[], None]) -> bool:
        """Reconcile until nothing is queued or due at this instant; False if it took more
        than MAX_ROUNDS rounds. `before_round` runs first in every round (the scheduler)."""
        now = self.cluster.now
        for _ in range(MAX_ROUNDS):
            before_round()
            mark = len(self.cluster.watch_log)
            for informer in self.informers.values():
                informer.sync(self._mark if self.lag else None)
            self._mark = mark
            for (kind, key), when in list(self.due.items()):
                if when <= now:
                    del self.due[(kind, key)]
                    self.queues[kind].add(key)
            work = {kind: q.drain() for kind, q in self.queues.items()}
            if not any(work.values()):
                if any(i.behind for i in self.informers.values()):
                    continue  # the events still on their way come next round
                return True
            self.cluster.round += 1
            order = [(kind, key) for kind in ("CliqueSet", "Clique") for key in work[kind]]
            if self.shuffle is not None:
                self.shuffle.shuffle(order)
            for kind, key in order:
                await self._reconcile(kind, key)
        self.cluster.history.add(now, "operator", f"not quiescent after {MAX_ROUNDS} rounds")
        self.cluster.count("not quiescent")
        return False

    def describe(self) -> str:
        pending = sorted(f"{k}:{key}@{t}" for (k, key), t in self.due.items())
        return f"requeues {', '.join(pending) or 'none'}"
