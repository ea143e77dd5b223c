"""The API client: aiohttp for the connections, msgspec for bodies.

`kubeconfig` finds the cluster and its credentials (the kubeconfig or the in-cluster
service account; tokens renewed as they expire or rotate, an exec plugin's client
certificate used when it changes, everything renewed after a 401); this module sends
requests on an aiohttp session of its own, with the TLS context and proxy of that
cluster, so that bodies are
decoded by msgspec straight from the response bytes into the slim Structs of
`cliques.api` (no generated client or models).

It also owns the client-side behaviour every controller relies on: a QPS/burst token bucket,
429 answers retried after the server's `Retry-After` (logged when the throttling starts and
when it ends, not per request), a deadline on every request, failures raised as the typed
errors of `cliques.kube.errors`, and request metrics by verb and code.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import ssl
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Literal, TypeVar

import aiohttp
import msgspec

from cliques import metrics
from cliques.kube import errors, fair, ratelimit, rawjson
from cliques.kube import kubeconfig as kubeconfig_
from cliques.kube.cluster import Cluster
from cliques.kube.resources import Resource
from cliques.kube.stretches import Stretches

log = logging.getLogger(__name__)

T = TypeVar("T")

PatchType = Literal["merge", "json", "strategic", "apply"]
_PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}
MAX_429_RETRIES = 10
#: The one key of `KubeClient.throttled`: the API server answers 429.
_THROTTLED = "429"
MAX_RETRY_AFTER = 64.0  # the API server's own ceiling is 32 s
#: A request's deadline, s: the API server ends a request that runs longer than its own
#: --request-timeout (60 s by default) with a 504, so this only catches a dead connection.
REQUEST_TIMEOUT = 90.0
#: The session's limit on opening a connection, s (no timer per pooled request).
CONNECT_TIMEOUT = 30.0
#: Seconds a watch may go without a single byte before it is taken for a dead (half-open)
#: connection and restarted from its last resourceVersion: about twice the interval at
#: which the API server sends bookmarks on a quiet watch (one a minute).
WATCH_READ_TIMEOUT = 130.0


class WatchEvent(msgspec.Struct):
    """One line of a watch stream; the object is decoded later, by its informer's type."""

    type: str
    object: msgspec.Raw


_WATCH_EVENT = msgspec.json.Decoder(WatchEvent)
_ENCODER = msgspec.json.Encoder()


class Deadlines:
    """The deadlines of the requests in flight, enforced by one timer for all of them.

    aiohttp's own per-request timeout arms and cancels a timer with its bookkeeping objects
    on every request, ~6% of a request's CPU. Here a request only records its task and
    deadline; one check, armed while requests are in flight and run every `tick` seconds,
    cancels the task of a request past its deadline, and `request` turns that cancellation
    into a `TimeoutError`. A deadline is thus enforced up to `tick` late.
    """

    def __init__(self, timeout: float, *, tick: float | None = None) -> None:
        if timeout <= 0:
            raise ValueError(f"a request timeout must be positive, got {timeout}")
        self.timeout = timeout
        self.tick = tick if tick is not None else min(1.0, timeout / 4)
        self._due: dict[asyncio.Task[Any], float] = {}
        self._expired: set[asyncio.Task[Any]] = set()
        self._timer: asyncio.TimerHandle | None = None

    def start(self, task: asyncio.Task[Any]) -> None:
        """`task` starts a request: it must finish within `timeout` seconds."""
        loop = task.get_loop()
        self._due[task] = loop.time() + self.timeout
        if self._timer is None:
            self._timer = loop.call_later(self.tick, self._check, loop)

    def finish(self, task: asyncio.Task[Any]) -> None:
        """`task`'s request is over (answered, failed or cancelled)."""
        self._due.pop(task, None)
        if task in self._expired:
            # Cancelled for its deadline, but the request ended another way (a library
            # turned the CancelledError into its own error): withdraw the cancellation.
            self._expired.discard(task)
            task.uncancel()

    def overran(self, task: asyncio.Task[Any]) -> bool:
        """Whether the cancellation `task` is seeing is this class's alone, for a request
        past its deadline; if so it is withdrawn (`Task.uncancel`), so that the caller can
        raise a TimeoutError instead. A cancellation from elsewhere at the same time wins."""
        if task not in self._expired:
            return False
        self._expired.discard(task)
        return task.uncancel() == 0

    def close(self) -> None:
        """Stop the check (the client is closing)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _check(self, loop: asyncio.AbstractEventLoop) -> None:
        now = loop.time()
        for task, due in list(self._due.items()):
            if due <= now and task not in self._expired:
                self._expired.add(task)
                self._due.pop(task)
                task.cancel()
        self._timer = loop.call_later(self.tick, self._check, loop) if self._due else None


class KubeClient:
    """An async client for one API server. Create with `await KubeClient.connect(...)`."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        qps: float = 50.0,
        burst: int = 100,
        field_manager: str = "cliques-operator",
        user_agent: str = "cliques-operator",
        request_timeout: float = REQUEST_TIMEOUT,
        max_connections: int = 64,
    ) -> None:
        self.cluster = cluster
        self.host: str = cluster.host.rstrip("/")
        # A session with trust_env off: with it on, aiohttp re-reads ~/.netrc in a thread
        # and re-resolves the proxy environment on *every* request (a fifth of the
        # operator's CPU at 1,000 pods). The proxy is resolved once here instead, the same
        # way. Requests have no aiohttp timeout (a timer per request): `Deadlines` enforces
        # theirs. Each request names its TLS context (`_ssl`): the pool keeps connections by
        # context, so a client certificate rotated by an exec plugin is used by new ones.
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=max_connections),
            trust_env=False,
            read_bufsize=2**21,  # watch events of large objects (up to etcd's 1.5 MiB)
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT),
        )
        self.deadlines = Deadlines(request_timeout)
        #: a stretch of 429 answers under way (logged when it starts and when it ends)
        self.throttled = Stretches()
        #: when the last 429 came (the stretch ends with a success a second after it)
        self._last_429 = 0.0
        self._server_hostname: str | None = cluster.server_hostname
        self._proxy: dict[str, Any] = {"proxy": cluster.proxy} if cluster.proxy else {}
        self.limiter = ratelimit.TokenBucket(qps, burst)
        self.field_manager = field_manager
        #: the query of every write, by `force` (encoded once: writes are most requests)
        self._write_query = {
            force: urllib.parse.urlencode(
                {"fieldManager": field_manager, **({"force": "true"} if force else {})}
            )
            for force in (False, True)
        }
        self.user_agent = user_agent
        self._decoders: dict[Any, msgspec.json.Decoder[Any]] = {}
        self._metric_children: dict[tuple[Any, tuple[str, ...]], Any] = {}
        #: Asked before every write is sent: None lets it go, a reason refuses it with
        #: `errors.Fenced` (a sharded operator past its lease renew deadline).
        self.write_guard: Callable[[], str | None] | None = None

    @classmethod
    async def connect(
        cls,
        kubeconfig: str | None = None,
        *,
        context: str | None = None,
        qps: float = 50.0,
        burst: int = 100,
        field_manager: str = "cliques-operator",
        max_connections: int = 64,
        request_timeout: float = REQUEST_TIMEOUT,
    ) -> KubeClient:
        """Load the kubeconfig (explicit path, in-cluster, $KUBECONFIG, ~/.kube/config);
        raises `kubeconfig.ConfigError` when it cannot be loaded."""
        return cls(
            await kubeconfig_.load(kubeconfig, context),
            qps=qps,
            burst=burst,
            field_manager=field_manager,
            request_timeout=request_timeout,
            max_connections=max_connections,
        )

    async def close(self) -> None:
        self.deadlines.close()
        await self._session.close()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- plumbing ---------------------------------------------------------------------------

    def decoder(self, type_: Any) -> msgspec.json.Decoder[Any]:
        dec = self._decoders.get(type_)
        if dec is None:
            dec = self._decoders[type_] = msgspec.json.Decoder(type_)
        return dec

    async def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": self.user_agent}
        if content_type:
            headers["Content-Type"] = content_type
        auth = await self.cluster.auth.header()
        if auth is not None:
            headers["Authorization"] = auth
        return headers

    def _ssl(self) -> ssl.SSLContext | bool:
        """The TLS context of the request about to be sent (after its `_headers`: an exec
        plugin's client certificate comes with its credentials)."""
        ctx = self.cluster.ssl_context()
        return ctx if ctx is not None else True

    async def request(
        self,
        verb: str,
        resource: Resource,
        *,
        namespace: str | None = None,
        name: str | None = None,
        sub: str = "",
        query: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        encoded_query: str = "",
    ) -> bytes:
        """Send one request; return the body bytes of a 2xx answer or raise ApiError.

        Each attempt must be answered within the client's request timeout, else it raises
        TimeoutError. `query` is encoded here (aiohttp's `params=` would re-parse and
        re-encode the URL); `encoded_query` is a query string encoded once by the caller,
        used instead."""
        path = resource.path(namespace, name, sub)
        if query:
            encoded_query = urllib.parse.urlencode(query)
        url = self.host + path + ("?" + encoded_query if encoded_query else "")
        method = _METHODS[verb]
        headers = await self._headers(content_type if body is not None else None)
        task = asyncio.current_task()
        assert task is not None, "KubeClient.request runs in a task"
        guarded = self.write_guard is not None and verb not in _READS
        for attempt in range(MAX_429_RETRIES + 1):
            await self.limiter.acquire(fair.current_flow.get() or (namespace or "", ""))
            if guarded:
                self._check_guard(verb, path)
            started = time.perf_counter()
            self.deadlines.start(task)
            try:
                async with self._session.request(
                    method,
                    url,
                    data=body,
                    headers=headers,
                    ssl=self._ssl(),
                    server_hostname=self._server_hostname,
                    **self._proxy,
                ) as resp:
                    data = await resp.read()
                    status = resp.status
                    retry_after = resp.headers.get("Retry-After")
            except asyncio.CancelledError:
                if self.deadlines.overran(task):
                    raise TimeoutError(
                        f"{verb} {path}: no answer within {self.deadlines.timeout:g}s"
                    ) from None
                raise
            finally:
                self.deadlines.finish(task)
            self._observe(verb, resource.plural, status, time.perf_counter() - started)
            if status < 300:
                if _THROTTLED in self.throttled and self._last_429 < time.monotonic() - 1.0:
                    self._throttling_over()
                return data
            if status == 429 and attempt < MAX_429_RETRIES:
                delay = _retry_after_seconds(retry_after, attempt)
                metrics.API_THROTTLED.labels(resource.plural).inc()
                self._last_429 = time.monotonic()
                if self.throttled.failed(_THROTTLED, _THROTTLED) is not None:
                    log.warning(
                        "the API server throttles requests (429 on %s %s): retrying after "
                        "%.2fs as it asks; logged again when it stops",
                        verb,
                        path,
                        delay,
                    )
                else:
                    log.debug("429 on %s %s: retrying after %.2fs", verb, path, delay)
                await asyncio.sleep(delay)
                continue
            self._refused(status, headers)
            raise errors.from_response(status, data, verb=verb, path=path)
        raise AssertionError("unreachable")

    def _refused(self, status: int, headers: Mapping[str, str]) -> None:
        """A 401 tells the credentials that what they gave is refused (a token file is read
        again, an exec plugin run again, before the next request)."""
        if status == 401:
            self.cluster.auth.refused(headers.get("Authorization"))

    def _throttling_over(self) -> None:
        stretch = self.throttled.ended(_THROTTLED)
        if stretch is not None:
            log.info(
                "the API server stopped throttling: %d request(s) answered 429 over %.0fs",
                stretch.count,
                stretch.lasted(self.throttled.now()),
            )

    def _check_guard(self, verb: str, path: str) -> None:
        assert self.write_guard is not None
        reason = self.write_guard()
        if reason is not None:
            raise errors.Fenced(f"{verb} {path}: {reason}")

    def _child(self, metric: Any, *label_values: str) -> Any:
        """`metric.labels(*label_values)`, looked up once per metric and label set."""
        key = (metric, label_values)
        child = self._metric_children.get(key)
        if child is None:
            child = self._metric_children[key] = metric.labels(*label_values)
        return child

    def _observe(self, verb: str, plural: str, status: int, seconds: float) -> None:
        """Request metrics: latency by verb, count by verb, resource and code."""
        self._child(metrics.API_LATENCY, verb).observe(seconds)
        self._child(metrics.API_REQUESTS, verb, plural, str(status)).inc()

    def _written(self, kind: str, verb: str) -> None:
        """Count one object written."""
        self._child(metrics.OBJECTS_WRITTEN, kind, verb).inc()

    async def get_path(self, path: str) -> bytes:
        """GET a non-resource path (`/metrics`, `/version`, `/readyz`): the body bytes."""
        headers = await self._headers(None)
        async with self._session.get(
            self.host + path,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=self.deadlines.timeout),
            ssl=self._ssl(),
            server_hostname=self._server_hostname,
            **self._proxy,
        ) as resp:
            data = await resp.read()
            if resp.status >= 300:
                self._refused(resp.status, headers)
                raise errors.from_response(resp.status, data, verb="get", path=path)
            return data

    # -- verbs ------------------------------------------------------------------------------

    async def get(self, resource: Resource, namespace: str | None, name: str, type_: type[T]) -> T:
        data = await self.request("get", resource, namespace=namespace, name=name)
        result: T = self.decoder(type_).decode(data)
        return result

    async def list_page(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        label_selector: str = "",
        limit: int = 500,
        continue_token: str = "",
        resource_version: str = "",
    ) -> bytes:
        query: dict[str, str] = {"limit": str(limit)}
        if label_selector:
            query["labelSelector"] = label_selector
        if continue_token:
            query["continue"] = continue_token
        if resource_version:
            query["resourceVersion"] = resource_version
        return await self.request("list", resource, namespace=namespace, query=query)

    async def _write(
        self,
        verb: str,
        resource: Resource,
        namespace: str | None,
        obj: Any,
        type_: type[T],
        *,
        name: str | None = None,
        sub: str = "",
        content_type: str = "application/json",
        force: bool = False,
    ) -> T:
        """One create/update/patch: body encoded once, our field manager, decoded answer."""
        data = await self.request(
            verb,
            resource,
            namespace=namespace,
            name=name,
            sub=sub,
            encoded_query=self._write_query[force],
            body=obj if isinstance(obj, bytes) else _ENCODER.encode(obj),
            content_type=content_type,
        )
        self._written(resource.kind, verb + (f"/{sub}" if sub else ""))
        result: T = self.decoder(type_).decode(data)
        return result

    async def create(
        self,
        resource: Resource,
        namespace: str | None,
        obj: Any,
        type_: type[T],
        *,
        sub: str = "",
        name: str | None = None,
    ) -> T:
        return await self._write("create", resource, namespace, obj, type_, name=name, sub=sub)

    async def replace(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        obj: Any,
        type_: type[T],
        *,
        sub: str = "",
    ) -> T:
        """PUT: optimistic concurrency through the resourceVersion inside `obj`."""
        return await self._write("update", resource, namespace, obj, type_, name=name, sub=sub)

    async def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        patch: Any,
        type_: type[T],
        *,
        patch_type: PatchType = "merge",
        sub: str = "",
        force: bool = False,
    ) -> T:
        return await self._write(
            "patch",
            resource,
            namespace,
            patch,
            type_,
            name=name,
            sub=sub,
            content_type=_PATCH_CONTENT_TYPES[patch_type],
            force=force,
        )

    async def delete(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation: str = "Background",
    ) -> None:
        """Delete with background propagation (never foreground: it blocks the owner)."""
        options: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "propagationPolicy": propagation,
        }
        pre: dict[str, str] = {}
        if uid:
            pre["uid"] = uid
        if resource_version:
            pre["resourceVersion"] = resource_version
        if pre:
            options["preconditions"] = pre
        await self.request(
            "delete",
            resource,
            namespace=namespace,
            name=name,
            body=_ENCODER.encode(options),
            content_type="application/json",
        )
        self._written(resource.kind, "delete")

    async def watch(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        resource_version: str,
        label_selector: str = "",
        timeout_seconds: int = 300,
        read_timeout: float = WATCH_READ_TIMEOUT,
        on_open: Callable[[], None] | None = None,
    ) -> AsyncIterator[WatchEvent]:
        """Stream watch events (with bookmarks) from `resource_version`.

        The stream ends when the server closes it (`timeout_seconds`); an ERROR event with
        code 410 is raised as `errors.Gone` so the informer relists; a stream that sends
        nothing at all for `read_timeout` seconds (a half-open connection: a peer gone
        without a FIN, a proxy that stopped forwarding) is closed and raises TimeoutError.
        """
        query = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": resource_version,
            "timeoutSeconds": str(timeout_seconds),
        }
        if label_selector:
            query["labelSelector"] = label_selector
        path = resource.path(namespace)
        headers = await self._headers(None)
        await self.limiter.acquire()
        # aiohttp's sock_read would re-arm a timer (cancel one, create one) on every chunk;
        # instead each chunk only stamps the time, and one timer looks every read_timeout/4.
        timeout = aiohttp.ClientTimeout(total=timeout_seconds + 30, sock_read=None)
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None, "KubeClient.watch runs in a task"
        last_read = loop.time()
        stalled = False
        watchdog: asyncio.TimerHandle | None = None

        def check() -> None:
            nonlocal stalled, watchdog
            if loop.time() - last_read > read_timeout:
                stalled = True
                task.cancel()  # wherever the watch waits: for the headers or for bytes
                return
            watchdog = loop.call_later(read_timeout / 4, check)

        watchdog = loop.call_later(read_timeout / 4, check)
        try:
            async for event in self._watch_stream(
                path, query, headers, timeout, resource.plural, on_open
            ):
                last_read = loop.time()
                yield event
        except asyncio.CancelledError:
            if not stalled:
                raise
            task.uncancel()
            raise TimeoutError(f"watch {path}: nothing received for {read_timeout:g}s") from None
        finally:
            if watchdog is not None:
                watchdog.cancel()

    async def _watch_stream(
        self,
        path: str,
        query: dict[str, str],
        headers: dict[str, str],
        timeout: aiohttp.ClientTimeout,
        plural: str,
        on_open: Callable[[], None] | None = None,
    ) -> AsyncIterator[WatchEvent]:
        """The events of one watch response (bookmarks included, ERROR events raised)."""
        async with self._session.get(
            self.host + path,
            params=query,
            headers=headers,
            timeout=timeout,
            ssl=self._ssl(),
            server_hostname=self._server_hostname,
            **self._proxy,
        ) as resp:
            metrics.API_REQUESTS.labels("watch", plural, str(resp.status)).inc()
            if resp.status >= 300:
                self._refused(resp.status, headers)
                raise errors.from_response(resp.status, await resp.read(), verb="watch", path=path)
            if on_open is not None:
                on_open()
            buf = b""
            async for chunk in resp.content.iter_any():
                buf += chunk
                if b"\n" not in chunk:
                    continue
                # One split per chunk (a chunk often holds many events), not a copy of the
                # rest of the buffer per event.
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue
                    try:
                        event = _WATCH_EVENT.decode(line)
                    except RecursionError:  # an object nested deeper than msgspec goes
                        kind, obj = rawjson.split_event(line)
                        event = WatchEvent(kind, msgspec.Raw(obj))
                    if event.type == "ERROR":
                        st = errors.from_response(
                            _status_code(event.object), bytes(event.object), verb="watch", path=path
                        )
                        raise st
                    yield event


_METHODS = {
    "get": "GET",
    "list": "GET",
    "create": "POST",
    "update": "PUT",
    "patch": "PATCH",
    "delete": "DELETE",
}
_READS = frozenset({"get", "list"})


class _Code(msgspec.Struct):
    code: int = 500


def _status_code(raw: msgspec.Raw) -> int:
    try:
        return msgspec.json.decode(raw, type=_Code).code
    except msgspec.DecodeError:
        return 500


def _retry_after_seconds(header: str | None, attempt: int) -> float:
    """Seconds to wait after a 429: at least the server's Retry-After (else exponential from
    0.5 s), plus up to 20% jitter so that a burst's retries do not all return at once."""
    base = 0.5 * (2**attempt)
    if header:
        with contextlib.suppress(ValueError):
            base = max(0.05, float(header))
    return float(min(MAX_RETRY_AFTER, base * (1.0 + 0.2 * random.random())))
