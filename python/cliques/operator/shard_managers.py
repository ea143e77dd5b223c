"""An operator process in a multi-replica deployment: one Manager per shard it holds.

`shard_leases.ShardCoordinator` decides which shards this process holds; for each one a
`Manager` runs with that shard's buckets (its informers watch only those buckets' children)
on one shared controller client. The CliqueSets come from one informer per process, shared
by its Managers, whose cache keeps only the CliqueSets of the shards this process runs
(`cliqueset_cache`): a Manager admits its buckets when it starts and forgets them when it
stops. The leases travel on a client of their own, with its own rate limiter, so a renewal
never queues behind controller writes.

Stopping a shard: a shard handed back is drained (in-flight reconciles finish within the
time left before its renew deadline, then are cancelled); a shard lost (its lease taken, or
not renewed in time) is cancelled at once, even while it drains, and only returns once its
Manager has ended; several shards stop together. The controller client refuses every write
once a held shard is past its renew deadline, and while a lost shard stops (`Fenced`), so a
frozen or partitioned process writes nothing after it. A Manager that crashes gives its
shard back (after a growing cool-down this process may take it again) instead of renewing
a lease that nobody serves. If the CliqueSet informer itself dies, the process hands every
shard back and fails (its supervisor restarts it).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import socket

from cliques.kube import gangapi
from cliques.kube.client import KubeClient
from cliques.kube.startup import StartupError, Stopped
from cliques.operator import preflight
from cliques.operator.buckets import BucketSet
from cliques.operator.cliqueset_cache import CliqueSetCache
from cliques.operator.manager import Config, Manager, connect
from cliques.operator.shard_leases import ShardCoordinator, Timings, shard_buckets

log = logging.getLogger(__name__)

#: Seconds before a shard whose controllers crashed may be taken again (doubling, capped).
CRASH_COOLDOWN = 1.0
CRASH_COOLDOWN_MAX = 60.0


def default_identity() -> str:
    """The pod's name (the Deployment sets POD_NAME), else the host name."""
    return os.environ.get("POD_NAME") or socket.gethostname()


class ShardedOperator:
    def __init__(
        self,
        config: Config,
        client: KubeClient | None = None,
        lease_client: KubeClient | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.lease_client = lease_client
        self.managers: dict[int, tuple[Manager, asyncio.Task[None]]] = {}
        #: Managers asked to stop whose task has not ended yet
        self.stopping: dict[int, tuple[Manager, asyncio.Task[None]]] = {}
        #: the process's CliqueSet informer, shared by the Managers (made by `run()`)
        self.cliquesets: CliqueSetCache | None = None
        self._cache_failed: BaseException | None = None
        self.coordinator: ShardCoordinator | None = None
        self.synced = asyncio.Event()
        self._crashes: dict[int, int] = {}
        self._stopping = False
        self._stop_requested = asyncio.Event()
        #: what the cluster serves for gang scheduling, asked once (`preflight`)
        self.gang_api: gangapi.GangAPI | None = None

    def ready(self) -> bool:
        return self.coordinator is not None and all(m.ready() for m, _ in self.managers.values())

    def stop(self) -> None:
        self._stopping = True
        self._stop_requested.set()
        if self.coordinator is not None:
            self.coordinator.stop()

    @property
    def shards(self) -> list[int]:
        return sorted(self.managers)

    async def _start(self, shard: int) -> None:
        assert self.client is not None
        cfg = dataclasses.replace(
            self.config, buckets=BucketSet(shard_buckets(shard, self.config.shards))
        )
        manager = Manager(
            cfg, client=self.client, cliquesets=self.cliquesets, gang_api=self.gang_api
        )
        task = asyncio.create_task(manager.run(), name=f"shard-{shard}")
        task.add_done_callback(lambda t: self._ended(shard, manager, t))
        self.managers[shard] = (manager, task)

    def _ended(self, shard: int, manager: Manager, task: asyncio.Task[None]) -> None:
        """A Manager ended: by itself (not stopped), its shard is given back."""
        stopping = self.stopping.get(shard)
        if stopping is not None and stopping[0] is manager:
            del self.stopping[shard]
        entry = self.managers.get(shard)
        if entry is None or entry[0] is not manager or self._stopping:
            return
        self.managers.pop(shard, None)
        exc = None if task.cancelled() else task.exception()
        if isinstance(exc, StartupError):
            # Nothing another try fixes: every shard would end the same way.
            self._cache_failed = exc
            self.stop()
            return
        crashes = self._crashes[shard] = self._crashes.get(shard, 0) + 1
        cooldown = min(CRASH_COOLDOWN * 2 ** (crashes - 1), CRASH_COOLDOWN_MAX)
        log.error(
            "shard %d: controllers stopped (%r); handing the shard back for %gs",
            shard,
            exc,
            cooldown,
        )
        if self.coordinator is not None:
            asyncio.get_running_loop().create_task(self.coordinator.drop(shard, cooldown))

    async def _stop(self, shard: int, hard: bool, grace: float) -> None:
        """Stop a shard's Manager; return once it has ended. A hard stop also cancels one
        that is draining already."""
        entry = self.managers.pop(shard, None) or self.stopping.get(shard)
        if entry is None:
            return
        manager, task = entry
        if not task.done():
            self.stopping[shard] = entry  # until it ends (`_ended`)
        if hard:
            manager.abort()
            task.cancel()
        else:
            manager.stop(grace)
        # The manager's own drain is bounded by `grace`; a little more for its close. (Its
        # end, cancelled or failed, is waited for, never raised here.)
        done, _ = await asyncio.wait({task}, timeout=grace + 5.0)
        if not done:
            manager.abort()
            task.cancel()
            await asyncio.wait({task})
        if not task.cancelled() and task.exception() is not None:
            log.warning("shard %d: controllers ended with %r", shard, task.exception())
        log.info("shard %d: %s", shard, "cancelled" if hard else "drained")

    async def run(self) -> None:
        cfg = self.config
        own = self.client is None, self.lease_client is None
        if self.client is None:
            self.client = await connect(cfg)
        if self.lease_client is None:
            # Few requests, but they must never wait behind the controllers' writes.
            self.lease_client = await connect(dataclasses.replace(cfg, qps=20.0, burst=40))
        try:
            # Once per process, before any Lease is taken: a process that cannot serve
            # must not hold shards others could.
            self.gang_api = await preflight.check(
                self.client, self._stop_requested, namespace=cfg.namespace
            )
        except Stopped:
            await self._close_clients(own)
            return
        except BaseException:
            await self._close_clients(own)
            raise
        log.info("gang scheduling: %s", self.gang_api.describe())
        identity = cfg.identity or default_identity()
        self.cliquesets = CliqueSetCache(
            self.client, namespace=cfg.namespace, resync_period=cfg.resync_period
        )
        cache = asyncio.create_task(self.cliquesets.run(), name="cliquesets")
        cache.add_done_callback(self._cache_ended)
        self.coordinator = ShardCoordinator(
            self.lease_client,
            cfg.lease_namespace,
            identity,
            cfg.shards,
            self._start,
            self._stop,
            Timings(cfg.lease_duration, cfg.renew_deadline, cfg.retry_period),
        )
        self.client.write_guard = self.coordinator.writes_allowed
        log.info(
            "sharding with leases in %s as %r (instance %s, %d shards)",
            cfg.lease_namespace,
            identity,
            self.coordinator.instance,
            cfg.shards,
        )
        self.synced.set()
        try:
            await self.coordinator.run()
        finally:
            self._stopping = True
            shards = {*self.managers, *self.stopping}
            await asyncio.gather(*(self._stop(s, True, 0.0) for s in shards))
            cache.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await cache
            await self._close_clients(own)
        if isinstance(self._cache_failed, StartupError):
            raise self._cache_failed
        if self._cache_failed is not None:
            raise RuntimeError(f"the CliqueSet informer stopped: {self._cache_failed!r}")

    async def _close_clients(self, own: tuple[bool, bool]) -> None:
        if own[0] and self.client is not None:
            await self.client.close()
        if own[1] and self.lease_client is not None:
            await self.lease_client.close()

    def _cache_ended(self, task: asyncio.Task[None]) -> None:
        """The CliqueSet informer ended by itself: hand every shard back, then fail."""
        if self._stopping or task.cancelled():
            return
        self._cache_failed = task.exception() or RuntimeError("it returned")
        log.error(
            "the CliqueSet informer stopped (%r): handing every shard back", self._cache_failed
        )
        self.stop()
