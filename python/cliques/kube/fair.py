"""Two-level round robin: the fairness rule of the work queue and of the rate limiter.

Items are grouped by (namespace, owner) — an owner is a CliqueSet. Items are taken from
the namespaces in turn, within a namespace from its owners in turn, and within one owner
first in, first out. So a tenant with 10,000 waiting items delays another tenant's next
item by one turn, and a namespace with many CliqueSets gets no more than a namespace with
one. All operations are O(1).

The flow of the work being done now is kept in a context variable (`current_flow`): the
reconcile runner sets it to its key's group, the tasks a reconcile starts inherit it, and
the client's rate limiter reads it, so a CliqueSet's writes wait in its own line.
"""

from __future__ import annotations

import contextvars
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")

#: (namespace, owner)
Flow = tuple[str, str]

current_flow: contextvars.ContextVar[Flow | None] = contextvars.ContextVar(
    "cliques_flow", default=None
)


class FairQueue(Generic[T]):
    """A FIFO per flow, served round robin: namespaces first, then owners."""

    def __init__(self) -> None:
        self._len = 0
        self._namespaces: deque[str] = deque()
        self._owners: dict[str, deque[str]] = {}
        self._items: dict[Flow, deque[T]] = {}

    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    def append(self, flow: Flow, item: T) -> None:
        items = self._items.get(flow)
        if items is None:
            items = self._items[flow] = deque()
            ns, owner = flow
            owners = self._owners.get(ns)
            if owners is None:
                owners = self._owners[ns] = deque()
                self._namespaces.append(ns)
            owners.append(owner)
        items.append(item)
        self._len += 1

    def popleft(self) -> T:
        ns = self._namespaces[0]
        owners = self._owners[ns]
        owner = owners[0]
        items = self._items[(ns, owner)]
        item = items.popleft()
        self._len -= 1
        if items:
            owners.rotate(-1)  # this owner's next item waits for the other owners'
        else:
            del self._items[(ns, owner)]
            owners.popleft()
        if owners:
            self._namespaces.rotate(-1)
        else:
            del self._owners[ns]
            self._namespaces.popleft()
        return item
