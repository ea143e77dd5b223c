"""Client-side rate limiting: a token bucket (QPS + burst), as client-go's flowcontrol,
shared fairly between flows.

A request belongs to a flow, (namespace, CliqueSet): the reconcile it is made for (see
`fair.current_flow`), else its namespace. While tokens are free, requests go at once; once
callers have to wait, the tokens are handed to the waiting flows by `fair.FairQueue`'s
rule (namespaces in turn, then CliqueSets in turn), so a set with 10,000 queued creates
delays another set's request by about one token per busy flow, not by 10,000 tokens (what
first-come, first-served did). Within a flow the order is first-come, first-served.

`qps <= 0` disables the limit (benchmarks against a local control plane).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from cliques.kube import fair


class TokenBucket:
    """Async token bucket; `acquire(flow)` waits until a token is handed to that flow."""

    def __init__(
        self, qps: float, burst: int, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._clock = clock
        self._tokens = float(self.burst)
        self._last = clock()
        self._waiters: fair.FairQueue[asyncio.Future[None]] = fair.FairQueue()
        self._timer: asyncio.TimerHandle | None = None

    @property
    def enabled(self) -> bool:
        return self.qps > 0

    @property
    def waiting(self) -> int:
        return len(self._waiters)

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

    async def acquire(self, flow: fair.Flow = ("", "")) -> None:
        if not self.enabled:
            return
        if not self._waiters:
            self._refill()
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(flow, fut)
        self._arm()
        await fut  # a cancelled waiter is skipped by _dispatch and takes no token

    def _arm(self) -> None:
        if self._timer is not None or not self._waiters:
            return
        delay = max(0.0, (1.0 - self._tokens) / self.qps)
        self._timer = asyncio.get_running_loop().call_later(delay, self._dispatch)

    def _dispatch(self) -> None:
        """Hand the free tokens to waiting flows, one each in turn."""
        self._timer = None
        self._refill()
        while self._waiters and self._tokens >= 1.0:
            fut = self._waiters.popleft()
            if not fut.done():
                self._tokens -= 1.0
                fut.set_result(None)
        self._arm()
