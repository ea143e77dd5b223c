"""One CliqueSet informer per operator process, on the real local control plane: two (then
three) in-process members splitting 4 shards through Leases. Each member's cache holds the
CliqueSets of the shards it holds and no other, however the shards move; a member that
gains a shard reconciles that shard's CliqueSets without any new event about them (a
change made while nobody held the shard is carried out by its new holder)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from cliques import _core
from cliques.kube.resources import CLIQUESETS
from cliques.operator.manager import Config
from cliques.operator.shard_leases import shard_buckets
from cliques.operator.shard_managers import ShardedOperator
from tests.support.harness import Cluster, cliqueset, wait_for

pytestmark = pytest.mark.cluster

SHARDS = 4


def names_per_shard(ns: str) -> dict[int, str]:
    """One CliqueSet name in each shard."""
    out: dict[int, str] = {}
    for i in range(10_000):
        name = f"s{i}"
        shard = next(
            s for s in range(SHARDS) if _core.bucket_of(ns, name) in shard_buckets(s, SHARDS)
        )
        out.setdefault(shard, name)
        if len(out) == SHARDS:
            return out
    raise AssertionError("no name for every shard")


class Member:
    def __init__(self, crds: str, ns: str, identity: str) -> None:
        self.op = ShardedOperator(
            Config(
                kubeconfig=crds,
                namespace=ns,
                qps=0,
                leases=True,
                lease_namespace=ns,
                identity=identity,
                shards=SHARDS,
                lease_duration=4,
                renew_deadline=3,
                retry_period=1,
                events=False,
            )
        )
        self.task: asyncio.Task[None] = asyncio.create_task(self.op.run())

    def cached(self) -> set[str]:
        assert self.op.cliquesets is not None
        return {key.rpartition("/")[2] for key in self.op.cliquesets.store}

    def one_informer(self) -> bool:
        """Every shard's Manager uses the process's CliqueSet cache and runs none itself."""
        return all(
            m.shared_cliquesets is self.op.cliquesets
            and all(i.resource != CLIQUESETS for i in m.informers)
            for m, _ in self.op.managers.values()
        )

    async def stop(self) -> None:
        self.op.stop()
        await asyncio.wait_for(self.task, timeout=30)

    async def crash(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


async def test_each_member_caches_the_cliquesets_of_its_shards_only(
    cluster: Cluster, crds: str
) -> None:
    ns = cluster.namespace
    names = names_per_shard(ns)
    for name in names.values():
        await cluster.apply(cliqueset(name=name, replicas=1, workers=1))
    members = [Member(crds, ns, "a"), Member(crds, ns, "b")]

    async def caches_match(*live: Member) -> bool:
        held = [set(m.op.shards) for m in live]
        return (
            all(held)  # every member holds a shard, and every shard is held once
            and sorted(s for h in held for s in h) == list(range(SHARDS))
            and all(m.op.ready() and m.one_informer() for m in live)
            and all(m.cached() == {names[s] for s in h} for m, h in zip(live, held, strict=True))
        )

    a, b = members
    try:
        await wait_for(
            lambda: caches_match(a, b), timeout=60, what="a and b to cache their shards' sets"
        )
        for name in names.values():
            await cluster.wait_available(name)

        # a dies; its sets are scaled while nobody holds their shards: b takes the shards
        # over and carries the change out (no event about those sets reaches b after that).
        gone = {names[s] for s in a.op.shards}
        await a.crash()
        for name in gone:
            await cluster.apply(cliqueset(name=name, replicas=2, workers=1))
        await wait_for(lambda: caches_match(b), timeout=30, what="b to cache every set")
        for name in gone:
            await cluster.wait_available(name)

        # c joins: b hands shards over, and drops their sets from its cache
        c = Member(crds, ns, "c")
        members.append(c)
        await wait_for(
            lambda: caches_match(b, c), timeout=60, what="b and c to cache their shards' sets"
        )
        assert len(b.cached()) < len(names)
        for name in names.values():
            await cluster.apply(cliqueset(name=name, replicas=3, workers=1))
        for name in names.values():
            await cluster.wait_available(name)
    finally:
        for m in members:
            if not m.task.done():
                await m.stop()
