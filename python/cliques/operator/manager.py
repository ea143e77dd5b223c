"""One operator process: client, informers, the two controllers, their runners.

`Manager.run()` connects, checks what the API server serves (its CRDs, the gang-scheduling
API: `preflight`, which waits out an API server that is not answering yet and raises
`StartupError` for what waiting cannot fix), builds the informers the controllers declare
(`CONTROLLERS`, each with its `WATCHES`: one informer per name, shared between controllers,
left out where the cluster does not serve its resource; objects the CliqueSets own only
those labelled with one of its buckets, filtered by the API server; CliqueSets: a
`CliqueSetCache` that keeps only those of its buckets), hands each controller its own
(`wired`), starts the informers, waits until they have synced, starts the reconcile
runners, and on `stop()` drains the queues (in-flight reconciles finish, nothing new
starts) before closing the client.

A Manager of one shard among several in a process (`shard_managers`) is handed the
process's CliqueSet cache instead of running its own: it admits its buckets into it when it
starts, and unregisters its handlers and forgets its buckets when it stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cliques.controllers.base.executor import Executor
from cliques.controllers.base.revision import CORE_ALGORITHM, Hasher
from cliques.controllers.base.wiring import Controller, ControllerClass, Wiring
from cliques.controllers.clique import controller as clique_controller
from cliques.controllers.cliqueset import controller as cliqueset_controller
from cliques.controllers.features import start_gate
from cliques.kube import gangapi, watches
from cliques.kube.client import REQUEST_TIMEOUT, KubeClient
from cliques.kube.events import EventRecorder
from cliques.kube.expectations import Expectations
from cliques.kube.informer import Informer, WatchFaults, short_selector
from cliques.kube.resources import CLIQUESETS, Resource
from cliques.kube.runner import Runner
from cliques.kube.startup import Stopped
from cliques.operator import preflight, undecodable
from cliques.operator.buckets import BucketSet
from cliques.operator.cliqueset_cache import CliqueSetCache

log = logging.getLogger(__name__)


@dataclass
class Config:
    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None  # None = every namespace
    qps: float = 200.0
    burst: int = 400
    concurrency: int = 16
    write_parallelism: int = 32
    expectations_ttl: float = 60.0
    #: Longest a Clique status that only reports progress towards Ready is held back.
    status_hold: float = 10.0
    request_timeout: float = REQUEST_TIMEOUT
    hash_algorithm: int = CORE_ALGORITHM
    buckets: BucketSet = field(default_factory=BucketSet)
    resync_period: float = 0.0
    faults: WatchFaults = field(default_factory=WatchFaults)
    field_manager: str = "cliques-operator"
    events: bool = True
    #: the image of the start gate's init container (`controllers.start_gate`)
    start_gate_image: str = field(default_factory=start_gate.default_image)
    #: the pods of a gang restart prefer the nodes it ran on (`controllers.same_nodes`)
    same_nodes: bool = True
    # Sharding between replicas through Leases (off: this process owns `buckets`).
    leases: bool = False
    lease_namespace: str = "cliques-system"
    identity: str = ""
    shards: int = 16
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    #: Called with (controller, key, started, ended) after every reconcile (tests, tracing).
    trace: Callable[[str, str, float, float], None] | None = None


#: The controllers a Manager runs, each declaring its watches (`controllers.wiring`).
CONTROLLERS: tuple[ControllerClass, ...] = (
    cliqueset_controller.CliqueSetController,
    clique_controller.CliqueController,
)
#: Watches one Manager may hold open at once (an informer each, where the cluster serves
#: them all), and the connections its writes keep besides.
WATCHES_PER_MANAGER = len(watches.merge(w for c in CONTROLLERS for w in c.WATCHES))
WRITE_CONNECTIONS = 64


def max_connections(cfg: Config) -> int:
    """The client's connection pool: every watch holds a connection for its life, so a
    process that may run a Manager per shard (`leases`) needs one per watch of each, and
    the writes' connections on top; a pool too small starves the watches queued behind it
    (they time out with nothing received while the writes wait too)."""
    managers = cfg.shards if cfg.leases else 1
    return WRITE_CONNECTIONS + managers * WATCHES_PER_MANAGER


async def connect(cfg: Config) -> KubeClient:
    return await KubeClient.connect(
        cfg.kubeconfig,
        context=cfg.context,
        qps=cfg.qps,
        burst=cfg.burst,
        field_manager=cfg.field_manager,
        max_connections=max_connections(cfg),
        request_timeout=cfg.request_timeout,
    )


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a finished future's exception as seen (a cancelled gather's CancelledError)."""
    if not future.cancelled():
        future.exception()


class Manager:
    def __init__(
        self,
        config: Config,
        client: KubeClient | None = None,
        cliquesets: CliqueSetCache | None = None,
        gang_api: gangapi.GangAPI | None = None,
    ) -> None:
        self.config = config
        #: what the cluster serves for gang scheduling (None: asked in `run`)
        self.gang_api = gang_api
        self.client: KubeClient | None = client
        self._own_client = client is None
        #: the process's CliqueSet cache, shared with other shards (None: run one's own)
        self.shared_cliquesets = cliquesets
        #: the informers this Manager runs (a shared CliqueSet cache is not one of them)
        self.informers: list[Informer[Any]] = []
        #: set once the CliqueSet cache has listed this Manager's buckets
        self.cliquesets_listed = asyncio.Event()
        #: the controllers this Manager runs (`CONTROLLERS`) and their runners
        self.controllers: list[Controller] = []
        self.runners: list[Runner] = []
        self.recorder: EventRecorder | None = None
        self._stop = asyncio.Event()
        self.synced = asyncio.Event()  # set once every informer has listed
        self._tasks: list[asyncio.Task[None]] = []
        self.drain_grace = 30.0

    def ready(self) -> bool:
        return (
            bool(self.informers)
            and all(i.synced.is_set() for i in self.informers)
            and self.cliquesets_listed.is_set()
        )

    def stop(self, grace: float | None = None) -> None:
        """Drain and stop: in-flight reconciles may finish for `grace` seconds (default 30)."""
        if grace is not None:
            self.drain_grace = grace
        self._stop.set()

    def abort(self) -> None:
        """Stop at once (fencing): every reconcile is cancelled before it sends anything more."""
        self.drain_grace = 0.0
        for runner in self.runners:
            runner.abort()
        self._stop.set()

    async def run(self) -> None:
        """Check, serve until stopped, drain. Returns at once if stopped while the API
        server does not answer its checks; raises `StartupError` for what must be fixed."""
        try:
            if self.client is not None:
                await self._run(self.client)
                return
            self.client = client = await connect(self.config)
            try:
                await self._run(client)
            finally:
                await client.close()
        except Stopped:
            log.info("stopped before the API server answered")

    async def _run(self, client: KubeClient) -> None:
        cfg = self.config
        shared = self.shared_cliquesets
        cqs_inf = shared or CliqueSetCache(
            client,
            namespace=cfg.namespace,
            buckets=cfg.buckets.buckets,
            total=cfg.buckets.total,
            resync_period=cfg.resync_period,
        )
        gang_api = self.gang_api
        if gang_api is None:
            self.gang_api = gang_api = await preflight.check(
                client, self._stop, namespace=cfg.namespace
            )
            log.info("gang scheduling: %s", gang_api.describe())
        informers = self._informers(client, gang_api, cqs_inf)
        # A shared CliqueSet cache is the process's to run, not this Manager's.
        self.informers = [i for i in informers.values() if not (shared and i is cqs_inf)]
        self.recorder = EventRecorder(client) if cfg.events else None
        cqs_inf.on_undecodable(
            undecodable.UndecodableReporter(client, self.recorder, cfg.buckets.owns)
        )
        with cqs_inf.recording() as registered:
            self._wire(client, informers, gang_api)
        try:
            await self._serve(shared.admit(cfg.buckets.buckets) if shared else cqs_inf.synced)
        finally:
            if shared:
                shared.unregister(registered)
                shared.forget(cfg.buckets.buckets)

    def _informers(
        self, client: KubeClient, gang_api: gangapi.GangAPI, cliquesets: CliqueSetCache
    ) -> dict[str, Informer[Any]]:
        """An informer per watch the controllers declare (`CONTROLLERS`) that the cluster
        serves, by name; the CliqueSets are the process's `CliqueSetCache`."""
        out: dict[str, Informer[Any]] = {}
        for watch in watches.merge(w for c in CONTROLLERS for w in c.WATCHES):
            resource = watch.served(gang_api)
            if resource == CLIQUESETS:
                out[watch.name] = cliquesets
            elif resource is not None:
                out[watch.name] = self._informer(client, watch, resource)
        return out

    def _informer(
        self, client: KubeClient, watch: watches.Watch, resource: Resource
    ) -> Informer[Any]:
        """The informer of `watch`: in this Manager's namespace, of its buckets (by label)
        when the watch is of owned objects."""
        cfg = self.config
        return Informer(
            client,
            resource,
            watch.kind,
            namespace=cfg.namespace,
            label_selector=cfg.buckets.selector() if watch.owned else watch.selector,
            indexers=dict(watch.indexers),
            resync_period=cfg.resync_period,
            faults=cfg.faults if watch.faults else None,
            transform=watch.transform() if watch.transform is not None else None,
        )

    def _wire(
        self, client: KubeClient, informers: dict[str, Informer[Any]], gang_api: gangapi.GangAPI
    ) -> None:
        """Each controller (its handlers registered on its informers) and its runner."""
        cfg = self.config
        hasher = Hasher(cfg.hash_algorithm)
        by_resource = {i.resource: i for i in informers.values()}

        def written(resource: Resource, raw: bytes) -> None:
            informer = by_resource.get(resource)
            if informer is not None:
                informer.observe_write(raw)

        self.controllers = []
        self.runners = []
        for cls in CONTROLLERS:
            exp = Expectations(cls.NAME, ttl=cfg.expectations_ttl)
            executor = Executor(
                client, exp, self.recorder, parallelism=cfg.write_parallelism, written=written
            )
            wiring = Wiring(
                executor,
                exp,
                hasher,
                owns=cfg.buckets.owns,
                gang_api=gang_api,
                status_hold=cfg.status_hold,
                gate_image=cfg.start_gate_image,
                same_nodes=cfg.same_nodes,
            )
            mine = {w.name: informers[w.name] for w in cls.WATCHES if w.name in informers}
            ctl = cls.wired(mine, wiring)
            self.controllers.append(ctl)
            self.runners.append(
                Runner(
                    cls.NAME,
                    ctl.queue,
                    ctl.reconcile,
                    concurrency=cfg.concurrency,
                    trace=cfg.trace,
                )
            )
        log.info(
            "starting: namespace=%s%s hash-algorithm=%d",
            cfg.namespace or "*",
            short_selector(cfg.buckets.selector()),
            hasher.algorithm,
        )

    async def _serve(self, cliquesets_listed: asyncio.Event) -> None:
        """Run the informers, wait for every cache (and `cliquesets_listed`), run the
        reconciles until stopped, then drain."""
        for inf in self.informers:
            self._tasks.append(asyncio.create_task(inf.run(), name=repr(inf)))
        if self.recorder is not None:
            self.recorder.start()
        # (both ended on the way out, however that goes: a cancelled run leaves no waiter)
        stop: asyncio.Future[Any] = asyncio.ensure_future(self._stop.wait())
        synced: asyncio.Future[Any] = asyncio.gather(
            cliquesets_listed.wait(), *(i.synced.wait() for i in self.informers)
        )
        try:
            await asyncio.wait([synced, stop], return_when=asyncio.FIRST_COMPLETED)
            if not self._stop.is_set():
                self.cliquesets_listed.set()
                log.info(
                    "caches synced: %s",
                    ", ".join(f"{i.resource.plural}={len(i.store)}" for i in self.informers),
                )
                for runner in self.runners:
                    runner.start()
                self.synced.set()
                # Run until asked to stop, or until an informer dies: a cache that silently
                # stopped updating is worse than a restart (the supervisor or kubelet does it).
                await asyncio.wait([stop, *self._tasks], return_when=asyncio.FIRST_COMPLETED)
                dead = [t for t in self._tasks if t.done()]
                if dead and not self._stop.is_set():
                    exc = dead[0].exception() if not dead[0].cancelled() else None
                    raise RuntimeError(f"informer {dead[0].get_name()} stopped: {exc!r}")
        finally:
            if not synced.done():
                # Stopped before the caches synced (a shard handed over at start, or the run
                # cancelled): the cancelled gather ends with a CancelledError as its
                # exception, retrieved here, or asyncio logs its traceback when the future
                # is collected.
                synced.cancel()
                synced.add_done_callback(_retrieve)
            stop.cancel()
            log.info("draining work queues")
            await asyncio.gather(*(r.stop(self.drain_grace) for r in self.runners))
            if self.recorder is not None:
                await self.recorder.stop()
            for ctl in self.controllers:  # what a controller exposes of its objects goes
                close = getattr(ctl, "close", None)
                if close is not None:
                    close()
            for task in self._tasks:
                task.cancel()
            for task in self._tasks:
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await task
            for waiter in (stop, synced):
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await waiter
            log.info("stopped")
