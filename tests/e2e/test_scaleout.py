"""Scale-out on the real local control plane: a supervisor whose worker is killed -9 during a
scale-up, and several operator instances splitting the shards through Leases."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import defaultdict
from pathlib import Path

import pytest

from cliques import _core
from cliques.operator.manager import Config
from cliques.operator.shard_managers import ShardedOperator
from tests.support.harness import Cluster, PodTracker, cliqueset, wait_for

pytestmark = pytest.mark.cluster


def names_in_buckets(ns: str, ranges: list[range], per_range: int) -> list[str]:
    """CliqueSet names whose buckets fall in each of `ranges` (so every worker has work)."""
    out: list[str] = []
    for r in ranges:
        found = 0
        for i in range(10_000):
            name = f"g{i}"
            if _core.bucket_of(ns, name) in r and name not in out:
                out.append(name)
                found += 1
                if found == per_range:
                    break
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_killed_worker_is_restarted_and_nothing_is_created_twice(
    cluster: Cluster, crds: str, tmp_path: Path
) -> None:
    ns = cluster.namespace
    port = free_port()
    log_path = tmp_path / "operator.log"
    names = names_in_buckets(ns, [range(0, 128), range(128, 256)], per_range=2)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cliques",
                "operator",
                "--workers",
                "2",
                "--kubeconfig",
                crds,
                "--namespace",
                ns,
                "--metrics-port",
                str(port),
                "--qps",
                "0",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:

        async def ready() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False

        await wait_for(ready, timeout=60, what="supervisor /readyz")
        async with PodTracker(cluster.client, ns, pods_per_gang=21) as tracker:
            for name in names:
                await cluster.apply(cliqueset(name=name, replicas=2, workers=20))

            async def some_pods() -> bool:
                return len(tracker.added) >= 20

            await wait_for(some_pods, timeout=60, what="the scale-up to be under way")
            text = log_path.read_text()
            pid = int(re.findall(r"worker-0 started \(pid (\d+)", text)[-1])
            os.kill(pid, signal.SIGKILL)
            for name in names:
                await cluster.wait_available(name, timeout=180)
            total = len(names) * 2 * 21
            assert len(tracker.added) == total == len(set(tracker.added)), "double create"
            assert tracker.deleted == []

        def restarted() -> bool:
            return f"worker-0 (pid {pid}) exited with signal SIGKILL" in log_path.read_text()

        assert restarted(), log_path.read_text()[-2000:]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            metrics = r.read().decode()
        assert re.search(r'cliques_worker_restarts_total\{worker="worker-0"\} 1\.0', metrics)
        assert "cliques_reconciles_total" in metrics  # workers' metrics aggregated
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert code == 0, log_path.read_text()[-2000:]


class Instance:
    def __init__(self, crds: str, ns: str, identity: str, trace: list) -> None:  # type: ignore[type-arg]
        def record(controller: str, key: str, start: float, end: float) -> None:
            trace.append((key, identity, start, end))

        self.identity = identity
        self.op = ShardedOperator(
            Config(
                kubeconfig=crds,
                namespace=ns,
                qps=0,
                leases=True,
                lease_namespace=ns,
                identity=identity,
                shards=4,
                lease_duration=4,
                renew_deadline=3,
                retry_period=1,
                trace=record,
                events=False,
            )
        )
        self.task: asyncio.Task[None] = asyncio.create_task(self.op.run())

    async def stop(self) -> None:
        self.op.stop()
        await asyncio.wait_for(self.task, timeout=30)

    async def crash(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


def overlaps(trace: list) -> list[str]:  # type: ignore[type-arg]
    """Keys reconciled by two identities at overlapping times."""
    by_key: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
    for key, ident, start, end in trace:
        by_key[key].append((start, end, ident))
    bad = []
    for key, spans in by_key.items():
        spans.sort()
        for (_s1, e1, i1), (s2, _e2, i2) in itertools.pairwise(spans):
            if i1 != i2 and s2 < e1:
                bad.append(key)
    return bad


async def test_instances_split_shards_take_over_and_rebalance(cluster: Cluster, crds: str) -> None:
    ns = cluster.namespace
    trace: list = []  # type: ignore[type-arg]
    names = names_in_buckets(ns, [range(i * 64, (i + 1) * 64) for i in range(4)], per_range=1)
    a = Instance(crds, ns, "a", trace)
    b = Instance(crds, ns, "b", trace)
    try:

        async def split() -> bool:
            held = (a.op.shards, b.op.shards)
            return len(held[0]) == 2 and len(held[1]) == 2

        await wait_for(split, timeout=30, what="a and b to hold 2 shards each")
        for name in names:
            await cluster.apply(cliqueset(name=name, replicas=1, workers=1))
        for name in names:
            await cluster.wait_available(name)
        owners: dict[str, set[str]] = defaultdict(set)
        for key, ident, _s, _e in trace:
            owners[key].add(ident)
        assert owners and all(len(v) == 1 for v in owners.values()), dict(owners)
        assert {i for v in owners.values() for i in v} == {"a", "b"}

        # a dies without releasing: b takes its shards once the leases expire
        killed = time.monotonic()
        await a.crash()

        async def taken() -> bool:
            return len(b.op.shards) == 4

        await wait_for(taken, timeout=30, what="b to take over every shard")
        takeover = time.monotonic() - killed
        assert takeover <= 4 + 5, f"takeover took {takeover:.1f}s (lease 4s)"
        for name in names:
            await cluster.apply(cliqueset(name=name, replicas=2, workers=1))
        for name in names:
            await cluster.wait_available(name)

        # a third instance joins: shards rebalance, nobody handles a key at the same time
        c = Instance(crds, ns, "c", trace)
        try:

            async def rebalanced() -> bool:
                return (
                    len(c.op.shards) >= 1
                    and len(b.op.shards) <= 2
                    and (len(b.op.shards) + len(c.op.shards) == 4)
                )

            await wait_for(rebalanced, timeout=30, what="b and c to share the shards")
            for name in names:
                await cluster.apply(cliqueset(name=name, replicas=3, workers=1))
            for name in names:
                await cluster.wait_available(name)
        finally:
            await c.stop()
    finally:
        await b.stop()
        if not a.task.done():
            await a.stop()
    assert overlaps(trace) == [], "a key was reconciled by two instances at once"
