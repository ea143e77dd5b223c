"""The shard Lease protocol's decisions, with an injected clock and an in-memory API: the
write fence, hard stops at the renew deadline, instance identity, paginated lists and the
clean-up of dead members' Leases."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

from cliques.api.labels import ANNOTATION_INSTANCE
from cliques.kube import errors
from cliques.operator.shard_leases import (
    LABEL_ROLE,
    Lease,
    LeaseMeta,
    LeaseSpec,
    ShardCoordinator,
    Timings,
)

TIMINGS = Timings(lease_duration=15, renew_deadline=10, retry_period=2)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def lease(name: str, role: str, holder: str, instance: str = "", rv: str = "1") -> Lease:
    return Lease(
        metadata=LeaseMeta(
            name=name,
            resource_version=rv,
            labels={LABEL_ROLE: role},
            annotations={ANNOTATION_INSTANCE: instance} if instance else {},
        ),
        spec=LeaseSpec(holder_identity=holder, renew_time="t0", lease_duration_seconds=15),
    )


class FakeLeases:
    """The Lease API of one namespace: list pages of `page` items, guarded replaces."""

    def __init__(self, page: int = 500) -> None:
        self.items: dict[str, Lease] = {}
        self.page = page
        self.deleted: list[tuple[str, str | None]] = []
        self.lists = 0

    async def list_page(self, _res: Any, _ns: str, *, continue_token: str = "", **_: Any) -> bytes:
        self.lists += 1
        names = sorted(self.items)
        start = int(continue_token or 0)
        chunk = names[start : start + self.page]
        more = start + self.page < len(names)
        return msgspec.json.encode(
            {
                "items": [self.items[n] for n in chunk],
                "metadata": {"continue": str(start + self.page) if more else ""},
            }
        )

    async def delete(self, _res: Any, _ns: str, name: str, **kw: Any) -> None:
        self.deleted.append((name, kw.get("resource_version")))
        self.items.pop(name, None)

    async def patch(self, _res: Any, _ns: str, name: str, body: Any, *_: Any, **__: Any) -> Any:
        if name not in self.items:
            raise errors.NotFound(404, "NotFound", name)
        return await self.replace(_res, _ns, name, body, None)

    async def create(self, _res: Any, _ns: str, body: Any, *_: Any) -> Any:
        name = body["metadata"]["name"]
        if name in self.items:
            raise errors.AlreadyExists(409, "AlreadyExists", name)
        return await self.replace(_res, _ns, name, body, None)

    async def replace(self, _res: Any, _ns: str, name: str, body: Any, *_: Any) -> Any:
        current = self.items.get(name)
        rv = body["metadata"].get("resourceVersion")
        if current is not None and rv and rv != current.metadata.resource_version:
            raise errors.Conflict(409, "Conflict", name)
        new = msgspec.convert(body, Lease)
        new.metadata.resource_version = str(
            int(current.metadata.resource_version) + 1 if current else 1
        )
        self.items[name] = new
        return new


def make(api: FakeLeases, clock: Clock, **kw: Any) -> tuple[ShardCoordinator, list[Any]]:
    calls: list[Any] = []

    async def start(shard: int) -> None:
        calls.append(("start", shard))

    async def stop(shard: int, hard: bool, grace: float) -> None:
        calls.append(("stop", shard, hard))

    coord = ShardCoordinator(
        api,  # type: ignore[arg-type]
        "ns",
        kw.pop("identity", "pod-a-worker-0"),
        kw.pop("shards", 2),
        start,
        stop,
        TIMINGS,
        clock=clock,
        **kw,
    )
    return coord, calls


async def test_writes_are_fenced_once_a_held_shard_passes_its_renew_deadline() -> None:
    clock = Clock()
    coord, _ = make(FakeLeases(), clock)
    assert coord.writes_allowed() is None  # holds nothing
    coord.owned = {0: clock.now, 1: clock.now - 5}
    assert coord.writes_allowed() is None
    clock.now += 5.5  # shard 1 last renewed 10.5 s ago
    reason = coord.writes_allowed()
    assert reason is not None and "shard 1" in reason and "fenced" in reason


async def test_the_watchdog_cancels_every_late_shard_at_once() -> None:
    clock = Clock()
    coord, calls = make(FakeLeases(), clock, shards=3)
    coord.owned = {0: clock.now - 11, 1: clock.now - 12, 2: clock.now}
    task = asyncio.create_task(coord._fence_loop())
    for _ in range(100):
        if len(calls) == 2:
            break
        await asyncio.sleep(0.01)
    coord.stop()
    coord._changed.set()
    await asyncio.wait_for(task, timeout=5)
    assert sorted(calls) == [("stop", 0, True), ("stop", 1, True)]
    assert set(coord.owned) == {2}


async def test_a_lease_left_by_an_earlier_process_of_the_same_name_is_not_ours() -> None:
    clock = Clock()
    api = FakeLeases()
    api.items["cliques-shard-0"] = lease("cliques-shard-0", "shard", "pod-a-worker-0", "old-1")
    api.items["cliques-shard-1"] = lease("cliques-shard-1", "shard", "pod-a-worker-0", "old-1")
    coord, calls = make(api, clock, instance="new-2")
    await coord.tick()
    assert coord.owned == {} and calls == []  # not taken while the old holder may write
    clock.now += 16  # nobody renewed them for a lease duration: expired
    await coord.tick()
    assert sorted(coord.owned) == [0, 1]
    assert calls == [("start", 0), ("start", 1)]
    held = api.items["cliques-shard-0"]
    assert held.metadata.annotations[ANNOTATION_INSTANCE] == "new-2"
    assert held.spec.lease_transitions == 1  # a takeover, not a renewal


async def test_a_shard_taken_by_another_member_is_cancelled_hard() -> None:
    clock = Clock()
    api = FakeLeases()
    coord, calls = make(api, clock, shards=1, instance="i")
    await coord.tick()
    assert coord.owned == {0: clock.now}
    api.items["cliques-shard-0"] = lease("cliques-shard-0", "shard", "pod-b-worker-0", "j", "99")
    await coord.tick()
    assert coord.owned == {}
    assert calls == [("start", 0), ("stop", 0, True)]


async def test_the_lease_list_reads_every_page() -> None:
    api = FakeLeases(page=2)
    for i in range(5):
        api.items[f"cliques-member-m{i}"] = lease(f"cliques-member-m{i}", "member", f"m{i}")
    coord, _ = make(api, Clock())
    leases = await coord._list()
    assert len(leases) == 5 and api.lists == 3


async def test_member_leases_of_long_gone_members_are_deleted() -> None:
    clock = Clock()
    api = FakeLeases()
    api.items["cliques-member-gone"] = lease("cliques-member-gone", "member", "gone", rv="7")
    coord, _ = make(api, clock, shards=1)
    await coord.tick()
    clock.now += 20  # expired, but not for two lease durations yet
    await coord.tick()
    assert api.deleted == []
    clock.now += 15
    await coord.tick()
    assert api.deleted == [("cliques-member-gone", "7")]
    assert "cliques-member-pod-a-worker-0" in api.items  # its own is kept


async def test_surplus_shards_are_drained_then_handed_back() -> None:
    clock = Clock()
    api = FakeLeases()
    coord, calls = make(api, clock, shards=2, instance="i")
    await coord.tick()
    assert sorted(coord.owned) == [0, 1]
    api.items["cliques-member-pod-b-worker-0"] = lease(
        "cliques-member-pod-b-worker-0", "member", "pod-b-worker-0"
    )
    await coord.tick()  # two members now: a fair share of 1
    await asyncio.gather(*coord.releasing.values())
    assert sorted(coord.owned) == [0]
    assert ("stop", 1, False) in calls
    assert not api.items["cliques-shard-1"].spec.holder_identity


async def test_a_renew_pass_is_bounded_by_the_renew_deadline() -> None:
    class Hanging(ShardCoordinator):
        async def tick(self) -> None:
            self.ticks = getattr(self, "ticks", 0) + 1
            if self.ticks == 1:
                await asyncio.sleep(3600)
            self.stop()

    coord = Hanging(
        FakeLeases(),  # type: ignore[arg-type]
        "ns",
        "me",
        1,
        lambda _s: asyncio.sleep(0),
        lambda *_: asyncio.sleep(0),
        Timings(lease_duration=0.3, renew_deadline=0.1, retry_period=0.01),
    )
    await asyncio.wait_for(coord.run(), timeout=5)
    assert coord.ticks == 2  # the hung pass was cut off after the renew deadline


async def test_a_dead_members_shards_are_taken_one_lease_duration_after_it_died() -> None:
    """Even by members that were at their fair share (and so never looked at those
    leases) while it lived."""
    clock = Clock()
    api = FakeLeases()
    members = [make(api, clock, identity=n, shards=4, instance=n)[0] for n in ("a", "b")]
    for _ in range(3):
        for m in members:
            await m.tick()
        for m in members:
            await asyncio.gather(*m.releasing.values())
        clock.now += 2
    a, b = members
    assert len(a.owned) == len(b.owned) == 2
    died = clock.now  # a is gone: nothing of it changes from here on
    while len(b.owned) < 4:
        clock.now += 2
        await b.tick()
        assert clock.now - died <= TIMINGS.lease_duration + 2 * TIMINGS.retry_period


async def test_a_dropped_shard_is_handed_back_and_not_taken_again_before_its_cooldown() -> None:
    clock = Clock()
    api = FakeLeases()
    coord, calls = make(api, clock, shards=1, instance="i")
    await coord.tick()
    assert list(coord.owned) == [0]
    await coord.drop(0, cooldown=10)
    await asyncio.gather(*coord.releasing.values())
    assert coord.owned == {} and not api.items["cliques-shard-0"].spec.holder_identity
    clock.now += 5
    await coord.tick()
    assert coord.owned == {}  # cooling down
    clock.now += 6
    await coord.tick()
    assert list(coord.owned) == [0]
    assert calls == [("start", 0), ("stop", 0, False), ("start", 0)]


async def test_a_crashed_manager_gives_its_shard_back(monkeypatch: pytest.MonkeyPatch) -> None:
    from cliques.operator import shard_managers
    from cliques.operator.manager import Config

    class Crashing:
        def __init__(self, *_: Any, **__: Any) -> None:
            pass

        async def run(self) -> None:
            raise RuntimeError("informer pods stopped")

    dropped: list[tuple[int, float]] = []

    class Coordinator:
        async def drop(self, shard: int, cooldown: float) -> None:
            dropped.append((shard, cooldown))

    monkeypatch.setattr(shard_managers, "Manager", Crashing)
    op = shard_managers.ShardedOperator(Config(), client=object())  # type: ignore[arg-type]
    op.coordinator = Coordinator()  # type: ignore[assignment]
    for expected in ([(3, 1.0)], [(3, 1.0), (3, 2.0)]):
        await op._start(3)
        for _ in range(100):
            if len(dropped) == len(expected):
                break
            await asyncio.sleep(0.01)
        assert dropped == expected  # the cool-down doubles with each crash
        assert op.shards == []
