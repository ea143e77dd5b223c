"""The HTTP endpoint: `/healthz` (the process is alive), `/readyz` (every informer has
synced) and `/metrics` (Prometheus; aggregated across processes in multiprocess mode)."""

from __future__ import annotations

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


class HealthServer:
    def __init__(self, port: int, ready: Callable[[], bool], host: str = "0.0.0.0") -> None:
        self.port = port
        self.host = host
        self.ready = ready
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, request: web.Request) -> web.Response:
        if self.ready():
            return web.Response(text="ready\n")
        return web.Response(status=503, text="informers not synced\n")

    async def _metrics(self, request: web.Request) -> web.Response:
        reg = _registry()
        body = generate_latest(reg) if reg is not None else generate_latest()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
