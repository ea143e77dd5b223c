"""Token bucket: burst first, then QPS; disabled when qps <= 0."""

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
