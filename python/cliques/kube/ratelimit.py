"""Client-side rate limiting: a token bucket (QPS + burst), as client-go's flowcontrol.

`qps <= 0` disables the limit (benchmarks against a local control plane).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class TokenBucket:
    """Async token bucket. `acquire()` waits until a token is free, in FIFO order."""

    def __init__(
        self, qps: float, burst: int, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._clock = clock
        self._tokens = float(self.burst)
        self._last = clock()

    @property
    def enabled(self) -> bool:
        return self.qps > 0

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
        self._last = now

    def reserve(self) -> float:
        """Take a token now; return how long the caller must wait before using it."""
        self._refill()
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        return -self._tokens / self.qps

    async def acquire(self) -> None:
        if not self.enabled:
            return
        delay = self.reserve()  # atomic: no await between refill and take
        if delay > 0:
            await asyncio.sleep(delay)
