"""Failures logged once per stretch: when they start, when they change and when they end,
never on every retry.

A reconcile that keeps failing for a reason a person has to fix (a name held by someone
else, a quota, an admission webhook) is retried for as long as it lasts; an API server
that throttles answers 429 to request after request. Logging each retry buries the one
line that matters. `Stretches` remembers, per key, the failure under way (its signature,
when it began, how many times it happened): `failed` says whether this failure begins a
stretch (or changes it), and `ended` closes the stretch on the first success. The caller
logs what these say: one line at the start, one at the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(slots=True)
class Stretch:
    """One stretch of failures of one key."""

    signature: str
    since: float
    count: int = 1
    #: what the first failure of the stretch said (for the line that ends it)
    first: str = ""

    def lasted(self, now: float) -> float:
        return max(0.0, now - self.since)


class Stretches:
    """The failure stretches under way, per key. At most `limit` keys are remembered (the
    oldest forgotten first): a forgotten stretch is logged again when it fails again,
    which costs a line, never a missed start."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, limit: int = 10_000) -> None:
        self.clock = clock
        self.limit = limit
        self._open: dict[str, Stretch] = {}

    def failed(self, key: str, signature: str) -> Stretch | None:
        """A failure of `key`: the new stretch if it begins one (no stretch under way, or
        one with another signature), else None (the stretch goes on, counted)."""
        now = self.clock()
        current = self._open.get(key)
        if current is not None and current.signature == signature:
            current.count += 1
            return None
        if current is None and len(self._open) >= self.limit:
            del self._open[next(iter(self._open))]
        stretch = Stretch(signature, now)
        self._open[key] = stretch
        return stretch

    def ended(self, key: str) -> Stretch | None:
        """`key` succeeded: the stretch it ends, if one was under way."""
        return self._open.pop(key, None)

    def now(self) -> float:
        return self.clock()

    def __contains__(self, key: str) -> bool:
        return key in self._open

    def __len__(self) -> int:
        return len(self._open)
