"""Holding back progress-only statuses: one timer per object, so news is written at once and
progress at most `seconds` late.

Both controllers publish statuses that mostly report progress towards Ready (pods created,
gangs turning available one by one). Writing each step costs a request, a watch event to
every watcher and a reconcile of whoever watches the object; most steps are overtaken by the
next within seconds. A `StatusHold` holds such a status back: the first time an object has
progress to publish, a timer is armed `seconds` ahead and kept across reconciles, so a stream
of events cannot postpone the write beyond it; when it fires it enqueues the object, whose
reconcile then writes. News (whatever `progress_only` says is not progress) is written at
once and cancels the timer, so the usual case costs no extra reconcile.

It implements `plan_runner.Hold`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any


class StatusHold:
    """The hold timers of one controller's objects, by key."""

    def __init__(
        self,
        seconds: float,
        enqueue: Callable[[str], None],
        progress_only: Callable[[Any, Any], bool],
    ) -> None:
        #: how long a progress-only status may wait (0: never held)
        self.seconds = seconds
        self._enqueue = enqueue
        self._progress_only = progress_only
        #: key -> the timer that enqueues the object when its held status is due
        self._timers: dict[str, asyncio.TimerHandle] = {}

    def __contains__(self, key: str) -> bool:
        return key in self._timers

    def __len__(self) -> int:
        return len(self._timers)

    def hold(self, key: str, old: Any, new: Any) -> bool:
        """Whether to hold `new` back instead of writing it now (the status is `old`)."""
        if self.seconds <= 0 or not self._progress_only(old, new):
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
            timer = self._timers[key] = loop.call_later(self.seconds, self._enqueue, key)
        return timer

    def release(self, key: str) -> None:
        """Cancel the timer of `key`: its status was written, or none is due."""
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
