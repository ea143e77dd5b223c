"""`cliques bench sim-scale`: the operator's real controllers deploying up to 100,000 pods
against a simulated API server, on a virtual clock, with their CPU per pod and peak RSS.

What is real: the production `CliqueSetController` and `CliqueController`, built by their
own `wired` from the informers their `WATCHES` declare (merged as the Manager merges
them, the production `Store` and indexers, the `SharedTemplates` transform), their work
queues (`kube.workqueue.WorkQueue`, debounce windows and backoff included) and runners
(`kube.runner.Runner`, 16 reconciles in flight per controller), the expectations, the
status hold (10 s, as `cliques operator` runs), the `Executor` (32 writes in flight) and
everything the planners call. Every object the informers see is decoded by msgspec from
the bytes the simulated API server stores, as from a watch stream.

What is simulated (`SimServer`): an API server that stores objects as JSON bytes,
answers creates (409 when the name is taken), JSON merge patches (a `resourceVersion`
in the patch is a precondition), the status subresource, GETs and deletes, and serves
every write as a watch event to the informers `watch_delay` seconds later; it answers
`rate` requests per second, one after the other, and each request waits its turn (the
fake kubelets' writes too), so a deploy of N pods takes time in proportion to N as on a
real control plane; a scheduler and kubelet that bind each new pod (`Running`)
`bind_delay` seconds after its creation and make it Ready `start_seconds` after that,
each a status write. No nodes, no capacity, no garbage collector, no Events (the
recorder is off), no bucket label selection (one process owns every bucket), no TLS or
HTTP (the transport's cost is not in the figures), no webhooks or CRD validation.

Time is virtual (`VirtualLoop`): an asyncio event loop whose clock jumps to the next
timer whenever nothing is ready to run, so the simulated seconds of a deploy cost
nothing and a run is as fast as the operator's code. The operator's own CPU does not
advance the clock: a plan that would take 300 ms of a real core takes no simulated time.

The operator's CPU is the process's CPU time (`time.process_time`) from the first
CliqueSet's creation until every set reports all its gangs available
(`status.availableReplicas == spec.replicas`, `Available=True`, on its generation), less
the time spent inside the simulated API server, scheduler and kubelets (measured around
each of their calls with `time.perf_counter`: the process's CPU clock costs a system call
of ~6 µs here, as much as a small write; on a busy machine a call preempted midway counts
its wait too, so the operator's share is if anything understated). Peak RSS is the
process's (`ru_maxrss`), which includes what the simulated API server stores; its bytes
are reported beside it.
"""

from __future__ import annotations

import asyncio
import datetime
import resource
import selectors
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import msgspec

from cliques.api.meta import format_time
from cliques.controllers.base.executor import Executor
from cliques.controllers.base.revision import Hasher
from cliques.controllers.base.wiring import Wiring
from cliques.controllers.clique.controller import CliqueController
from cliques.controllers.cliqueset.controller import CliqueSetController
from cliques.controllers.features import start_gate
from cliques.kube import errors, store, watches
from cliques.kube.expectations import Expectations
from cliques.kube.gangapi import GangAPI
from cliques.kube.objects import key_of
from cliques.kube.resources import Resource
from cliques.kube.runner import Runner
from cliques.operator import process
from cliques_lab.bench import workload

T = TypeVar("T")
Obj = dict[str, Any]
Handler = Callable[[str, Any, Any], None]

NAMESPACE = "sim"
#: Where the virtual clock starts (the planners stamp conditions with it).
EPOCH = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
#: Kinds with a status subresource (their main resource never writes the status).
WITH_STATUS = frozenset({"CliqueSet", "Clique", "Pod"})
#: The operator's settings, as `cliques operator` runs by default (operator.manager.Config).
CONCURRENCY = 16
WRITE_PARALLELISM = 32
STATUS_HOLD = 10.0
EXPECTATIONS_TTL = 60.0


class SimStuck(Exception):
    """Nothing is ready to run and no timer is set, but the deploy is not done."""


class SimError(Exception):
    """The simulated API server was asked for what it does not model."""


# ---- the virtual clock ------------------------------------------------------------------------


class _VirtualSelector(selectors.BaseSelector):
    """A selector that never waits: asked to wait `timeout` seconds for I/O (the loop's
    time to its next timer), it moves the virtual clock on by that much instead."""

    def __init__(self) -> None:
        self._map: dict[int, selectors.SelectorKey] = {}
        self.now = 0.0

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        fd = fileobj if isinstance(fileobj, int) else fileobj.fileno()
        key = selectors.SelectorKey(fileobj, fd, events, data)
        self._map[fd] = key
        return key

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        fd = fileobj if isinstance(fileobj, int) else fileobj.fileno()
        return self._map.pop(fd)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None:
            raise SimStuck("nothing to run and no timer set")
        if timeout > 0:
            self.now += timeout
        return []

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return self._map

    def close(self) -> None:
        self._map.clear()


class VirtualLoop(asyncio.SelectorEventLoop):
    """An event loop on a virtual clock: `time()` is the simulated second, which jumps to
    the next timer whenever nothing is ready (so `asyncio.sleep(60)` takes no time)."""

    def __init__(self) -> None:
        self._virtual = _VirtualSelector()
        super().__init__(self._virtual)
        self._clock_resolution = 1e-6

    def time(self) -> float:
        return self._virtual.now


# ---- the simulated API server -------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (a new value; `target` is not changed)."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class SimInformer(Generic[T]):
    """An informer fed by the simulated API server's writes: the production `Store` and
    indexers, the production dispatch rules (a version not newer than the cached one is
    skipped) and write-through (`observe_write`); watch events arrive in batches, in
    order, `delay` seconds after their writes."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        kind: str,
        type_: type[T],
        indexers: Mapping[str, Any],
        transform: Callable[[Any], Any] | None,
        delay: float,
    ) -> None:
        self.loop = loop
        self.kind = kind
        self.store: store.Store[Any] = store.Store(dict(indexers))
        self._decode: Callable[[bytes], Any] = msgspec.json.Decoder(type_).decode
        self._transform = transform
        self._handlers: list[Handler] = []
        self._pending: list[tuple[str, bytes]] = []
        self._delay = delay
        self.events = 0

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    def _typed(self, raw: bytes) -> Any:
        obj = self._decode(raw)
        return self._transform(obj) if self._transform is not None else obj

    def _dispatch(self, kind: str, old: Any, new: Any) -> None:
        for handler in self._handlers:
            handler(kind, old, new)

    def push(self, type_: str, raw: bytes) -> None:
        """A watch event on its way (delivered with the others of its batch)."""
        if not self._pending:
            self.loop.call_later(self._delay, self._flush)
        self._pending.append((type_, raw))

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        for type_, raw in pending:
            self.events += 1
            obj = self._typed(raw)
            key = key_of(obj)
            if type_ == "DELETED":
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


@dataclass
class ServerStats:
    """What the simulated API server did, and the CPU it spent doing it."""

    requests: dict[str, int] = field(default_factory=dict)
    cpu: float = 0.0

    def count(self, what: str) -> None:
        self.requests[what] = self.requests.get(what, 0) + 1


class SimServer:
    """The API server, a scheduler and kubelets (see the module's docstring)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        rate: float = 300.0,
        watch_delay: float = 0.005,
        bind_delay: float = 0.5,
        start_seconds: float = 1.0,
    ) -> None:
        self.loop = loop
        self.service_time = 1.0 / rate if rate > 0 else 0.0
        self.watch_delay = watch_delay
        self.bind_delay = bind_delay
        self.start_seconds = start_seconds
        self.objects: dict[str, dict[str, bytes]] = {}
        self.watchers: dict[str, list[SimInformer[Any]]] = {}
        self.stats = ServerStats()
        self._rv = 1000
        self._uid = 0
        self._free_at = 0.0
        #: called with the kind and the new object after every write (the run's judge)
        self.on_write: Callable[[str, Obj], None] = lambda kind, obj: None

    def watch(self, kind: str, informer: SimInformer[Any]) -> None:
        self.watchers.setdefault(kind, []).append(informer)

    def stored_bytes(self) -> int:
        return sum(len(raw) for objs in self.objects.values() for raw in objs.values())

    def held_bytes(self) -> int:
        """What the stored objects occupy as Python objects: bytes, keys and tables."""
        held = sys.getsizeof(self.objects)
        for kind, objs in self.objects.items():
            held += sys.getsizeof(kind) + sys.getsizeof(objs)
            held += sum(sys.getsizeof(k) + sys.getsizeof(raw) for k, raw in objs.items())
        return held

    def backlog(self) -> float:
        """Seconds of requests the API server has yet to answer."""
        return max(0.0, self._free_at - self.loop.time())

    def turn(self) -> float:
        """Seconds until a request sent now is answered (requests are served one by one)."""
        now = self.loop.time()
        self._free_at = max(now, self._free_at) + self.service_time
        return self._free_at - now

    # -- storage --------------------------------------------------------------------------------

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def _emit(self, kind: str, type_: str, raw: bytes) -> None:
        for informer in self.watchers.get(kind, ()):
            informer.push(type_, raw)

    def _store(self, kind: str, key: str, obj: Obj, type_: str) -> bytes:
        # (copied to a buffer of its exact size: msgspec's encoder leaves its buffer's
        # slack in the bytes it returns, about 40% more than the JSON here, which would
        # count in the peak RSS and not in `held_bytes`)
        raw = bytes(memoryview(msgspec.json.encode(obj)))
        self.objects.setdefault(kind, {})[key] = raw
        self._emit(kind, type_, raw)
        self.on_write(kind, obj)
        return raw

    # -- the verbs (each counts its CPU as the server's) -------------------------------------------

    def create(self, kind: str, namespace: str, body: Any) -> bytes:
        started = time.perf_counter()
        try:
            obj: Obj = msgspec.json.decode(msgspec.json.encode(body))
            m = obj.setdefault("metadata", {})
            name = m.get("name", "")
            if not name:
                raise errors.Invalid(422, "Invalid", f"{kind}: metadata.name is required")
            m["namespace"] = namespace
            key = f"{namespace}/{name}"
            if key in self.objects.setdefault(kind, {}):
                raise errors.AlreadyExists(
                    409, "AlreadyExists", f'{kind.lower()}s "{name}" already exists', verb="create"
                )
            self._uid += 1
            m["uid"] = f"{kind.lower()}-{self._uid}"
            m["resourceVersion"] = self._next_rv()
            m["generation"] = 1
            m["creationTimestamp"] = stamp(self.loop.time())
            if kind == "Pod":
                obj["status"] = {"phase": "Pending"}
                self.loop.call_later(self.bind_delay, self._kubelet, key, "bind")
            elif kind in WITH_STATUS:
                obj.pop("status", None)
            self.stats.count(f"create {kind}")
            return self._store(kind, key, obj, "ADDED")
        finally:
            self.stats.cpu += time.perf_counter() - started

    def get(self, kind: str, namespace: str, name: str) -> bytes:
        raw = self.objects.get(kind, {}).get(f"{namespace}/{name}")
        if raw is None:
            raise errors.NotFound(404, "NotFound", f'{kind.lower()}s "{name}" not found')
        self.stats.count(f"get {kind}")
        return raw

    def patch(self, kind: str, namespace: str, name: str, patch: Any, sub: str) -> bytes:
        started = time.perf_counter()
        try:
            key = f"{namespace}/{name}"
            raw = self.objects.get(kind, {}).get(key)
            if raw is None:
                raise errors.NotFound(404, "NotFound", f'{kind.lower()}s "{name}" not found')
            old: Obj = msgspec.json.decode(raw)
            new = merge_patch(old, patch)
            rv = old["metadata"]["resourceVersion"]
            if new["metadata"].get("resourceVersion", rv) != rv:
                raise errors.Conflict(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on {kind.lower()}s "{name}": the object '
                    "has been modified; please apply your changes to the latest version",
                )
            if sub == "status":
                updated = dict(old)
                if "status" in new:
                    updated["status"] = new["status"]
                new = updated
            else:
                new["metadata"] = {
                    **new["metadata"],
                    **{
                        k: old["metadata"][k]
                        for k in ("name", "namespace", "uid", "creationTimestamp")
                    },
                }
                if kind in WITH_STATUS:
                    if "status" in old:
                        new["status"] = old["status"]
                    else:
                        new.pop("status", None)
            new["metadata"]["resourceVersion"] = rv
            if new == old:
                return raw  # a no-op patch writes nothing
            spec_changed = {k: v for k, v in new.items() if k not in ("metadata", "status")} != {
                k: v for k, v in old.items() if k not in ("metadata", "status")
            }
            if spec_changed:
                new["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
            new["metadata"]["resourceVersion"] = self._next_rv()
            self.stats.count(f"{'status' if sub == 'status' else 'patch'} {kind}")
            return self._store(kind, key, new, "MODIFIED")
        finally:
            self.stats.cpu += time.perf_counter() - started

    def delete(self, kind: str, namespace: str, name: str, uid: str | None) -> None:
        started = time.perf_counter()
        try:
            key = f"{namespace}/{name}"
            raw = self.objects.get(kind, {}).get(key)
            if raw is None:
                raise errors.NotFound(404, "NotFound", f'{kind.lower()}s "{name}" not found')
            obj: Obj = msgspec.json.decode(raw)
            if uid is not None and obj["metadata"]["uid"] != uid:
                raise errors.Conflict(409, "Conflict", f"precondition failed: UID {uid}")
            del self.objects[kind][key]
            obj["metadata"]["resourceVersion"] = self._next_rv()
            self.stats.count(f"delete {kind}")
            self._emit(kind, "DELETED", msgspec.json.encode(obj))
        finally:
            self.stats.cpu += time.perf_counter() - started

    # -- the scheduler and the kubelets ---------------------------------------------------------

    def _kubelet(self, key: str, step: str) -> None:
        """The pod's next step, once the API server has served the write (its turn)."""
        self.loop.call_later(self.turn(), self._kubelet_write, key, step)

    def _kubelet_write(self, key: str, step: str) -> None:
        started = time.perf_counter()
        try:
            raw = self.objects.get("Pod", {}).get(key)
            if raw is None:
                return
            pod: Obj = msgspec.json.decode(raw)
            status = pod.setdefault("status", {})
            conds = [c for c in status.get("conditions") or () if c.get("type") != "Ready"]
            if step == "bind":
                pod["spec"]["nodeName"] = f"node-{int(pod['metadata']['uid'].split('-')[1]) % 100}"
                status["phase"] = "Running"
                conds.append({"type": "PodScheduled", "status": "True"})
                conds.append({"type": "Ready", "status": "False"})
                self.loop.call_later(self.start_seconds, self._kubelet, key, "ready")
            else:
                conds.append({"type": "Ready", "status": "True"})
            status["conditions"] = conds
            pod["metadata"]["resourceVersion"] = self._next_rv()
            self.stats.count(f"kubelet {step}")
            self._store("Pod", key, pod, "MODIFIED")
        finally:
            self.stats.cpu += time.perf_counter() - started


def stamp(t: float) -> str:
    """The virtual second `t` as Kubernetes writes a time."""
    return format_time(EPOCH + datetime.timedelta(seconds=int(t)))


class SimClient:
    """The operator's API client (a `kube.protocol.Client`): each request waits its turn at
    the simulated API server, then is served."""

    def __init__(self, server: SimServer) -> None:
        self.server = server

    async def _turn(self) -> None:
        await asyncio.sleep(self.server.turn())

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
        await self._turn()
        raw = self.server.create(resource.kind, namespace or NAMESPACE, obj)
        return msgspec.json.decode(raw, type=type_)

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
        if patch_type != "merge":
            raise SimError(f"the simulated API server serves merge patches only ({patch_type})")
        await self._turn()
        raw = self.server.patch(resource.kind, namespace or NAMESPACE, name, patch, sub)
        return msgspec.json.decode(raw, type=type_)

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
        await self._turn()
        self.server.delete(resource.kind, namespace or NAMESPACE, name, uid)

    async def get(self, resource: Resource, namespace: str | None, name: str, type_: type[T]) -> T:
        await self._turn()
        raw = self.server.get(resource.kind, namespace or NAMESPACE, name)
        return msgspec.json.decode(raw, type=type_)

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
            raise SimError(f"the simulated client does not serve {verb} {resource.kind}")
        await self._turn()
        return self.server.get(resource.kind, namespace or NAMESPACE, name)


# ---- one run ------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What one simulated deploy cost."""

    shape: str
    pods: int
    #: simulated seconds from the first create until every set was Available
    sim_seconds: float
    #: the process's CPU over the deploy, and the part the simulated API server spent
    cpu_total: float
    cpu_server: float
    #: peak RSS of the process, MiB, and what the simulated API server stores, MiB
    rss_mib: float
    server_mib: float
    reconciles: dict[str, int]
    requests: dict[str, int]
    watch_events: int
    #: the CliqueSet plans made (a plan visits every gang of its set)
    set_plans: int
    #: what the simulated API server's objects occupy in the process, MiB: their bytes,
    #: keys and tables as Python objects (part of the peak RSS that no operator holds)
    server_held_mib: float = 0.0

    @property
    def cpu_operator(self) -> float:
        return self.cpu_total - self.cpu_server

    @property
    def cpu_per_pod_ms(self) -> float:
        return 1000.0 * self.cpu_operator / self.pods

    def to_json(self) -> dict[str, Any]:
        out = msgspec.to_builtins(self)
        out["cpu_operator"] = self.cpu_operator
        out["cpu_per_pod_ms"] = self.cpu_per_pod_ms
        return dict(out)


def _peak_rss_mib() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


class _Judge:
    """Watches the CliqueSets' status writes: done when every set reports every gang
    available on its generation."""

    def __init__(self, names: set[str], done: asyncio.Event) -> None:
        self.waiting = set(names)
        self.done = done

    def __call__(self, kind: str, obj: Obj) -> None:
        if kind != "CliqueSet":
            return
        name = obj["metadata"]["name"]
        status = obj.get("status") or {}
        available = any(
            c.get("type") == "Available" and c.get("status") == "True"
            for c in status.get("conditions") or ()
        )
        whole = (
            available
            and status.get("availableReplicas") == obj["spec"]["replicas"]
            and status.get("observedGeneration") == obj["metadata"].get("generation")
        )
        if whole:
            self.waiting.discard(name)
        else:
            self.waiting.add(name)
        if not self.waiting:
            self.done.set()


async def _deploy(
    shape: workload.Shape,
    *,
    rate: float,
    start_seconds: float,
    timeout: float,
    progress: Callable[[str], None] | None,
    on_done: Callable[[SimServer], None] | None = None,
) -> Outcome:
    loop = asyncio.get_running_loop()
    server = SimServer(loop, rate=rate, start_seconds=start_seconds)
    gang_api = GangAPI("")
    informers: dict[str, SimInformer[Any]] = {}
    kinds: dict[str, str] = {}
    controllers = (CliqueSetController, CliqueController)
    for watch in watches.merge(w for c in controllers for w in c.WATCHES):
        res = watch.served(gang_api)
        if res is None:
            continue
        transform = watch.transform() if watch.transform is not None else None
        inf: SimInformer[Any] = SimInformer(
            loop, res.kind, watch.kind, watch.indexers, transform, server.watch_delay
        )
        informers[watch.name] = inf
        kinds[res.kind] = watch.name
        server.watch(res.kind, inf)

    def written(res: Resource, raw: bytes) -> None:
        name = kinds.get(res.kind)
        if name is not None:
            informers[name].observe_write(raw)

    client = SimClient(server)
    hasher = Hasher()
    clock = lambda: stamp(loop.time())  # noqa: E731
    runners: list[Runner] = []
    ctls: list[Any] = []
    for cls in controllers:
        exp = Expectations(cls.NAME, ttl=EXPECTATIONS_TTL, clock=loop.time)
        executor = Executor(client, exp, None, parallelism=WRITE_PARALLELISM, written=written)
        wiring = Wiring(
            executor,
            exp,
            hasher,
            owns=lambda ns, name: True,
            gang_api=gang_api,
            status_hold=STATUS_HOLD,
            gate_image=start_gate.default_image(),
            clock=clock,
        )
        mine = {w.name: informers[w.name] for w in cls.WATCHES if w.name in informers}
        ctl = cls.wired(mine, wiring)
        ctls.append(ctl)
    reconciles = {cls.NAME: 0 for cls in controllers}
    for ctl in ctls:

        async def counted(key: str, inner: Any = ctl.reconcile, name: str = ctl.NAME) -> Any:
            reconciles[name] += 1
            return await inner(key)

        runners.append(Runner(ctl.NAME, ctl.queue, counted, concurrency=CONCURRENCY))
    # Each plan of a CliqueSet, counted (a plan visits every gang of its set).
    set_plans = [0]
    set_ctl = ctls[0]
    planned = set_ctl._planned

    def planned_counted(snap: Any) -> Any:
        set_plans[0] += 1
        return planned(snap)

    set_ctl._planned = planned_counted

    done = asyncio.Event()
    judge = _Judge(set(shape.names()), done)
    server.on_write = judge
    process.tune_gc()  # as a worker process of `cliques operator` does
    cpu0 = time.process_time()
    t0 = loop.time()
    for runner in runners:
        runner.start()
    for name in shape.names():
        body = workload.manifest(name, shape)
        body["metadata"]["namespace"] = NAMESPACE
        server.create("CliqueSet", NAMESPACE, body)
    total = shape.total_pods

    def report() -> None:
        ready = server.stats.requests.get("kubelet ready", 0)
        if progress is not None:
            progress(
                f"  t={loop.time() - t0:7.0f}s simulated  pods Ready {ready:>7}/{total}"
                f"  sets waiting {len(judge.waiting):>5}"
                f"  set plans {set_plans[0]:>7}  reconciles {sum(reconciles.values()):>8}"
                f"  API backlog {server.backlog():5.0f}s"
                f"  cpu {time.process_time() - cpu0:7.1f}s"
            )

    async def reporter() -> None:
        while True:
            await asyncio.sleep(60.0)
            report()

    task = asyncio.create_task(reporter())
    try:
        await asyncio.wait_for(done.wait(), timeout)
    finally:
        task.cancel()
    cpu = time.process_time() - cpu0
    sim_seconds = loop.time() - t0
    report()
    for runner in runners:
        await runner.stop(grace=0.0)
    if on_done is not None:
        on_done(server)
    return Outcome(
        shape=str(shape),
        pods=total,
        sim_seconds=sim_seconds,
        cpu_total=cpu,
        cpu_server=server.stats.cpu,
        rss_mib=_peak_rss_mib(),
        server_mib=server.stored_bytes() / 2**20,
        reconciles=reconciles,
        requests=dict(sorted(server.stats.requests.items())),
        watch_events=sum(i.events for i in informers.values()),
        set_plans=set_plans[0],
        server_held_mib=server.held_bytes() / 2**20,
    )


def deploy(
    shape: workload.Shape,
    *,
    rate: float = 300.0,
    start_seconds: float = 1.0,
    timeout: float = 36_000.0,
    progress: Callable[[str], None] | None = None,
    on_done: Callable[[SimServer], None] | None = None,
) -> Outcome:
    """Deploy `shape` on a fresh simulated cluster under the real controllers; what it cost.
    `timeout` is in simulated seconds; `on_done` is given the simulated server once every
    set is available (to read what it stores)."""
    loop = VirtualLoop()
    try:
        return loop.run_until_complete(
            _deploy(
                shape,
                rate=rate,
                start_seconds=start_seconds,
                timeout=timeout,
                progress=progress,
                on_done=on_done,
            )
        )
    finally:
        loop.close()


def summary(outcomes: list[Outcome]) -> dict[str, Any]:
    """Medians and ranges of a shape's runs."""
    per_pod = [o.cpu_per_pod_ms for o in outcomes]
    cpu = [o.cpu_operator for o in outcomes]
    rss = [o.rss_mib for o in outcomes]
    return {
        "runs": len(outcomes),
        "cpu_operator_s": {"median": statistics.median(cpu), "min": min(cpu), "max": max(cpu)},
        "cpu_per_pod_ms": {
            "median": statistics.median(per_pod),
            "min": min(per_pod),
            "max": max(per_pod),
        },
        "rss_mib": {"median": statistics.median(rss), "min": min(rss), "max": max(rss)},
    }
