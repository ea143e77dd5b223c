"""An operator process in a multi-replica deployment: one Manager per shard it holds.

The `ShardCoordinator` decides which shards this process holds; for each one a `Manager`
runs with that shard's buckets (its informers watch only those buckets' children) on a
shared client. Losing or releasing a shard stops its Manager first (its queues drain), so a
shard is never reconciled by two processes at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging

from cliques.kube.client import KubeClient
from cliques.operator.buckets import BucketSet
from cliques.operator.manager import Config, Manager, connect
from cliques.operator.sharding import ShardCoordinator, Timings, shard_buckets

log = logging.getLogger(__name__)


class ShardedOperator:
    def __init__(self, config: Config, client: KubeClient | None = None) -> None:
        self.config = config
        self.client = client
        self.managers: dict[int, tuple[Manager, asyncio.Task[None]]] = {}
        self.coordinator: ShardCoordinator | None = None
        self.synced = asyncio.Event()

    def ready(self) -> bool:
        return self.coordinator is not None and all(m.ready() for m, _ in self.managers.values())

    def stop(self) -> None:
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
        manager = Manager(cfg, client=self.client)
        task = asyncio.create_task(manager.run(), name=f"shard-{shard}")
        self.managers[shard] = (manager, task)

    async def _stop(self, shard: int) -> None:
        entry = self.managers.pop(shard, None)
        if entry is None:
            return
        manager, task = entry
        manager.stop()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout=30)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        log.info("shard %d: stopped", shard)

    async def run(self) -> None:
        cfg = self.config
        own_client = self.client is None
        if self.client is None:
            self.client = await connect(cfg)
        identity = cfg.identity or _default_identity()
        self.coordinator = ShardCoordinator(
            self.client,
            cfg.lease_namespace,
            identity,
            cfg.shards,
            self._start,
            self._stop,
            Timings(cfg.lease_duration, cfg.renew_deadline, cfg.retry_period),
        )
        log.info(
            "sharding with leases in %s as %r (%d shards)",
            cfg.lease_namespace,
            identity,
            cfg.shards,
        )
        self.synced.set()
        try:
            await self.coordinator.run()
        finally:
            for shard in list(self.managers):
                await self._stop(shard)
            if own_client:
                await self.client.close()


def _default_identity() -> str:
    import os
    import socket

    return os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"
