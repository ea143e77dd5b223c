"""The work queue between event handlers and reconcilers (client-go's semantics).

- De-duplication: a key waiting in the queue is queued once however often it is added.
- At most one reconcile in flight per key: a key added while it is being processed is held
  ("dirty") and queued again when the reconcile finishes.
- Per-key exponential backoff for failures (`add_rate_limited`, reset by `forget`).
- Delayed requeue (`add_after`), keeping only the earliest pending time per key.
- Graceful drain: `shut_down()` stops handing out keys; in-flight reconciles finish.
- Fairness: with a `group` function (key -> (namespace, owner)), keys are handed out round
  robin over namespaces, and within a namespace round robin over owners (CliqueSets), so
  10,000 queued keys of one set delay another namespace's next key by one hand-out, not by
  10,000. Without one, every key is its own group under its namespace.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

from cliques import metrics
from cliques.kube import fair


class ShutDown(Exception):
    """`get()` after `shut_down()`."""


#: (namespace, owner) of a key: the unit of fairness.
Group = Callable[[str], fair.Flow]


def namespace_group(key: str) -> tuple[str, str]:
    """`ns/name` -> (ns, name): each object is its own owner (a CliqueSet's key)."""
    ns, _, name = key.rpartition("/")
    return ns, name


class WorkQueue:
    def __init__(
        self,
        name: str,
        *,
        base_delay: float = 0.005,
        max_delay: float = 300.0,
        group: Group = namespace_group,
    ) -> None:
        self.name = name
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.group = group
        self._queue: fair.FairQueue[str] = fair.FairQueue()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._added_at: dict[str, float] = {}
        self._failures: dict[str, int] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._shutting_down = False
        self._depth = metrics.QUEUE_DEPTH.labels(name)
        self._latency = metrics.QUEUE_LATENCY.labels(name)

    def __len__(self) -> int:
        return len(self._queue)

    def set_group(self, group: Group) -> None:
        """Change the unit of fairness (before any key is added)."""
        assert not self._queue, "set_group on a queue that holds keys"
        self.group = group

    @property
    def processing(self) -> int:
        return len(self._processing)

    def add(self, key: str) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        self._added_at.setdefault(key, time.monotonic())
        if key in self._processing:
            return
        self._queue.append(self.group(key), key)
        self._depth.set(len(self._queue))
        self._notify()

    def add_after(self, key: str, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        if self._shutting_down:
            return
        loop = asyncio.get_running_loop()
        when = loop.time() + delay
        timer = self._timers.get(key)
        if timer is not None:
            if timer.when() <= when:
                return
            timer.cancel()
        self._timers[key] = loop.call_at(when, self._fire, key)

    def _fire(self, key: str) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def backoff(self, key: str) -> float:
        n = self._failures.get(key, 0)
        return float(min(self.max_delay, self.base_delay * 2.0**n))

    def add_rate_limited(self, key: str, cap: float | None = None) -> float:
        """Requeue `key` after its backoff (at most `cap` s), and count a failure."""
        delay = self.backoff(key) if cap is None else min(cap, self.backoff(key))
        self._failures[key] = self._failures.get(key, 0) + 1
        self.add_after(key, delay)
        return delay

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)

    def failures(self, key: str) -> int:
        return self._failures.get(key, 0)

    async def get(self) -> str:
        """Wait for a key and mark it in flight. Raises ShutDown once draining."""
        while not self._queue and not self._shutting_down:
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            finally:
                if not fut.done():  # cancelled while waiting
                    fut.cancel()
        if self._shutting_down:
            raise ShutDown
        key = self._queue.popleft()
        self._depth.set(len(self._queue))
        self._processing.add(key)
        self._dirty.discard(key)
        added = self._added_at.pop(key, None)
        if added is not None:
            self._latency.observe(time.monotonic() - added)
        return key

    def done(self, key: str) -> None:
        self._processing.discard(key)
        if key in self._dirty and not self._shutting_down:
            self._queue.append(self.group(key), key)
            self._depth.set(len(self._queue))
            self._notify()

    def shut_down(self) -> None:
        self._shutting_down = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        while self._waiters:
            self._notify()

    def _notify(self) -> None:
        """Wake one waiting `get()` (skipping waiters that were cancelled)."""
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                return
