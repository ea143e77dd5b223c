"""The process's CliqueSet cache (`operator.cliqueset_cache`) against an in-memory API: it
keeps only the CliqueSets of the buckets admitted, from lists and from watch events; a shard
admitted at runtime gets its CliqueSets as ADDED events; a shard forgotten is dropped
without events and its handlers are removed; and a shard's hard stop waits for a Manager
that is draining already."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import msgspec
import pytest

from cliques import _core
from cliques.kube.client import WatchEvent
from cliques.operator.cliqueset_cache import CliqueSetCache
from cliques.operator.shard_leases import shard_buckets

from .planner_fixtures import cliqueset

NS = "ns"
SHARDS = 4
A, B = shard_buckets(0, SHARDS), shard_buckets(1, SHARDS)


def names_in(buckets: list[int], count: int) -> list[str]:
    """`count` CliqueSet names of namespace NS whose bucket is in `buckets`."""
    out = []
    i = 0
    while len(out) < count:
        name = f"set-{i}"
        if _core.bucket_of(NS, name, 256) in buckets:
            out.append(name)
        i += 1
    return out


class FakeAPI:
    """CliqueSets of one namespace: lists at the current resourceVersion, and a watch
    that streams what is put after it started."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.rv = 100
        self.lists = 0
        self.events: asyncio.Queue[tuple[str, bytes]] = asyncio.Queue()
        self.during_list: Callable[[], Awaitable[None]] | None = None

    def put(self, name: str, body: bytes | None = None, *, event: str = "ADDED") -> bytes:
        self.rv += 1
        if body is None:
            obj = copy.deepcopy(cliqueset())
            obj.metadata.name = name
            obj.metadata.namespace = NS
            obj.metadata.uid = f"uid-{name}"
            obj.metadata.resource_version = str(self.rv)
            body = msgspec.json.encode(obj)
        self.objects[name] = body
        self.events.put_nowait((event, body))
        return body

    def delete(self, name: str) -> None:
        self.rv += 1
        self.events.put_nowait(("DELETED", self.objects.pop(name)))

    async def list_page(self, _res: Any, _ns: Any, **_: Any) -> bytes:
        self.lists += 1
        during, self.during_list = self.during_list, None
        if during is not None:
            await during()
        items = b",".join(self.objects.values())
        self.events = asyncio.Queue()  # a watch starts from this list
        return b'{"metadata":{"resourceVersion":"%d"},"items":[%s]}' % (self.rv, items)

    async def watch(self, _res: Any, _ns: Any, **_: Any) -> AsyncIterator[WatchEvent]:
        events = self.events
        while True:
            kind, raw = await events.get()
            yield WatchEvent(type=kind, object=msgspec.Raw(raw))


async def until(condition: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    """Wait for `condition`, checking every 5 ms, for at most `timeout` seconds."""
    for _ in range(int(timeout / 0.005)):
        if condition():
            return
        await asyncio.sleep(0.005)
    assert condition(), f"timed out waiting for {what}"


class Seen:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def __call__(self, kind: str, old: Any, new: Any) -> None:
        self.events.append((kind, new.metadata.name))


@pytest.fixture
async def running() -> AsyncIterator[tuple[FakeAPI, CliqueSetCache]]:
    api = FakeAPI()
    cache = CliqueSetCache(api, namespace=NS)  # type: ignore[arg-type]
    task = asyncio.create_task(cache.run())
    yield api, cache
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_only_the_cliquesets_of_admitted_buckets_are_kept(
    running: tuple[FakeAPI, CliqueSetCache],
) -> None:
    api, cache = running
    a, b = names_in(A, 5), names_in(B, 5)
    for name in a + b:
        api.put(name)
    await asyncio.wait_for(cache.admit(A).wait(), timeout=5)
    assert sorted(cache.store.keys()) == sorted(f"{NS}/{n}" for n in a)
    dropped = cache.dropped
    # Watch events: another bucket's never reach the store or the handlers.
    seen = Seen()
    cache.add_handler(seen)
    more_b, more_a = names_in(B, 7)[5:], names_in(A, 7)[5:]
    for name in more_b + more_a:
        api.put(name)
    api.delete(b[0])
    await until(lambda: len(seen.events) == len(more_a), "the events of bucket A")
    await until(api.events.empty, "every event read")
    assert seen.events == [("ADDED", n) for n in more_a]
    assert sorted(cache.store.keys()) == sorted(f"{NS}/{n}" for n in a + more_a)
    assert cache.dropped == dropped + len(more_b) + 1


async def test_a_shard_admitted_at_runtime_gets_its_cliquesets_as_added_events(
    running: tuple[FakeAPI, CliqueSetCache],
) -> None:
    api, cache = running
    a, b = names_in(A, 3), names_in(B, 3)
    for name in a + b:
        api.put(name)
    await asyncio.wait_for(cache.admit(A).wait(), timeout=5)
    lists = api.lists
    seen = Seen()
    with cache.recording():
        cache.add_handler(seen)
    listed = cache.admit(B)
    assert not listed.is_set()
    await asyncio.wait_for(listed.wait(), timeout=5)
    assert api.lists == lists + 1
    # Only B's CliqueSets are new: A's, unchanged, are not delivered again.
    assert sorted(seen.events) == sorted(("ADDED", n) for n in b)
    assert len(cache.store) == len(a) + len(b)
    # The watch resumed after the relist: new events of both shards arrive.
    late = names_in(B, 4)[3]
    api.put(late)
    await until(lambda: ("ADDED", late) in seen.events, "an event after the relist")


async def test_a_forgotten_shard_is_dropped_without_events_and_its_handlers_removed(
    running: tuple[FakeAPI, CliqueSetCache],
) -> None:
    api, cache = running
    a, b = names_in(A, 3), names_in(B, 3)
    for name in a + b:
        api.put(name)
    await asyncio.wait_for(cache.admit(A).wait(), timeout=5)
    seen_a, seen_b = Seen(), Seen()
    cache.add_handler(seen_a)
    with cache.recording() as registered:
        cache.add_handler(seen_b)
        cache.on_undecodable(lambda meta, reason: None)
    assert len(registered) == 2
    await asyncio.wait_for(cache.admit(B).wait(), timeout=5)
    seen_a.events.clear()
    cache.unregister(registered)
    cache.forget(B)
    assert sorted(cache.store.keys()) == sorted(f"{NS}/{n}" for n in a)
    assert cache.buckets == frozenset(A)
    api.put(b[0], event="MODIFIED")
    api.put(a[0], event="MODIFIED")
    await until(lambda: seen_a.events == [("MODIFIED", a[0])], "A's event")
    assert seen_b.events and ("MODIFIED", b[0]) not in seen_b.events  # unregistered
    assert f"{NS}/{b[0]}" not in cache.store


async def test_an_admission_while_a_list_runs_is_covered_by_one_more_list(
    running: tuple[FakeAPI, CliqueSetCache],
) -> None:
    api, cache = running
    b = names_in(B, 3)
    for name in b:
        api.put(name)
    await asyncio.wait_for(cache.admit(A).wait(), timeout=5)
    lists = api.lists
    admitted: list[asyncio.Event] = []

    async def admit_b() -> None:
        admitted.append(cache.admit(B))  # this list's page is decoded with B not kept yet

    api.during_list = admit_b
    first = cache.admit(shard_buckets(2, SHARDS))
    await asyncio.wait_for(first.wait(), timeout=5)
    await asyncio.wait_for(admitted[0].wait(), timeout=5)
    assert api.lists == lists + 2
    assert sorted(cache.store.keys()) == sorted(f"{NS}/{n}" for n in b)


async def test_a_bucket_admitted_twice_is_kept_until_forgotten_twice(
    running: tuple[FakeAPI, CliqueSetCache],
) -> None:
    api, cache = running
    a = names_in(A, 2)
    for name in a:
        api.put(name)
    await asyncio.wait_for(cache.admit(A).wait(), timeout=5)
    seen = Seen()
    cache.add_handler(seen)  # the controller of the shard started again
    await asyncio.wait_for(cache.admit(A).wait(), timeout=5)
    assert sorted(seen.events) == sorted(("ADDED", n) for n in a)  # enqueued again
    cache.forget(A)
    assert len(cache.store) == 2
    cache.forget(A)
    assert len(cache.store) == 0 and cache.buckets == frozenset()


async def test_only_an_unreadable_cliqueset_of_an_admitted_bucket_is_reported(
    running: tuple[FakeAPI, CliqueSetCache],
) -> None:
    api, cache = running
    reported: list[str] = []
    cache.on_undecodable(lambda meta, reason: reported.append(meta.name))
    await asyncio.wait_for(cache.admit(A).wait(), timeout=5)
    (mine,), (theirs,) = names_in(A, 1), names_in(B, 1)
    for name in (theirs, mine):
        api.put(
            name,
            b'{"metadata":{"name":"%s","namespace":"ns","uid":"u","resourceVersion":"%d"},'
            b'"spec":{"replicas":"many"}}' % (name.encode(), api.rv + 1),
        )
    await until(lambda: reported == [mine], "the report of the readable bucket only")
    assert cache.dropped >= 1


async def test_a_hard_stop_waits_for_a_manager_that_is_draining(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A lost shard's controllers must have stopped before its fence opens again, even when
    they were draining (a hand-back) when the shard was lost."""
    from cliques.operator import shard_managers
    from cliques.operator.manager import Config

    ended = asyncio.Event()

    class Draining:
        def __init__(self, *_: Any, **__: Any) -> None:
            self.aborted = asyncio.Event()

        def stop(self, grace: float) -> None:
            pass  # drains for as long as it is given

        def abort(self) -> None:
            self.aborted.set()

        async def run(self) -> None:
            try:
                await asyncio.sleep(3600)
            finally:
                ended.set()

    monkeypatch.setattr(shard_managers, "Manager", Draining)
    op = shard_managers.ShardedOperator(Config(), client=object())  # type: ignore[arg-type]
    await op._start(3)
    release = asyncio.create_task(op._stop(3, False, 30.0))
    await asyncio.sleep(0)  # the drain has begun
    release.cancel()  # the shard is lost while it drains
    await asyncio.wait_for(op._stop(3, True, 0.0), timeout=5)
    assert ended.is_set(), "the hard stop returned while the Manager still ran"
    await asyncio.gather(release, return_exceptions=True)
    assert op.stopping == {} and op.managers == {}
