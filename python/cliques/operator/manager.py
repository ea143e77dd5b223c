"""One operator process: client, informers, the two controllers, their runners.

`Manager.run()` connects, checks what the API server serves (its CRDs, the gang-scheduling
API: `preflight`, which waits out an API server that is not answering yet and raises
`StartupError` for what waiting cannot fix), starts the informers (Cliques, Pods,
Services and, where the cluster serves them, Workloads, PodGroups and CompositePodGroups:
only those labelled with one of its buckets, filtered by the API server; CliqueSets: a
`CliqueSetCache` that keeps only those of its buckets), waits until they have synced,
starts the reconcile runners, and on `stop()` drains the queues (in-flight reconciles
finish, nothing new starts) before closing the client.

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
from typing import Any, TypeVar

from cliques.api import labels
from cliques.api.claim import ClaimObject
from cliques.api.clique import Clique, SharedTemplates
from cliques.api.hpa import HorizontalPodAutoscaler
from cliques.api.kueue import KueueWorkload, LocalQueue
from cliques.api.pod import Pod
from cliques.api.podgroup import CompositePodGroup, PodGroup
from cliques.api.scalinggroup import CliqueScalingGroup
from cliques.api.service import Service
from cliques.api.workload import Workload
from cliques.controllers import clique_controller, cliqueset_controller, start_gate
from cliques.controllers.executor import Executor
from cliques.controllers.revision import CORE_ALGORITHM, Hasher
from cliques.kube import gangapi, store
from cliques.kube.client import REQUEST_TIMEOUT, KubeClient
from cliques.kube.events import EventRecorder
from cliques.kube.expectations import Expectations
from cliques.kube.informer import Informer, WatchFaults, short_selector
from cliques.kube.objects import KubeObject
from cliques.kube.resources import (
    CLIQUES,
    HPAS,
    KUEUE_WORKLOADS,
    LOCAL_QUEUES,
    PODS,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    SCALING_GROUPS,
    SERVICES,
    Resource,
)
from cliques.kube.runner import Runner
from cliques.kube.startup import Stopped
from cliques.operator import preflight, undecodable
from cliques.operator.buckets import BucketSet
from cliques.operator.cliqueset_cache import CliqueSetCache

T = TypeVar("T", bound=KubeObject)
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


#: Watches one Manager may hold open at once (an informer each: CliqueSets, Cliques, Pods,
#: Services, Workloads, PodGroups, CompositePodGroups, the two DRA claim kinds, Kueue's two,
#: CliqueScalingGroups, HPAs), and the connections its writes keep besides.
WATCHES_PER_MANAGER = 13
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
        cq_inf, pod_inf, svc_inf = self._child_informers(client)
        self.informers = (
            [cq_inf, pod_inf, svc_inf] if shared else [cqs_inf, cq_inf, pod_inf, svc_inf]
        )
        gang_api = self.gang_api
        if gang_api is None:
            self.gang_api = gang_api = await preflight.check(
                client, self._stop, namespace=cfg.namespace
            )
            log.info("gang scheduling: %s", gang_api.describe())
        wl_inf: Informer[Workload] | None = None
        pg_inf: Informer[PodGroup] | None = None
        if gang_api.served:
            wl_inf = self._owned_informer(client, gang_api.workload_resource, Workload)
            self.informers.append(wl_inf)
        if gang_api.podgroups:
            pg_inf = self._owned_informer(client, gang_api.podgroup_resource, PodGroup)
            self.informers.append(pg_inf)
        cpg_inf: Informer[CompositePodGroup] | None = None
        if gang_api.podgroups and gang_api.composite:
            cpg_inf = self._owned_informer(client, gang_api.composite_resource, CompositePodGroup)
            self.informers.append(cpg_inf)
        claim_infs: list[Informer[ClaimObject]] = []
        if gang_api.claims:
            for resource in (RESOURCE_CLAIMS, RESOURCE_CLAIM_TEMPLATES):
                claim_infs.append(self._owned_informer(client, resource, ClaimObject))
            self.informers.extend(claim_infs)
        kueue_infs = self._kueue_informers(client) if gang_api.kueue else (None, None)
        self.informers.extend(i for i in kueue_infs if i is not None)
        scale_infs = (
            self._owned_informer(client, SCALING_GROUPS, CliqueScalingGroup),
            self._owned_informer(client, HPAS, HorizontalPodAutoscaler),
        )
        self.informers.extend(scale_infs)
        self.recorder = EventRecorder(client) if cfg.events else None
        with cqs_inf.recording() as registered:
            self._controllers(
                client,
                cqs_inf,
                (cq_inf, pod_inf, svc_inf),
                (wl_inf, pg_inf, cpg_inf),
                gang_api,
                claim_infs,
                kueue_infs,
                scale_infs,
            )
        try:
            await self._serve(shared.admit(cfg.buckets.buckets) if shared else cqs_inf.synced)
        finally:
            if shared:
                shared.unregister(registered)
                shared.forget(cfg.buckets.buckets)

    def _owned_informer(self, client: KubeClient, resource: Resource, kind: type[T]) -> Informer[T]:
        """An informer of objects the CliqueSets of this Manager's buckets own (by label),
        indexed by their controller."""
        cfg = self.config
        return Informer(
            client,
            resource,
            kind,
            namespace=cfg.namespace,
            label_selector=cfg.buckets.selector(),
            indexers={"controller": store.by_controller},
            resync_period=cfg.resync_period,
        )

    def _kueue_informers(
        self, client: KubeClient
    ) -> tuple[Informer[KueueWorkload], Informer[LocalQueue]]:
        """Kueue's Workloads of this Manager's buckets (labelled by Kueue's labelKeysToCopy
        from the pods, docs/kueue.md), indexed by CliqueSet, and the LocalQueues."""
        cfg = self.config
        workloads = Informer(
            client,
            KUEUE_WORKLOADS,
            KueueWorkload,
            namespace=cfg.namespace,
            label_selector=cfg.buckets.selector(),
            indexers={"cliqueset": store.by_label(labels.LABEL_CLIQUESET)},
            resync_period=cfg.resync_period,
        )
        queues = Informer(
            client,
            LOCAL_QUEUES,
            LocalQueue,
            namespace=cfg.namespace,
            resync_period=cfg.resync_period,
        )
        return workloads, queues

    def _child_informers(
        self, client: KubeClient
    ) -> tuple[Informer[Clique], Informer[Pod], Informer[Service]]:
        """The informers of the children of this Manager's buckets (selected by label)."""
        cfg = self.config
        selector = cfg.buckets.selector()
        ns = cfg.namespace
        ctl = store.by_controller
        cq_inf = Informer(
            client,
            CLIQUES,
            Clique,
            namespace=ns,
            label_selector=selector,
            indexers={"controller": ctl, "gang": clique_controller.gang_key},
            resync_period=cfg.resync_period,
            faults=cfg.faults,
            transform=SharedTemplates(),
        )
        pod_inf = Informer(
            client,
            PODS,
            Pod,
            namespace=ns,
            label_selector=selector,
            indexers={"controller": ctl},
            resync_period=cfg.resync_period,
            faults=cfg.faults,
        )
        svc_inf = Informer(
            client,
            SERVICES,
            Service,
            namespace=ns,
            label_selector=selector,
            indexers={"controller": ctl},
            resync_period=cfg.resync_period,
        )
        return cq_inf, pod_inf, svc_inf

    def _controllers(
        self,
        client: KubeClient,
        cqs_inf: CliqueSetCache,
        children: tuple[Informer[Clique], Informer[Pod], Informer[Service]],
        gang_informers: tuple[
            Informer[Workload] | None,
            Informer[PodGroup] | None,
            Informer[CompositePodGroup] | None,
        ],
        gang_api: gangapi.GangAPI,
        claim_informers: list[Informer[ClaimObject]],
        kueue_informers: tuple[Informer[KueueWorkload] | None, Informer[LocalQueue] | None],
        scale_informers: tuple[Informer[CliqueScalingGroup], Informer[HorizontalPodAutoscaler]],
    ) -> None:
        """The two controllers (their handlers registered on the informers) and runners."""
        cfg = self.config
        cq_inf, pod_inf, svc_inf = children
        hasher = Hasher(cfg.hash_algorithm)
        owns = cfg.buckets.owns
        cqs_inf.on_undecodable(undecodable.UndecodableReporter(client, self.recorder, owns))

        by_resource: dict[Resource, Informer[Any]] = {i.resource: i for i in self.informers}
        by_resource[cqs_inf.resource] = cqs_inf

        def written(resource: Resource, raw: bytes) -> None:
            informer = by_resource.get(resource)
            if informer is not None:
                informer.observe_write(raw)

        cqs_exp = Expectations(cliqueset_controller.NAME, ttl=cfg.expectations_ttl)
        cq_exp = Expectations(clique_controller.NAME, ttl=cfg.expectations_ttl)
        cqs_ctl = cliqueset_controller.CliqueSetController(
            cqs_inf,
            cq_inf,
            svc_inf,
            Executor(
                client,
                cqs_exp,
                self.recorder,
                parallelism=cfg.write_parallelism,
                written=written,
            ),
            cqs_exp,
            hasher,
            owns=owns,
            gang_api=gang_api,
            workloads=gang_informers[0],
            pod_groups=gang_informers[1],
            composite_groups=gang_informers[2],
            claim_objects=claim_informers,
            kueue_workloads=kueue_informers[0],
            local_queues=kueue_informers[1],
            scaling_groups=scale_informers[0],
            hpas=scale_informers[1],
            status_hold=cfg.status_hold,
        )
        cq_ctl = clique_controller.CliqueController(
            cq_inf,
            pod_inf,
            Executor(
                client,
                cq_exp,
                self.recorder,
                parallelism=cfg.write_parallelism,
                written=written,
            ),
            cq_exp,
            hasher,
            owns=owns,
            status_hold=cfg.status_hold,
            gate_image=cfg.start_gate_image,
        )

        # Fair hand-out: a Clique's key competes as part of its CliqueSet, in its namespace.
        def clique_group(key: str) -> tuple[str, str]:
            ns, _, name = key.rpartition("/")
            cq = cq_inf.store.get(key)
            owner = cq.metadata.labels.get(labels.LABEL_CLIQUESET) if cq is not None else None
            return ns, owner or name

        cq_ctl.queue.set_group(clique_group)
        self.runners = [
            Runner(
                cliqueset_controller.NAME,
                cqs_ctl.queue,
                cqs_ctl.reconcile,
                concurrency=cfg.concurrency,
                trace=cfg.trace,
            ),
            Runner(
                clique_controller.NAME,
                cq_ctl.queue,
                cq_ctl.reconcile,
                concurrency=cfg.concurrency,
                trace=cfg.trace,
            ),
        ]
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
        try:
            synced: asyncio.Future[Any] = asyncio.gather(
                cliquesets_listed.wait(), *(i.synced.wait() for i in self.informers)
            )
            stop: asyncio.Future[Any] = asyncio.ensure_future(self._stop.wait())
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
            else:
                # Stopped before the caches synced (a shard handed over at start): the
                # cancelled gather ends with a CancelledError as its exception, retrieved
                # here, or asyncio logs its traceback when the future is collected.
                synced.cancel()
                synced.add_done_callback(_retrieve)
            stop.cancel()
        finally:
            log.info("draining work queues")
            await asyncio.gather(*(r.stop(self.drain_grace) for r in self.runners))
            if self.recorder is not None:
                await self.recorder.stop()
            for task in self._tasks:
                task.cancel()
            for task in self._tasks:
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await task
            log.info("stopped")
