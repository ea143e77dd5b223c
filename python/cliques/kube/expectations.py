"""Expectations: the creates and deletes a controller has sent but not yet seen come back.

Problem 2 of the design: an informer cache lags the API server, so a reconcile that runs
right after creating pods would see them missing and create them again (and then delete a
"surplus" one). Before acting, a controller records what it expects, keyed by the owner's
UID (never by name: a deleted-and-recreated owner with the same name must not inherit the old
expectations) and by the child's name (names are deterministic). Watch events satisfy the
expectations; a failed write withdraws its own; a TTL bounds how long a lost event can hold
an owner back. While an owner has pending expectations its planner does not create or
delete children again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from cliques import metrics

log = logging.getLogger(__name__)


@dataclass
class _Pending:
    creates: set[str] = field(default_factory=set)
    deletes: set[str] = field(default_factory=set)
    since: float = 0.0


class Expectations:
    def __init__(
        self,
        controller: str,
        *,
        ttl: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.controller = controller
        self.ttl = ttl
        self._clock = clock
        self._owners: dict[str, _Pending] = {}
        self._total = 0  # creates + deletes pending over all owners (kept, not recounted)
        self._gauge = metrics.EXPECTATIONS_PENDING.labels(controller)

    def _entry(self, owner_uid: str) -> _Pending:
        entry = self._owners.get(owner_uid)
        if entry is None:
            entry = self._owners[owner_uid] = _Pending(since=self._clock())
        elif not entry.creates and not entry.deletes:
            entry.since = self._clock()
        return entry

    def expect_creates(self, owner_uid: str, names: Iterable[str]) -> None:
        pending = self._entry(owner_uid).creates
        before = len(pending)
        pending.update(names)
        self._total += len(pending) - before
        self._update_gauge()

    def expect_deletes(self, owner_uid: str, names: Iterable[str]) -> None:
        pending = self._entry(owner_uid).deletes
        before = len(pending)
        pending.update(names)
        self._total += len(pending) - before
        self._update_gauge()

    def created(self, owner_uid: str, name: str) -> bool:
        """A watch event showed the child (or a create failed and will not happen).
        True if this settled a create that was expected."""
        entry = self._owners.get(owner_uid)
        if entry is not None and name in entry.creates:
            entry.creates.discard(name)
            self._total -= 1
            self._gc(owner_uid, entry)
            return True
        return False

    def deleted(self, owner_uid: str, name: str) -> None:
        """A watch event showed the child gone (or its delete failed and will not happen)."""
        entry = self._owners.get(owner_uid)
        if entry is not None and name in entry.deletes:
            entry.deletes.discard(name)
            self._total -= 1
            self._gc(owner_uid, entry)

    def satisfied(self, owner_uid: str) -> bool:
        entry = self._owners.get(owner_uid)
        if entry is None:
            return True
        if not entry.creates and not entry.deletes:
            return True
        if self._clock() - entry.since > self.ttl:
            log.warning(
                "expectations of %s timed out after %.0fs (creates %s, deletes %s); "
                "trusting the cache again",
                owner_uid,
                self.ttl,
                sorted(entry.creates),
                sorted(entry.deletes),
            )
            self.forget(owner_uid)
            return True
        return False

    def pending(self, owner_uid: str) -> tuple[frozenset[str], frozenset[str]]:
        entry = self._owners.get(owner_uid)
        if entry is None:
            return frozenset(), frozenset()
        return frozenset(entry.creates), frozenset(entry.deletes)

    def forget(self, owner_uid: str) -> None:
        """The owner is gone (or its TTL expired): drop everything recorded for it."""
        entry = self._owners.pop(owner_uid, None)
        if entry is not None:
            self._total -= len(entry.creates) + len(entry.deletes)
        self._update_gauge()

    def _gc(self, owner_uid: str, entry: _Pending) -> None:
        if not entry.creates and not entry.deletes:
            self._owners.pop(owner_uid, None)
        self._update_gauge()

    def total(self) -> int:
        """Creates and deletes pending over every owner."""
        return self._total

    def _update_gauge(self) -> None:
        self._gauge.set(self._total)
