"""The CliqueSet informer of one operator process, shared by every shard it runs, whose
cache holds only the CliqueSets of the buckets this process runs.

CliqueSets are written by people and carry no bucket label, so no server-side selector can
pick a process's CliqueSets: the watch itself is cluster-wide (namespace-wide with
`--namespace`) and every process reads every CliqueSet event. What is kept is decided when
an object is decoded: its namespace and name are read first (the metadata only), and a
CliqueSet of a bucket this process does not run is dropped before it is decoded in full;
it never reaches the store or the handlers.

Buckets are admitted when a shard starts and forgotten when it stops, counted per bucket
(a shard started again while its old controllers still stop is admitted twice):

- `admit(buckets)` relists, and the CliqueSets of the new buckets arrive as ADDED events,
  which the new shard's controller (registered before) enqueues; the event it returns is
  set once a list that included them is in (the shard's cache has synced). Admissions that
  come while a list runs are covered by one more list after it. CliqueSets of a bucket
  that was kept already are delivered as ADDED again, at once.
- `forget(buckets)` drops their CliqueSets from the store, without events: the controllers
  of that shard have stopped by then, and nobody else reconciles them.

The handlers a shard's controllers register while `recording()` are removed again by
`unregister()` when the shard stops.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Iterable, Iterator

import msgspec

from cliques import _core
from cliques.api.cliqueset import CliqueSet
from cliques.kube import rawjson
from cliques.kube.client import KubeClient
from cliques.kube.informer import Handler, Informer, Undecodable
from cliques.kube.resources import CLIQUESETS
from cliques.operator.buckets import BUCKETS


class _Ident(msgspec.Struct, rename="camel"):
    name: str = ""
    namespace: str = ""
    resource_version: str = ""


class _Head(msgspec.Struct):
    metadata: _Ident = msgspec.field(default_factory=_Ident)


_HEAD = msgspec.json.Decoder(_Head)
_SKIM_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


def _ident(raw: msgspec.Raw | bytes) -> _Ident | None:
    """Namespace, name and resourceVersion of a raw object, without decoding the rest
    (None when even that cannot be read: the full decode reports it)."""
    try:
        return _HEAD.decode(raw).metadata
    except _SKIM_ERRORS:
        meta = rawjson.meta_of(bytes(raw))
        if meta is None:
            return None
        return _Ident(meta.name, meta.namespace, meta.resource_version)


class CliqueSetCache(Informer[CliqueSet]):
    def __init__(
        self,
        client: KubeClient,
        *,
        namespace: str | None = None,
        buckets: Iterable[int] = (),
        total: int = BUCKETS,
        resync_period: float = 0.0,
    ) -> None:
        super().__init__(
            client, CLIQUESETS, CliqueSet, namespace=namespace, resync_period=resync_period
        )
        self.total = total
        self._counts: Counter[int] = Counter(buckets)
        #: bumped by every admission; a list started at generation g covers admissions <= g
        self._generation = 0
        self._waiting: list[tuple[int, asyncio.Event]] = []
        self._recording: list[list[object]] = []
        #: CliqueSet events and list items dropped as another process's (for tests, metrics)
        self.dropped = 0

    # -- which CliqueSets are kept ----------------------------------------------------------

    @property
    def buckets(self) -> frozenset[int]:
        return frozenset(self._counts)

    def keeps(self, namespace: str, name: str) -> bool:
        counts = self._counts
        return len(counts) == self.total or _core.bucket_of(namespace, name, self.total) in counts

    def admit(self, buckets: Iterable[int]) -> asyncio.Event:
        """Keep the CliqueSets of `buckets` from now on: relist, and return an event set
        once a list that included them is in. Those of them kept already (a bucket
        admitted twice) are delivered again as ADDED at once: the relist would not."""
        buckets = list(buckets)
        kept = {b for b in buckets if b in self._counts}
        self._counts.update(buckets)
        for obj in self.store.objects() if kept else ():
            meta = obj.metadata
            if _core.bucket_of(meta.namespace or "", meta.name, self.total) in kept:
                self._dispatch("ADDED", None, obj)
        self._generation += 1
        listed = asyncio.Event()
        self._waiting.append((self._generation, listed))
        self.resource_version = ""  # the next (or the running) list is not enough
        self.interrupt_watch()
        return listed

    def forget(self, buckets: Iterable[int]) -> None:
        """Stop keeping the CliqueSets of `buckets` (once as often as they were admitted)
        and drop them from the store, without events."""
        self._counts.subtract(buckets)
        for bucket in [b for b, n in self._counts.items() if n <= 0]:
            del self._counts[bucket]
        self._purge()

    def _purge(self) -> None:
        for key in self.store:
            namespace, _, name = key.rpartition("/")
            if not self.keeps(namespace, name):
                self.store.remove(key)

    # -- the informer, filtered -------------------------------------------------------------

    async def _relist(self, reason: str) -> None:
        while True:
            generation = self._generation
            await super()._relist(reason)
            self._purge()  # a bucket forgotten while the list ran
            for waiting in [w for w in self._waiting if w[0] <= generation]:
                self._waiting.remove(waiting)
                waiting[1].set()
            if generation == self._generation:
                return
            reason = "buckets"
            self.resource_version = ""

    def _decode(self, raw: msgspec.Raw | bytes) -> CliqueSet | None:
        ident = _ident(raw)
        if ident is not None and not self.keeps(ident.namespace, ident.name):
            self.dropped += 1
            return None
        return super()._decode(raw)

    def _apply(self, kind: str, raw: msgspec.Raw) -> str:
        ident = _ident(raw)
        if ident is not None and not self.keeps(ident.namespace, ident.name):
            self.dropped += 1
            return ident.resource_version or self.resource_version
        return super()._apply(kind, raw)

    # -- handlers of one shard --------------------------------------------------------------

    @contextlib.contextmanager
    def recording(self) -> Iterator[list[object]]:
        """Collect the handlers registered inside the block, for `unregister()`."""
        registered: list[object] = []
        self._recording.append(registered)
        try:
            yield registered
        finally:
            self._recording.remove(registered)

    def add_handler(self, handler: Handler) -> None:
        super().add_handler(handler)
        for registered in self._recording:
            registered.append(handler)

    def on_undecodable(self, handler: Undecodable) -> None:
        super().on_undecodable(handler)
        for registered in self._recording:
            registered.append(handler)

    def unregister(self, registered: Iterable[object]) -> None:
        for handler in registered:
            for handlers in (self._handlers, self._undecodable):
                if handler in handlers:
                    handlers.remove(handler)  # type: ignore[arg-type]
