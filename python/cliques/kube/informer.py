"""List + watch caches.

An Informer lists its resource page by page (server-side label selector, so the operator
caches only its own objects), then watches from the list's resourceVersion with bookmarks,
resuming from the last version it saw when a watch ends. A 410 Gone (or an ERROR event)
means the version is too old: it relists and delivers the difference as events, so nothing is
missed and nothing is duplicated. Errors back off exponentially. Handlers are plain
functions called on the event loop with (event, old, new); they only enqueue keys.

`Pacing` sizes its list pages and bounds its watches; `WatchFaults` lets tests make the
cache stale on purpose (delay or drop events).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

import aiohttp
import msgspec

from cliques import metrics
from cliques.kube import errors, rawjson
from cliques.kube.client import WATCH_READ_TIMEOUT
from cliques.kube.objects import KubeObject, key_of
from cliques.kube.protocol import ListWatch
from cliques.kube.resources import Resource
from cliques.kube.store import IndexFunc, Store
from cliques.kube.stretches import Stretch

log = logging.getLogger(__name__)

_IN_NUMBERS = re.compile(r"^([\w./-]+) in \(([\d,\s]+)\)$")


def ranges(numbers: list[int]) -> str:
    """`0,1,2,3,7,9,10` as `0-3,7,9-10`."""
    out: list[str] = []
    for n in sorted(set(numbers)):
        if out and "-" in out[-1] and int(out[-1].split("-")[1]) == n - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{n}"
        elif out and "-" not in out[-1] and int(out[-1]) == n - 1:
            out[-1] = f"{out[-1]}-{n}"
        else:
            out.append(str(n))
    return ",".join(out)


def short_selector(selector: str) -> str:
    """A label selector as a log shows it: ` buckets=0-127` for the bucket selector of a
    process's shards (the last part of the key, the numbers as ranges), ` all buckets`
    for `cliques.dev/bucket` alone, else ` selector=<selector>`, "" for none."""
    if not selector:
        return ""
    found = _IN_NUMBERS.match(selector.strip())
    if found:
        numbers = [int(n) for n in found.group(2).split(",") if n.strip()]
        return f" {_plural(found.group(1))}={ranges(numbers)}"
    if "," not in selector and " " not in selector and "=" not in selector:
        return f" all {_plural(selector)}"
    return f" selector={selector}"


def _dropped(exc: BaseException) -> bool:
    """A connection that ended mid-stream (not one that could not be made)."""
    return isinstance(
        exc,
        (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, ConnectionResetError),
    )


def _plural(key: str) -> str:
    """`cliques.dev/bucket` -> `buckets`."""
    name = key.rsplit("/", 1)[-1]
    return name if name.endswith("s") else name + "s"


T = TypeVar("T", bound=KubeObject)
EventKind = Literal["ADDED", "MODIFIED", "DELETED"]
Handler = Callable[[EventKind, Any, Any], None]


@dataclass(frozen=True)
class Pacing:
    """The sizes and timeouts of an informer's requests: lists in pages of `page_size`
    objects; watches the server ends after `watch_timeout` seconds (each drawn anew up to
    twice that); a watch that sends nothing for `watch_read_timeout` seconds is given up
    and started again."""

    page_size: int = 500
    watch_timeout: int = 300
    watch_read_timeout: float = WATCH_READ_TIMEOUT


@dataclass(frozen=True)
class WatchFaults:
    """Test-only: make the cache stale. Events are held `delay` seconds, or 1 in
    `drop_every` is lost (until the next relist)."""

    delay: float = 0.0
    drop_every: int = 0


class _ListMeta(msgspec.Struct, rename="camel"):
    resource_version: str = ""
    continue_: str = msgspec.field(default="", name="continue")


class _RawList(msgspec.Struct):
    metadata: _ListMeta
    items: list[msgspec.Raw] | None = None


class _BookmarkMeta(msgspec.Struct, rename="camel"):
    resource_version: str = ""


class _Bookmark(msgspec.Struct):
    metadata: _BookmarkMeta


_RAW_LIST = msgspec.json.Decoder(_RawList)


def _page_meta(page: _RawList) -> tuple[str, str]:
    return page.metadata.resource_version, page.metadata.continue_


#: Called with the identity of an object that cannot be decoded and why.
Undecodable = Callable[[rawjson.Meta, str], None]
_BOOKMARK = msgspec.json.Decoder(_Bookmark)


def _newer(a: str, b: str, *, default: bool) -> bool:
    """Is resourceVersion `a` newer than `b`? They are opaque, but etcd's are integers;
    `default` answers when they cannot be compared."""
    try:
        return int(a) > int(b)
    except ValueError:
        return default


#: Failures a list or watch retries with backoff: the API server's, and a garbled event.
_RETRIED: tuple[type[Exception], ...] = (*errors.API_FAILURES, msgspec.DecodeError)


class Informer(Generic[T]):
    def __init__(
        self,
        client: ListWatch,
        resource: Resource,
        type_: type[T],
        *,
        namespace: str | None = None,
        label_selector: str = "",
        indexers: dict[str, IndexFunc[T]] | None = None,
        pacing: Pacing | None = None,
        resync_period: float = 0.0,
        faults: WatchFaults | None = None,
        transform: Callable[[T], T] | None = None,
    ) -> None:
        self.client = client
        #: applied to every object decoded for the cache (e.g. sharing identical parts)
        self.transform = transform
        self.resource = resource
        self.type = type_
        self.namespace = namespace
        #: the list and watch failures since the last answer (logged once per stretch)
        self._failing: Stretch | None = None
        #: the last watch lost its connection and has not answered since (one drop is
        #: routine; a failure after it starts a stretch)
        self._dropped = False
        self.label_selector = label_selector
        self.store: Store[T] = Store(indexers)
        pacing = pacing or Pacing()
        self.page_size = pacing.page_size
        self.watch_timeout = pacing.watch_timeout
        self.watch_read_timeout = pacing.watch_read_timeout
        self.resync_period = resync_period
        self.faults = faults or WatchFaults()
        self.synced = asyncio.Event()
        self.resource_version = ""
        self._handlers: list[Handler] = []
        self._undecodable: list[Undecodable] = []
        #: object -> the resourceVersion last reported undecodable (each version once)
        self._undecodable_seen: dict[str, str] = {}
        self._decoder = msgspec.json.Decoder(type_)
        self._delayed: asyncio.Queue[tuple[float, str, msgspec.Raw]] | None = None
        self._seen = 0
        self._watch_task: asyncio.Future[None] | None = None
        self._forced_rv: str | None = None

    def interrupt_watch(self, resume_from: str | None = None) -> None:
        """End the current watch now; the next one resumes from `resume_from` if given.

        Used to prove the 410 path: resuming from an ancient resourceVersion makes the API
        server answer 410 Gone, and the informer must relist without duplicate actions.
        """
        self._forced_rv = resume_from
        if self._watch_task is not None and not self._watch_task.done():
            self._watch_task.cancel()

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    @property
    def name(self) -> str:
        """A short name for logs: kind, namespace and selector, a `key in (...)` list of
        numbers as ranges (`pods ns=* buckets=0-127`)."""
        return f"{self.resource.plural} ns={self.namespace or '*'}" + short_selector(
            self.label_selector
        )

    def __repr__(self) -> str:
        return f"<Informer {self.name}>"

    # -- running ----------------------------------------------------------------------------

    async def run(self) -> None:
        """List, then watch forever (until cancelled)."""
        delayer = None
        if self.faults.delay > 0:
            self._delayed = asyncio.Queue()
            delayer = asyncio.create_task(self._drain_delayed(), name=f"delay-{self.resource}")
        backoff = 0.2
        reason = "start"
        try:
            while True:
                try:
                    if not self.resource_version:
                        await self._relist(reason)
                        reason = "resync"  # the next relist, unless a cause says otherwise
                    if self._forced_rv is not None:  # interrupt_watch(), even mid-relist
                        self.resource_version, self._forced_rv = self._forced_rv, None
                    self._watch_task = asyncio.ensure_future(self._watch_once())
                    try:
                        await self._watch_task
                    except asyncio.CancelledError:
                        task = asyncio.current_task()
                        if task is not None and task.cancelling():
                            raise  # the informer itself is stopping
                        continue  # interrupt_watch(): start the next watch now
                    backoff = 0.2
                    self._recovered()
                except errors.Gone:
                    log.info("%s: watch resourceVersion too old (410 Gone); relisting", self.name)
                    self.resource_version = ""
                    reason = "gone"
                except _RETRIED as exc:
                    if self._failing is None and not self._dropped and _dropped(exc):
                        # A watch lost its connection mid-stream (a load balancer, an API
                        # server going away): routine, resumed from its version. If the
                        # next try fails too, that is a stretch of failures (a warning).
                        self._dropped = True
                        log.info(
                            "%s: watch connection dropped (%s); resuming",
                            self.name,
                            type(exc).__name__,
                        )
                        await asyncio.sleep(backoff * random.random())
                        backoff = min(backoff * 2, 30.0)
                        continue
                    if self._failing is None:
                        self._failing = Stretch(type(exc).__name__, time.monotonic())
                        log.warning(
                            "%s: %s%s; retrying with backoff (logged again when it watches)",
                            self.name,
                            exc,
                            self._hint(exc),
                        )
                    else:
                        self._failing.count += 1
                        log.debug("%s: %s; retrying in %.1fs", self.name, exc, backoff)
                    await asyncio.sleep(backoff * (0.5 + random.random()))
                    backoff = min(backoff * 2, 30.0)
                    if isinstance(exc, errors.ApiError) and exc.status in (401, 403, 404):
                        self.resource_version = ""
                        reason = "error"
        finally:
            if delayer is not None:
                delayer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await delayer

    def _opened(self) -> None:
        """The API server answered a watch: a stretch of failures ends now, not at the
        first event, which on a quiet collection is the next bookmark, a minute later."""
        if self._failing is not None or self._dropped:
            self._recovered()

    def _recovered(self) -> None:
        """A list or watch answered: the end of a stretch of failures, if one was on."""
        self._dropped = False
        failing, self._failing = self._failing, None
        if failing is not None:
            log.info(
                "%s: listing and watching again after %d failed attempt(s) over %.0fs",
                self.name,
                failing.count,
                failing.lasted(time.monotonic()),
            )

    def _hint(self, exc: BaseException) -> str:
        """What a person can do about a failure the informer keeps retrying."""
        if isinstance(exc, errors.NotFound) and self.resource.group:
            # A list or watch of a whole collection is only 404 when nobody serves its type.
            r = self.resource
            return (
                f" (the API server does not serve {r.plural}.{r.group}/{r.version}: "
                "is its CustomResourceDefinition installed?)"
            )
        if isinstance(exc, errors.Unauthorized):
            return (
                f" (check the RBAC of this operator's service account for {self.resource.plural})"
            )
        return ""

    async def _relist(self, reason: str) -> None:
        metrics.INFORMER_RELISTS.labels(self.resource.plural, reason).inc()
        seen: dict[str, T] = {}
        token = ""
        rv = ""
        while True:
            data = await self.client.list_page(
                self.resource,
                self.namespace,
                label_selector=self.label_selector,
                limit=self.page_size,
                continue_token=token,
            )
            items: Iterable[msgspec.Raw | bytes]
            try:
                page = _RAW_LIST.decode(data)
                items, rv, token = page.items or (), *_page_meta(page)
            except RecursionError:  # an item nested deeper than msgspec goes
                rv, token, items = rawjson.split_items(data)
            for raw in items:
                obj = self._decode(raw)
                if obj is not None:
                    seen[key_of(obj)] = obj
            if not token:
                break
        # Deliver the difference against the cache as events: removed, then added/modified.
        for key in self.store:
            if key not in seen:
                old = self.store.remove(key)
                self._dispatch("DELETED", old, old)
        for obj in seen.values():
            old = self.store.get(key_of(obj))
            if old is not None and old.metadata.uid != obj.metadata.uid:
                # Deleted and made again under its name while the watch was away: two
                # objects, so the handlers see the old one go and the new one come.
                self.store.remove(key_of(old))
                self._dispatch("DELETED", old, old)
                old = None
            if old is not None and (old.metadata.resource_version == obj.metadata.resource_version):
                continue
            self.store.upsert(obj)
            self._dispatch("MODIFIED" if old is not None else "ADDED", old, obj)
        self.resource_version = rv
        log.debug("%s: listed %d objects at resourceVersion %s", self.name, len(seen), rv)
        self._recovered()
        self.synced.set()

    async def _watch_once(self) -> None:
        timeout = int(self.watch_timeout * (1 + random.random()))
        if self.resync_period > 0:
            timeout = min(timeout, int(self.resync_period))
        async for event in self.client.watch(
            self.resource,
            self.namespace,
            resource_version=self.resource_version,
            label_selector=self.label_selector,
            timeout_seconds=timeout,
            read_timeout=self.watch_read_timeout,
            on_open=self._opened,
        ):
            if self._failing is not None or self._dropped:
                self._recovered()
            if event.type == "BOOKMARK":
                self.resource_version = _BOOKMARK.decode(event.object).metadata.resource_version
                continue
            self._seen += 1
            if self.faults.drop_every and self._seen % self.faults.drop_every == 0:
                obj = self._decoder.decode(event.object)
                self.resource_version = obj.metadata.resource_version
                log.info("%r: fault injection dropped %s %s", self, event.type, key_of(obj))
                continue
            if self._delayed is not None:
                loop = asyncio.get_running_loop()
                await self._delayed.put((loop.time() + self.faults.delay, event.type, event.object))
                self.resource_version = _BOOKMARK.decode(event.object).metadata.resource_version
                continue
            self.resource_version = self._apply(event.type, event.object)
        if self.resync_period > 0:
            self.resource_version = ""  # periodic full relist heals a cache that lost events

    def on_undecodable(self, handler: Undecodable) -> None:
        """`handler(meta, reason)` for each object that cannot be decoded (skipped)."""
        self._undecodable.append(handler)

    def _decode(self, raw: msgspec.Raw | bytes) -> T | None:
        """The typed object, or None (logged, reported) when it cannot be decoded: one bad
        object never fails a list or a watch."""
        try:
            return self._typed(raw)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
            self._report(bytes(raw), exc)
            return None

    def _typed(self, raw: msgspec.Raw | bytes) -> T:
        """`raw` decoded into the informer's type, then `transform`ed (raises what the
        decoder raises)."""
        obj: T = self._decoder.decode(raw)
        return obj if self.transform is None else self.transform(obj)

    def _report(self, raw: bytes, exc: BaseException) -> rawjson.Meta | None:
        meta = rawjson.meta_of(raw)
        if isinstance(exc, RecursionError):
            reason = "it is nested too deeply to be read (more than ~900 levels)"
        else:
            reason = f"it does not match the {self.resource.kind} schema: {exc}"
        where = f"{meta.namespace}/{meta.name}" if meta is not None else "?"
        version = meta.resource_version if meta is not None else ""
        if self._undecodable_seen.get(where) != version or not version:
            if len(self._undecodable_seen) >= 1024:
                self._undecodable_seen.clear()
            self._undecodable_seen[where] = version
            log.warning("%s: skipping %s %s: %s", self.name, self.resource.kind, where, reason)
        else:
            log.debug("%s: skipping %s %s again", self.name, self.resource.kind, where)
        metrics.INFORMER_UNDECODABLE.labels(self.resource.plural).inc()
        if meta is not None and meta.name:
            for handler in self._undecodable:
                try:
                    handler(meta, reason)
                except Exception:
                    log.exception("%r: undecodable-object handler failed", self)
        return meta

    def _apply(self, kind: str, raw: msgspec.Raw) -> str:
        """Apply one watch event to the store and the handlers; return its resourceVersion."""
        try:
            obj = self._typed(raw)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
            meta = self._report(bytes(raw), exc)
            if meta is None:
                return self.resource_version
            key = f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name
            old = self.store.remove(key)  # what it was is no longer what it is
            if old is not None:
                self._dispatch("DELETED", old, old)
            return meta.resource_version or self.resource_version
        key = key_of(obj)
        if kind == "DELETED":
            old = self.store.remove(key)
            self._dispatch("DELETED", old if old is not None else obj, obj)
        elif kind in ("ADDED", "MODIFIED"):
            old = self.store.get(key)
            if old is not None and not _newer(
                obj.metadata.resource_version, old.metadata.resource_version, default=True
            ):
                # Already known (our own write, seen through observe_write) or older.
                return obj.metadata.resource_version
            self.store.upsert(obj)
            self._dispatch("MODIFIED" if old is not None else "ADDED", old, obj)
        return obj.metadata.resource_version

    def observe_write(self, raw: bytes) -> None:
        """Write-through: the API server's answer to our own update of a cached object.

        Putting it in the cache at once means the next reconcile starts from the version we
        just wrote instead of the one before (which would only earn a 409). Objects not in
        the cache are left to the watch, so a write never resurrects a deleted object.
        """
        obj = self._typed(raw)
        key = key_of(obj)
        old = self.store.get(key)
        if old is None or not _newer(
            obj.metadata.resource_version, old.metadata.resource_version, default=False
        ):
            return
        self.store.upsert(obj)
        self._dispatch("MODIFIED", old, obj)

    async def _drain_delayed(self) -> None:
        assert self._delayed is not None
        loop = asyncio.get_running_loop()
        while True:
            due, kind, raw = await self._delayed.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            self._apply(kind, raw)

    def _dispatch(self, kind: EventKind, old: Any, new: Any) -> None:
        for handler in self._handlers:
            try:
                handler(kind, old, new)
            except Exception:
                log.exception("%r: event handler failed", self)
