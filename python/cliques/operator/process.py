"""Running one operator process: event loop (uvloop), signals, health server, manager, and
the garbage collector tuned for a long-running process with a large cache."""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
import os
import signal
from pathlib import Path

import uvloop

from cliques.kube.startup import StartupError
from cliques.operator import health as health_
from cliques.operator.health import HealthServer
from cliques.operator.manager import Config, Manager
from cliques.operator.shard_managers import ShardedOperator
from cliques.operator.supervisor import EXIT_NEEDS_FIX

log = logging.getLogger(__name__)


async def serve(config: Config, metrics_host: str, metrics_port: int) -> None:
    manager: Manager | ShardedOperator = (
        ShardedOperator(config) if config.leases else Manager(config)
    )
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, manager.stop)
    health = HealthServer(metrics_port, manager.ready, metrics_host) if metrics_port else None
    if health is not None:
        await health.start()
        log.info("serving /metrics, /healthz, /readyz on %s:%d", metrics_host, metrics_port)
    ready_task = asyncio.create_task(_announce_ready(manager))
    beat_task = asyncio.create_task(_heartbeat())
    try:
        await manager.run()
    finally:
        ready_task.cancel()
        beat_task.cancel()
        if health is not None:
            await health.stop()


async def _announce_ready(manager: Manager | ShardedOperator) -> None:
    """Under a supervisor: write `ready-<pid>` into CLIQUES_READY_DIR once caches synced."""
    ready_dir = os.environ.get("CLIQUES_READY_DIR")
    if not ready_dir:
        return
    await manager.synced.wait()
    await asyncio.to_thread(Path(ready_dir, f"ready-{os.getpid()}").touch)


async def _heartbeat() -> None:
    """Under a supervisor: touch `alive-<pid>` every HEARTBEAT seconds from the event loop,
    so that the supervisor's /healthz fails when this worker's loop is stuck."""
    ready_dir = os.environ.get("CLIQUES_READY_DIR")
    if not ready_dir:
        return
    path = Path(ready_dir, f"alive-{os.getpid()}")
    while True:
        await asyncio.to_thread(path.touch)
        await asyncio.sleep(HEARTBEAT)


#: Seconds between two heartbeats of a worker.
HEARTBEAT = 5.0

#: Allocations between two young-generation collections (CPython's default is 700).
GC_THRESHOLD0 = 10_000


def tune_gc() -> None:
    """Make the cyclic garbage collector cheaper for an operator.

    Everything imported so far lives as long as the process: `gc.freeze()` moves it out of
    the collector's reach, so no collection walks it again. And the young generation is
    collected every GC_THRESHOLD0 allocations instead of 700: watch events and reconciles
    allocate a great deal that dies young without cycles (reference counting frees it), so
    collecting less often promotes less to the older generations, whose collections walk
    the whole cache.
    """
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD0, gen1, gen2)


def die_with_supervisor() -> None:
    """Under a supervisor (Linux): this worker gets SIGTERM (and drains, handing its leases
    back) when the supervisor dies, even by SIGKILL, instead of living on as an orphan that
    still reconciles."""
    parent = os.environ.get("CLIQUES_SUPERVISOR_PID")
    if not parent:
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: the supervisor's own shutdown only
        return
    if os.getppid() != int(parent):  # it died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)


PR_SET_PDEATHSIG = 1


def run_single(config: Config, *, metrics_host: str = "0.0.0.0", metrics_port: int) -> int:
    die_with_supervisor()
    tune_gc()
    try:
        uvloop.run(serve(config, metrics_host, metrics_port))
    except health_.BindError as exc:
        log.error("%s", exc)
        return 1
    except StartupError as exc:
        log.error("cannot start: %s", exc)
        return EXIT_NEEDS_FIX
    except Exception as exc:
        log.error("operator failed: %s", exc, exc_info=not isinstance(exc, OSError))
        return 1
    return 0
