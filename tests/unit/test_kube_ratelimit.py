"""Token bucket: burst first, then QPS; disabled when qps <= 0."""

import asyncio

import pytest

from cliques.kube.ratelimit import TokenBucket


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_burst_then_rate() -> None:
    clock = Clock()
    tb = TokenBucket(qps=10, burst=3, clock=clock)
    assert [tb.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert tb.reserve() == pytest.approx(0.1)
    assert tb.reserve() == pytest.approx(0.2)
    clock.now = 1.0  # refills, capped at burst
    assert tb.reserve() == 0.0


async def test_disabled_never_waits() -> None:
    tb = TokenBucket(qps=0, burst=1)
    assert not tb.enabled
    for _ in range(1000):
        await tb.acquire()


async def test_waiting_flows_share_the_tokens_round_robin() -> None:
    tb = TokenBucket(qps=200, burst=1)
    await tb.acquire(("big", ""))  # the burst
    order: list[str] = []

    async def one(flow: str, i: int) -> None:
        await tb.acquire((flow, ""))
        order.append(f"{flow}{i}")

    tasks = [asyncio.create_task(one("big", i)) for i in range(20)]
    await asyncio.sleep(0)  # the big flow queues first
    tasks += [asyncio.create_task(one("small", i)) for i in range(2)]
    await asyncio.gather(*tasks)
    # first come, first served would put the small flow's two requests last (21st, 22nd)
    assert order.index("small0") <= 2 and order.index("small1") <= 4, order
    assert [o for o in order if o.startswith("big")] == [f"big{i}" for i in range(20)]


async def test_a_cancelled_waiter_takes_no_token() -> None:
    tb = TokenBucket(qps=100, burst=1)
    await tb.acquire()
    waiter = asyncio.create_task(tb.acquire(("a", "")))
    await asyncio.sleep(0)
    waiter.cancel()
    started = asyncio.get_running_loop().time()
    await tb.acquire(("b", ""))
    assert asyncio.get_running_loop().time() - started < 0.05
    assert tb.waiting == 0
