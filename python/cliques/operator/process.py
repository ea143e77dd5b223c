"""Running one operator process: event loop (uvloop), signals, health server, manager."""

from __future__ import annotations

import asyncio
import logging
import signal

import uvloop

from cliques.operator.health import HealthServer
from cliques.operator.manager import Config, Manager

log = logging.getLogger(__name__)


async def serve(config: Config, metrics_port: int) -> None:
    manager = Manager(config)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, manager.stop)
    health = HealthServer(metrics_port, manager.ready) if metrics_port else None
    if health is not None:
        await health.start()
        log.info("serving /metrics, /healthz, /readyz on :%d", metrics_port)
    try:
        await manager.run()
    finally:
        if health is not None:
            await health.stop()


def run_single(config: Config, *, metrics_port: int) -> int:
    try:
        uvloop.run(serve(config, metrics_port))
    except OSError as exc:
        log.error("operator failed: %s", exc)
        return 1
    return 0
