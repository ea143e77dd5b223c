"""The timing arithmetic of shard takeovers, with an injected clock and an in-memory API:
a member may take a shard over only once the holder's write fence is closed, and the fence
stays closed until the holder's controllers have stopped.

The takeover tests check the invariant itself, at every step: whenever member A holds a
shard that member B still holds too, B's `writes_allowed()` refuses."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from cliques.operator.shard_leases import ShardCoordinator, Timings
from tests.unit.test_cliqueset_cache import until
from tests.unit.test_shard_fencing import TIMINGS, Clock, FakeLeases, lease, make


class SlowRenewal:
    """The Lease API as one member sees it: its next member Lease renewal runs `during`
    (time passes, others renew) before it is answered."""

    def __init__(self, api: FakeLeases) -> None:
        self.api = api
        self.during: Callable[[], Awaitable[None]] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.api, name)

    async def patch(self, res: Any, ns: str, name: str, body: Any, *a: Any, **kw: Any) -> Any:
        if name.startswith("cliques-member-") and self.during is not None:
            during, self.during = self.during, None
            await during()
        return await self.api.patch(res, ns, name, body, *a, **kw)


def both_open(a: ShardCoordinator, b: ShardCoordinator, shard: int = 0) -> bool:
    """A and B both hold `shard` and B may still write: what fencing rules out."""
    return shard in a.owned and shard in b.owned and b.writes_allowed() is None


async def test_a_renewal_seen_during_a_slow_pass_is_dated_when_it_was_seen() -> None:
    """B renews while A's member renewal hangs for 9.9 s; A must date B's record from when
    its list answer arrived, not from the start of its pass."""
    clock = Clock()
    api = FakeLeases()
    b, _ = make(api, clock, identity="b", shards=1, instance="b")

    async def b_renews_meanwhile() -> None:
        clock.now += 9.9
        await b.tick()  # B's renewal is sent now: its fence closes 10 s later
        clock.now += 0.1

    slow = SlowRenewal(api)
    a, _ = make(slow, clock, identity="a", shards=1, instance="a")  # type: ignore[arg-type]
    await b.tick()
    await a.tick()  # A sees B's lease
    assert list(b.owned) == [0] and a.owned == {}
    clock.now += 10
    slow.during = b_renews_meanwhile
    await a.tick()  # the slow pass: B's renewal arrives in its list answer
    renewed = b.owned[0]
    assert clock.now - renewed < 1  # B renewed late in A's pass
    # B is frozen from here on; A keeps trying.
    while 0 not in a.owned:
        clock.now += 0.5
        await a.tick()
        assert not both_open(a, b), f"A took shard 0 {renewed + 10 - clock.now:.1f}s early"
    assert clock.now > renewed + TIMINGS.renew_deadline


async def test_a_lease_taken_over_never_overlaps_with_fractional_timings() -> None:
    """`--lease-duration 10.9 --renew-deadline 10.5`: the duration written into the Lease
    (which the others go by) is never shorter than the holder's own."""
    timings = Timings(lease_duration=10.9, renew_deadline=10.5, retry_period=0.25)
    clock = Clock()
    api = FakeLeases()
    b, _ = make(api, clock, identity="b", shards=1, instance="b")
    a, _ = make(api, clock, identity="a", shards=1, instance="a")
    a.timings = b.timings = timings
    await b.tick()
    written = api.items["cliques-shard-0"].spec.lease_duration_seconds
    while 0 not in a.owned:
        clock.now += 0.25
        await a.tick()
        assert not both_open(a, b), "A took the shard while B could still write"
    assert written == math.ceil(timings.lease_duration)  # whole seconds, rounded up


async def test_the_fence_stays_closed_until_a_late_shards_controllers_have_stopped() -> None:
    clock = Clock()
    api = FakeLeases()
    stopping = asyncio.Event()
    release = asyncio.Event()

    async def slow_stop(shard: int, hard: bool, grace: float) -> None:
        stopping.set()
        await release.wait()

    coord, _ = make(api, clock, shards=1, instance="i")
    coord.stop_shard = slow_stop
    await coord.tick()
    clock.now = coord.deadline(0) + 0.001
    fence = asyncio.create_task(coord._fence_loop())
    await asyncio.wait_for(stopping.wait(), timeout=5)
    # The watchdog gave the shard up; its controllers are still being cancelled.
    reason = coord.writes_allowed()
    assert reason is not None and "shard 0" in reason
    await coord.tick()  # a pass meanwhile neither renews nor re-takes it
    assert coord.writes_allowed() is not None and 0 not in coord.owned
    release.set()
    # Holds nothing, stops nothing: no fence.
    await until(lambda: coord.writes_allowed() is None, "the fence to open")
    coord.stop()
    coord._changed.set()
    await asyncio.wait_for(fence, timeout=5)


async def test_the_fence_closes_at_the_deadline_itself() -> None:
    clock = Clock()
    coord, _ = make(FakeLeases(), clock, shards=1, instance="i")
    await coord.tick()
    clock.now = coord.deadline(0) - 0.001
    assert coord.writes_allowed() is None
    clock.now = coord.deadline(0)
    assert coord.writes_allowed() is not None


async def test_the_fence_closes_while_the_controllers_of_a_taken_shard_stop() -> None:
    clock = Clock()
    api = FakeLeases()
    stopping = asyncio.Event()
    release = asyncio.Event()
    fenced_while_stopping: list[bool] = []
    coord, _ = make(api, clock, shards=1, instance="i")

    async def slow_stop(shard: int, hard: bool, grace: float) -> None:
        fenced_while_stopping.append(coord.writes_allowed() is not None)
        stopping.set()
        await release.wait()

    coord.stop_shard = slow_stop
    await coord.tick()
    api.items["cliques-shard-0"] = lease("cliques-shard-0", "shard", "b", "j", "99")
    tick = asyncio.create_task(coord.tick())
    await asyncio.wait_for(stopping.wait(), timeout=5)
    assert fenced_while_stopping == [True]
    assert coord.writes_allowed() is not None
    release.set()
    await asyncio.wait_for(tick, timeout=5)
    assert coord.writes_allowed() is None and coord.owned == {}


async def test_the_watchdog_survives_the_hard_stop_of_a_shards_manager(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Manager cancelled by a hard stop ends cancelled: that must not end the watchdog
    (or the pass) that stopped it."""
    from cliques.operator import shard_managers
    from cliques.operator.manager import Config

    class Endless:
        def __init__(self, *_: Any, **__: Any) -> None:
            pass

        def abort(self) -> None:
            pass

        async def run(self) -> None:
            await asyncio.sleep(3600)

    monkeypatch.setattr(shard_managers, "Manager", Endless)
    op = shard_managers.ShardedOperator(Config(shards=2), client=object())  # type: ignore[arg-type]
    clock = Clock()
    coord, _ = make(FakeLeases(), clock, shards=2, instance="i")
    coord.start_shard, coord.stop_shard = op._start, op._stop
    await coord.tick()
    assert op.shards == [0, 1]
    coord.owned[1] = clock.now - TIMINGS.renew_deadline - 1  # shard 1 is late
    fence = asyncio.create_task(coord._fence_loop())
    await until(
        lambda: op.shards == [0] and coord.writes_allowed() is None, "shard 1 to be stopped"
    )
    assert not fence.done(), "the watchdog ended with the Manager it cancelled"
    clock.now = coord.deadline(0)  # and it still stops the next late shard
    coord._changed.set()
    await until(lambda: not op.shards, "shard 0 to be stopped")
    coord.stop()
    coord._changed.set()
    await asyncio.wait_for(fence, timeout=5)
