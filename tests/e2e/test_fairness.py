"""One tenant's creates do not starve another's: while a large CliqueSet's creates queue
behind the client's rate limit, a small CliqueSet applied after it becomes Available within
a bound, because the work queue and the rate limiter serve CliqueSets (and namespaces) in
turn instead of first come, first served."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from cliques.operator.manager import Config, Manager
from tests.support.harness import Cluster, cliqueset, wait_for

pytestmark = pytest.mark.cluster

QPS = 15.0
BIG_GANGS = 150  # 150 Cliques x 2 + 150 Services + 300 pods: ~40 s of writes at 15 QPS
SMALL_BOUND = 5.0  # seconds from the small set's apply to Available (measured: ~1-2 s)


async def test_a_small_set_is_not_starved_by_a_large_one(cluster: Cluster, crds: str) -> None:
    ns = cluster.namespace
    manager = Manager(Config(kubeconfig=crds, namespace=ns, qps=QPS, burst=int(QPS), events=False))
    task = asyncio.create_task(manager.run())
    try:
        await wait_for(lambda: _ready(manager, task), timeout=30, what="operator synced")
        await cluster.apply(cliqueset(name="big", replicas=BIG_GANGS, leader=1, workers=1))

        async def big_under_way() -> bool:  # its creates have filled the limiter's line
            assert manager.client is not None
            return manager.client.limiter.waiting >= 20

        await wait_for(big_under_way, timeout=30, what="the big set's writes queued")
        applied = time.monotonic()
        await cluster.apply(cliqueset(name="small", replicas=1, leader=1, workers=1))
        await cluster.wait_available("small", timeout=60)
        took = time.monotonic() - applied
        big = await cluster.cliqueset("big")
        big_ready = big.status.ready_replicas if big.status else 0
        print(f"small set Available {took:.1f}s after its apply; big set {big_ready} gangs ready")
        assert big_ready < BIG_GANGS, "the big set finished first: nothing was measured"
        assert took < SMALL_BOUND, f"the small set waited {took:.1f}s behind the big one"
    finally:
        manager.stop(0)
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, timeout=30)


async def _ready(manager: Manager, task: asyncio.Task[None]) -> bool:
    if task.done():
        task.result()
    return manager.ready()
