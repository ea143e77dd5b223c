"""A fault-injecting HTTP proxy between an operator and the real API server (`cliques bench
chaos`).

The operator is given a kubeconfig whose server is `http://127.0.0.1:<port>` (no TLS, no
credentials); the proxy forwards every request, unchanged and streamed both ways, to the
real API server over TLS with the credentials of the original kubeconfig. Because it sees
each HTTP request, it can inject the faults a real control plane produces:

- `cut_watches()`: every watch stream open at that moment is aborted (the TCP connection is
  reset), as when a load balancer or the API server drops connections;
- `stall_watches()`: every open watch stream stops receiving bytes without being closed
  (a half-open connection); the operator's read deadline must notice it;
- `throttle(seconds, fraction)`: for a while, that fraction of the non-watch requests is
  answered `429 Too Many Requests` with `Retry-After: 1` and the API server's own Status
  body, without reaching the API server (so a refused write is never half done);
- `refuse(seconds, status)`: for a while, every request (watches too) is answered `status`:
  503 with the body an API server sends while it starts ("the request has been made
  before all known HTTP paths have been installed"), or 429 as above.

Anything the proxy cannot reach upstream (the API server restarting) resets the client's
connection, as a direct connection would fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import ssl
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from aiohttp import web

from cliques.kube import kubeconfig

#: Headers that belong to one hop, never forwarded.
_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
_STARTING = (
    b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
    b'"message":"the request has been made before all known HTTP paths have been installed,'
    b' please try again","reason":"ServiceUnavailable","details":{"retryAfterSeconds":1},'
    b'"code":503}'
)
_THROTTLED = (
    b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
    b'"message":"Too many requests, please try again later.","reason":"TooManyRequests",'
    b'"details":{"retryAfterSeconds":1},"code":429}'
)


def _is_watch(request: web.Request) -> bool:
    return request.query.get("watch", "") in ("1", "true")


class FaultProxy:
    """Forwards the operator's requests to the API server of `upstream_kubeconfig`."""

    def __init__(self, upstream_kubeconfig: str, *, seed: int = 0) -> None:
        self.upstream_kubeconfig = upstream_kubeconfig
        self.port = 0
        self.counts: Counter[str] = Counter()  # requests, watches, cut, stalled, throttled
        self._rng = random.Random(seed)
        self._host = ""
        self._ssl: ssl.SSLContext | None = None
        self._auth: dict[str, str] = {}
        self._session: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None
        self._watches: dict[int, tuple[web.Request, asyncio.Event]] = {}
        #: the tasks running `_handle` now (ended by `close`, whatever they wait on)
        self._handling: set[asyncio.Task[Any]] = set()
        self._throttle_until = 0.0
        self._throttle_fraction = 0.0
        self._refuse_until = 0.0
        self._refuse_status = 503

    async def start(self) -> None:
        cluster = await kubeconfig.load(self.upstream_kubeconfig)
        self._host = cluster.host
        self._ssl = cluster.ssl_context()
        auth = await cluster.auth.header()
        if auth:
            self._auth = {"Authorization": auth}
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            connector=aiohttp.TCPConnector(limit=0, ssl=self._ssl if self._ssl else False),
            auto_decompress=False,
        )
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # A short shutdown: a stalled or long-poll stream is cut, not waited for (60 s).
        self._runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=2.0
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert isinstance(server, asyncio.Server)
        self.port = int(server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        for request, _ in list(self._watches.values()):
            _abort(request)
        # The upstream session first: a handler streaming a watch waits on its upstream
        # (quiet for up to a bookmark interval), and the runner's cleanup waits for it.
        if self._session is not None:
            await self._session.close()
        # Then every handler still running, ended and awaited: the server's shutdown only
        # cancels them, and a proxy closed leaves no task of its own behind.
        handling = list(self._handling)
        for task in handling:
            task.cancel()
        await asyncio.gather(*handling, return_exceptions=True)
        if self._runner is not None:
            server = self._runner.server
            connections = list(server.connections) if server is not None else []
            await self._runner.cleanup()
            # each connection's task ends once its request has (it was cancelled above)
            tasks = [t for c in connections if (t := c._task_handler) is not None]
            if tasks:
                await asyncio.wait(tasks, timeout=5.0)

    def kubeconfig_text(self) -> str:
        """A kubeconfig that sends a client through this proxy."""
        return yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "chaos", "cluster": {"server": f"http://127.0.0.1:{self.port}"}}
                ],
                "users": [{"name": "chaos", "user": {}}],
                "contexts": [{"name": "chaos", "context": {"cluster": "chaos", "user": "chaos"}}],
                "current-context": "chaos",
            }
        )

    def write_kubeconfig(self, path: Path) -> str:
        path.write_text(self.kubeconfig_text())
        return str(path)

    # -- faults ---------------------------------------------------------------------------

    def open_watches(self) -> int:
        return len(self._watches)

    def cut_watches(self) -> int:
        """Reset every open watch connection; how many there were."""
        n = 0
        for request, _ in list(self._watches.values()):
            _abort(request)
            n += 1
        self.counts["cut"] += n
        return n

    def stall_watches(self) -> int:
        """Freeze every open watch stream (nothing forwarded, nothing closed)."""
        n = 0
        for _, frozen in list(self._watches.values()):
            if not frozen.is_set():
                frozen.set()
                n += 1
        self.counts["stalled"] += n
        return n

    def throttle(self, seconds: float, fraction: float) -> None:
        """Answer `fraction` of the requests 429 for the next `seconds`."""
        self._throttle_until = time.monotonic() + seconds
        self._throttle_fraction = fraction

    def refuse(self, seconds: float, status: int = 503) -> None:
        """Answer every request `status` (503 or 429) for the next `seconds`."""
        if status not in (429, 503):
            raise ValueError(f"refuse: status {status} is neither 429 nor 503")
        self._refuse_until = time.monotonic() + seconds
        self._refuse_status = status

    # -- forwarding -----------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - aiohttp runs every handler in a task
            return await self._proxy(request)
        self._handling.add(task)
        try:
            return await self._proxy(request)
        finally:
            self._handling.discard(task)

    async def _proxy(self, request: web.Request) -> web.StreamResponse:
        watch = _is_watch(request)
        self.counts["watches" if watch else "requests"] += 1
        if time.monotonic() < self._refuse_until:
            self.counts[f"refused {self._refuse_status}"] += 1
            return web.Response(
                status=self._refuse_status,
                body=_THROTTLED if self._refuse_status == 429 else _STARTING,
                headers={"Retry-After": "1", "Content-Type": "application/json"},
            )
        if (
            not watch
            and time.monotonic() < self._throttle_until
            and self._rng.random() < self._throttle_fraction
        ):
            self.counts["throttled"] += 1
            return web.Response(
                status=429,
                body=_THROTTLED,
                headers={"Retry-After": "1", "Content-Type": "application/json"},
            )
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        headers.update(self._auth)
        body = await request.read() if request.can_read_body else None
        try:
            upstream = await self._session.request(
                request.method,
                self._host + request.rel_url.raw_path_qs,
                headers=headers,
                data=body,
                allow_redirects=False,
            )
        except (aiohttp.ClientError, OSError, TimeoutError):
            self.counts["upstream errors"] += 1
            _abort(request)
            raise web.HTTPBadGateway() from None
        frozen = asyncio.Event()
        key = id(request)
        if watch:
            self._watches[key] = (request, frozen)
        try:
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for k, v in upstream.headers.items():
                if k.lower() not in _HOP:
                    response.headers[k] = v
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                if frozen.is_set():
                    await _forever(request)
                await response.write(chunk)
            await response.write_eof()
            return response
        except (aiohttp.ClientError, OSError, ConnectionResetError):
            _abort(request)
            return web.Response(status=502)
        finally:
            self._watches.pop(key, None)
            upstream.release()


def _abort(request: web.Request) -> None:
    transport = request.transport
    if transport is not None:
        with contextlib.suppress(Exception):
            transport.abort()


async def _forever(request: web.Request) -> Any:
    """Hold a stalled stream until the client gives up on it (closes its side); then drop
    the upstream watch too. aiohttp tells a handler of a closed client only through its
    transport, hence the poll."""
    while request.transport is not None and not request.transport.is_closing():  # noqa: ASYNC110
        await asyncio.sleep(1.0)
    raise ConnectionResetError("client closed a stalled stream")
