"""The HTTP endpoint: `/healthz` (the process, and under a supervisor every worker's event
loop, is alive), `/readyz` (every informer has synced) and `/metrics` (Prometheus;
aggregated across processes in multiprocess mode)."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, multiprocess


def _registry() -> CollectorRegistry | None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        reg = CollectorRegistry()
        multiprocess.MultiProcessCollector(reg)  # type: ignore[no-untyped-call]
        return reg
    return None


class BindError(Exception):
    """The metrics address cannot be served (in use, or not an address of this host)."""


class HealthServer:
    def __init__(
        self,
        port: int,
        ready: Callable[[], bool],
        host: str = "0.0.0.0",
        alive: Callable[[], str | None] | None = None,
    ) -> None:
        self.port = port
        self.host = host
        self.ready = ready
        #: None when alive, else what is stuck (the supervisor's view of its workers)
        self.alive = alive
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        try:
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            why = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be served ({exc})"
            raise BindError(
                f"the metrics address {self.host}:{self.port} {why}: choose another with "
                "--metrics-bind-address HOST:PORT (or --metrics-port 0 for none)"
            ) from None

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _healthz(self, request: web.Request) -> web.Response:
        problem = self.alive() if self.alive is not None else None
        if problem is not None:
            return web.Response(status=503, text=problem + "\n")
        return web.Response(text="ok\n")

    async def _readyz(self, request: web.Request) -> web.Response:
        if self.ready():
            return web.Response(text="ready\n")
        return web.Response(status=503, text="informers not synced\n")

    async def _metrics(self, request: web.Request) -> web.Response:
        reg = _registry()
        body = generate_latest(reg) if reg is not None else generate_latest()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
