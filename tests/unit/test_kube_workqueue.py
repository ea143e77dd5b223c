"""Work queue semantics: de-duplication, one in flight per key, backoff, delays, drain."""

import asyncio

import pytest

from cliques.kube.workqueue import ShutDown, WorkQueue


async def test_dedup_while_waiting() -> None:
    q = WorkQueue("t1")
    for _ in range(5):
        q.add("a")
    q.add("b")
    assert len(q) == 2
    assert await q.get() == "a"
    assert await q.get() == "b"


async def test_key_added_while_processing_is_held_until_done() -> None:
    q = WorkQueue("t2")
    q.add("a")
    key = await q.get()
    q.add("a")  # arrives during the reconcile
    assert len(q) == 0, "a key in flight must not be handed out twice"
    q.done(key)
    assert len(q) == 1
    assert await q.get() == "a"


async def test_backoff_grows_and_forget_resets() -> None:
    q = WorkQueue("t3", base_delay=0.01, max_delay=0.05)
    assert q.backoff("k") == pytest.approx(0.01)
    q.add_rate_limited("k")
    q.add_rate_limited("k")
    assert q.backoff("k") == pytest.approx(0.04)
    q.add_rate_limited("k")
    assert q.backoff("k") == pytest.approx(0.05)  # capped
    q.forget("k")
    assert q.backoff("k") == pytest.approx(0.01)


async def test_add_after_fires_once_with_earliest_deadline() -> None:
    q = WorkQueue("t4")
    q.add_after("k", 5.0)
    q.add_after("k", 0.01)  # earlier deadline wins
    q.add_after("k", 3.0)  # later one is ignored
    key = await asyncio.wait_for(q.get(), timeout=2.0)
    assert key == "k"
    q.done(key)
    assert len(q) == 0


async def test_shutdown_wakes_waiters_and_refuses_new_keys() -> None:
    q = WorkQueue("t5")
    waiter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.shut_down()
    with pytest.raises(ShutDown):
        await asyncio.wait_for(waiter, timeout=1.0)
    q.add("x")
    assert len(q) == 0


async def test_many_waiters_each_get_one_key() -> None:
    q = WorkQueue("t6")
    getters = [asyncio.create_task(q.get()) for _ in range(3)]
    await asyncio.sleep(0)
    for k in ("a", "b", "c"):
        q.add(k)
    got = await asyncio.wait_for(asyncio.gather(*getters), timeout=1.0)
    assert sorted(got) == ["a", "b", "c"]


def _owner_group(key: str) -> tuple[str, str]:
    """ns/<owner>-<n> -> (ns, owner)."""
    ns, _, name = key.partition("/")
    return ns, name.rsplit("-", 1)[0]


async def test_keys_are_handed_out_round_robin_over_namespaces_then_owners() -> None:
    q = WorkQueue("fair", group=_owner_group)
    for i in range(1000):
        q.add(f"big/huge-{i}")
    for i in range(3):
        q.add(f"big/other-{i}")
    q.add("small/tiny-0")
    got = [await q.get() for _ in range(8)]
    # the small namespace's only key comes second, not after 1,003 others
    assert got == [
        "big/huge-0",
        "small/tiny-0",
        "big/other-0",
        "big/huge-1",
        "big/other-1",
        "big/huge-2",
        "big/other-2",
        "big/huge-3",
    ]
    assert len(q) == 1003 - 7


async def test_fifo_within_one_owner_and_dedup_still_hold() -> None:
    q = WorkQueue("fair", group=_owner_group)
    for key in ("ns/a-1", "ns/a-2", "ns/a-1", "ns/a-3"):
        q.add(key)
    assert [await q.get() for _ in range(3)] == ["ns/a-1", "ns/a-2", "ns/a-3"]
    assert len(q) == 0


async def test_a_failure_may_cap_its_own_retry() -> None:
    q = WorkQueue("t9", base_delay=10.0, max_delay=300.0)
    assert [q.add_rate_limited("a", cap=30.0) for _ in range(4)] == [10.0, 20.0, 30.0, 30.0]
    assert q.add_rate_limited("a") == 160.0  # the count kept growing underneath
    q.shut_down()


def test_a_name_conflict_is_retried_within_thirty_seconds() -> None:
    from cliques.controllers.base.executor import ExecutionError, NameConflict
    from cliques.kube import errors

    conflict = ExecutionError("x", reason="FailedCreate", first=NameConflict("held"))
    assert conflict.retry_within == 30.0
    other = ExecutionError(
        "x", reason="FailedCreate", first=errors.NotFound(404, "NotFound", "gone")
    )
    assert other.retry_within is None
