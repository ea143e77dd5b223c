"""The HTTP endpoint: `/healthz` (the process, and under a supervisor every worker's event
loop, is alive), `/readyz` (every informer has synced) and `/metrics` (Prometheus;
aggregated across processes in multiprocess mode, with the CliqueSets' gang metrics,
`gang_metrics`, and `cliques_operator_ready`: 1 while /readyz answers ready, else 0)."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from cliques import gang_metrics

READY_METRIC = "cliques_operator_ready"


class ReadyCollector(Collector):
    """`cliques_operator_ready`: what /readyz would answer now, as 1 or 0."""

    def __init__(self, ready: Callable[[], bool]) -> None:
        self.ready = ready

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily(
            READY_METRIC,
            "1 while the operator is ready (/readyz: every informer synced, under a "
            "supervisor in every worker), else 0.",
        )
        family.add_metric([], 1.0 if self.ready() else 0.0)
        return [family]


def render_metrics(ready: Callable[[], bool]) -> bytes:
    """The /metrics body: the prometheus-client metrics (aggregated from the workers' files
    in multiprocess mode), the gang metrics and readiness."""
    directory = os.environ.get(gang_metrics.MULTIPROC_ENV)
    extra = CollectorRegistry()
    extra.register(ReadyCollector(ready))
    if directory:
        extra.register(gang_metrics.collector(Path(directory)))
        multiprocess.MultiProcessCollector(extra)  # type: ignore[no-untyped-call]
        return generate_latest(extra)
    extra.register(gang_metrics.collector())
    return generate_latest() + generate_latest(extra)


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
        body = render_metrics(self.ready)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
