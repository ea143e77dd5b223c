"""Holding back progress-only statuses: one timer per object, so news is written at once and
progress at most the hold late.

Both controllers publish statuses that mostly report progress towards Ready (pods created,
gangs turning available one by one). Writing each step costs a request, a watch event to
every watcher and a reconcile of whoever watches the object; most steps are overtaken by the
next within seconds. A `StatusHold` holds such a status back: the first time an object has
progress to publish, a timer is armed `seconds` ahead and kept across reconciles, so a stream
of events cannot postpone the write beyond it; when it fires it enqueues the object, whose
reconcile then writes. News (whatever `progress_only` says is not progress) is written at
once and cancels the timer, so the usual case costs no extra reconcile.

The hold may stretch (`stretch` > 1): it learns how long objects here typically take from
their first progress to news (a Clique's pods from created to Ready), and holds for 1.5
times that, at least `base` and at most `stretch` x `base` seconds. When the cluster is slow
to start pods, a write halfway would only say they are still on their way. A timer that
runs out checks the hold again: while pods take longer and longer to start (a deploy that
outpaces the control plane), a hold armed early would otherwise end before the typical
time it was measured against caught up.

It implements `plan_runner.Hold`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from cliques import metrics

#: How much one observed time moves the typical time (an exponential moving average).
WEIGHT = 0.1
#: The hold covers this multiple of the typical time to news.
MARGIN = 1.5
#: A timer whose stretched end is less than this ahead fires instead of being armed again.
RE_ARM_MIN = 0.5


class StatusHold:
    """The hold timers of one controller's objects, by key."""

    def __init__(
        self,
        seconds: float,
        enqueue: Callable[[str], None],
        progress_only: Callable[[Any, Any], bool],
        *,
        stretch: float = 1.0,
        name: str = "",
    ) -> None:
        #: the shortest hold (0: never held); the hold is `seconds` until it stretches
        self.base = seconds
        self.seconds = seconds
        #: the longest hold, as a multiple of `base`
        self.stretch = max(1.0, stretch)
        #: the typical time from an object's first progress to its news (0: none seen yet)
        self.typical = 0.0
        self._enqueue = enqueue
        self._progress_only = progress_only
        self._gauge = metrics.STATUS_HOLD.labels(name) if name else None
        if self._gauge is not None:
            self._gauge.set(seconds)
        #: key -> the timer that enqueues the object when its held status is due
        self._timers: dict[str, asyncio.TimerHandle] = {}
        #: key -> loop time of the object's first held progress (kept until its news)
        self._since: dict[str, float] = {}

    def __contains__(self, key: str) -> bool:
        return key in self._timers

    def hold(self, key: str, old: Any, new: Any) -> bool:
        """Whether to hold `new` back instead of writing it now (the status is `old`)."""
        if self.base <= 0:
            return False
        if not self._progress_only(old, new):
            since = self._since.pop(key, None)
            if since is not None:
                self.observe(asyncio.get_running_loop().time() - since)
            self.release(key)
            return False
        timer = self.arm(key)
        if asyncio.get_running_loop().time() < timer.when():
            return True
        del self._timers[key]
        return False

    def arm(self, key: str) -> asyncio.TimerHandle:
        """The timer of `key`: the one already running, or a new one that enqueues it
        `seconds` from now."""
        timer = self._timers.get(key)
        if timer is None:
            loop = asyncio.get_running_loop()
            self._since.setdefault(key, loop.time())
            timer = self._timers[key] = loop.call_later(self.seconds, self._due, key)
        return timer

    def _due(self, key: str) -> None:
        """The timer of `key` ran out: enqueue the object, unless the hold stretched since
        the timer was armed and its stretched end (from the object's first held progress)
        is still ahead; then the timer is armed again for what remains."""
        loop = asyncio.get_running_loop()
        since = self._since.get(key)
        if since is not None and key in self._timers:
            remaining = since + self.seconds - loop.time()
            if remaining > RE_ARM_MIN:
                self._timers[key] = loop.call_later(remaining, self._due, key)
                return
        self._enqueue(key)

    def observe(self, took: float) -> None:
        """An object's news came `took` seconds after its first progress: with `stretch`,
        the hold follows the typical time."""
        if self.stretch <= 1.0:
            return
        self.typical = (
            took if self.typical == 0.0 else self.typical + WEIGHT * (took - self.typical)
        )
        self.seconds = min(self.base * self.stretch, max(self.base, MARGIN * self.typical))
        if self._gauge is not None:
            self._gauge.set(self.seconds)

    def release(self, key: str) -> None:
        """Cancel the timer of `key`: its status was written, or none is due."""
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    def forget(self, key: str) -> None:
        """The object `key` is gone."""
        self.release(key)
        self._since.pop(key, None)
