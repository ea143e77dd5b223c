"""The supervisor: N worker processes that split the buckets, restarted when they die.

`cliques operator --workers N` (N > 1) runs this. Each worker is a `cliques operator`
process of its own, started with a fixed range of buckets (`--buckets a-b`); it watches only
the children labelled with those buckets. A worker that dies is restarted with exponential
backoff, and its buckets go to the new process only after the old one has exited (the
supervisor waits for it), so two processes never reconcile the same bucket. A worker that
keeps dying before its caches sync (MAX_FAILED_STARTS in a row) stops the whole operator
with exit 1, for the kubelet to see and restart.

Metrics: the supervisor points every worker at one PROMETHEUS_MULTIPROC_DIR and serves the
aggregate on one port; `/readyz` is ready only when every worker has written its ready file
(informers synced). SIGTERM/SIGINT are forwarded; each worker drains its queues and exits;
the supervisor exits when all have.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

#: A worker's exit code for a problem no restart fixes (the CRDs missing, RBAC refused,
#: credentials refused): the supervisor stops the operator with it instead of restarting.
EXIT_NEEDS_FIX = 3

log = logging.getLogger(__name__)

READY_FILE = "ready-{pid}"
ALIVE_FILE = "alive-{pid}"
#: A worker whose event loop has not touched its alive file for this long is stuck: /healthz
#: fails (the kubelet restarts the pod). Workers touch it every few seconds.
STUCK_AFTER = 30.0
#: A worker that exits this many times in a row before its caches synced stops the operator
#: (exit 1): a start-up failure is not fixed by restarting, and a supervisor that retries it
#: for ever hides it from the kubelet (no CrashLoopBackOff, only a pod that is never ready).
MAX_FAILED_STARTS = 5


@dataclass
class Worker:
    index: int
    buckets: list[int]
    args: list[str]
    proc: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    started_at: float = 0.0
    backoff: float = 1.0
    spawned_wall: float = 0.0
    pids: list[int] = field(default_factory=list)
    #: exits in a row before the worker's caches synced (its ready file written)
    failed_starts: int = 0

    @property
    def bucket_arg(self) -> str:
        return f"{self.buckets[0]}-{self.buckets[-1]}" if self.buckets else ""


class Supervisor:
    def __init__(
        self,
        workers: int,
        worker_args: list[str],
        *,
        metrics_port: int,
        metrics_host: str = "0.0.0.0",
        runtime_dir: Path | None = None,
        total_buckets: int = 256,
        max_failed_starts: int = MAX_FAILED_STARTS,
    ) -> None:
        from cliques.operator import buckets

        self.max_failed_starts = max_failed_starts

        self.runtime_dir = runtime_dir or Path(tempfile.mkdtemp(prefix="cliques-operator-"))
        self.metrics_dir = self.runtime_dir / "metrics"
        self.metrics_port = metrics_port
        self.metrics_host = metrics_host
        self.workers = [
            Worker(i, part, worker_args)
            for i, part in enumerate(buckets.split(total_buckets, workers))
        ]
        self._stopping = False

    def ready(self) -> bool:
        return all(
            w.proc is not None
            and w.proc.poll() is None
            and (self.runtime_dir / READY_FILE.format(pid=w.proc.pid)).exists()
            for w in self.workers
        )

    def stuck(self, now: float | None = None) -> str | None:
        """None while every worker's loop is alive, else which one is stuck and for how long
        (a worker still starting, or restarting, is not stuck)."""
        now = time.time() if now is None else now
        for w in self.workers:
            if w.proc is None or w.proc.poll() is not None:
                continue
            path = self.runtime_dir / ALIVE_FILE.format(pid=w.proc.pid)
            try:
                last = path.stat().st_mtime
            except FileNotFoundError:
                last = w.spawned_wall
            if now - last > STUCK_AFTER:
                return f"worker-{w.index} (pid {w.proc.pid}) stuck for {now - last:.0f}s"
        return None

    def _spawn(self, w: Worker) -> None:
        env = dict(os.environ)
        env["PROMETHEUS_MULTIPROC_DIR"] = str(self.metrics_dir)
        env["CLIQUES_READY_DIR"] = str(self.runtime_dir)
        env["CLIQUES_SUPERVISOR_PID"] = str(os.getpid())
        cmd = [
            sys.executable,
            "-m",
            "cliques",
            "operator",
            *w.args,
            "--workers",
            "1",
            "--metrics-port",
            "0",
            "--worker-name",
            f"worker-{w.index}",
        ]
        if "--leases" not in w.args:  # with leases, workers take shards themselves
            cmd += ["--buckets", w.bucket_arg]
        w.proc = subprocess.Popen(cmd, env=env)
        w.pids.append(w.proc.pid)
        w.started_at = time.monotonic()
        w.spawned_wall = time.time()
        log.info("worker-%d started (pid %d, buckets %s)", w.index, w.proc.pid, w.bucket_arg)

    async def run(self) -> int:
        """Run the workers until SIGTERM/SIGINT (exit 0) or a worker that keeps failing to
        start (exit 1)."""
        from cliques import metrics
        from cliques.operator.health import BindError, HealthServer

        self.metrics_dir.mkdir(parents=True, exist_ok=True)
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        health = (
            HealthServer(self.metrics_port, self.ready, self.metrics_host, alive=self.stuck)
            if self.metrics_port
            else None
        )
        if health is not None:
            try:
                await health.start()
            except BindError as exc:
                log.error("%s", exc)
                shutil.rmtree(self.runtime_dir, ignore_errors=True)
                return 1
        for w in self.workers:
            metrics.WORKER_RESTARTS.labels(f"worker-{w.index}")  # each worker's series, at 0
            self._spawn(w)
        exit_code = 0
        try:
            while not stop.is_set():
                for w in self.workers:
                    assert w.proc is not None
                    code = w.proc.poll()
                    if code is None:
                        if time.monotonic() - w.started_at > 60:
                            w.backoff = 1.0  # ran long enough: reset its backoff
                        continue
                    verdict = self._exited(w, code)
                    if verdict is not None:
                        exit_code = verdict
                        stop.set()
                        break
                    w.restarts += 1
                    metrics.WORKER_RESTARTS.labels(f"worker-{w.index}").inc()
                    log.warning(
                        "worker-%d (pid %d) exited with %s; restarting in %.1fs (restart #%d)",
                        w.index,
                        w.proc.pid,
                        _describe(code),
                        w.backoff,
                        w.restarts,
                    )
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), timeout=w.backoff)
                    if stop.is_set():
                        break
                    w.backoff = min(w.backoff * 2, 30.0)
                    self._spawn(w)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=0.5)
        finally:
            await self._stop_all()
            if health is not None:
                await health.stop()
            shutil.rmtree(self.runtime_dir, ignore_errors=True)
        return exit_code

    def _exited(self, w: Worker, code: int) -> int | None:
        """What the exit (`code`) of worker `w` means: the operator's exit code when it
        must stop (a reason a restart does not fix, or too many failed starts in a row),
        else None (the worker is restarted)."""
        assert w.proc is not None
        if code == EXIT_NEEDS_FIX:
            log.error(
                "worker-%d cannot start for a reason a restart does not fix (its "
                "last log line says which); stopping the operator",
                w.index,
            )
            self._mark_dead(w.proc.pid)
            return EXIT_NEEDS_FIX
        synced = (self.runtime_dir / READY_FILE.format(pid=w.proc.pid)).exists()
        w.failed_starts = 0 if synced else w.failed_starts + 1
        self._mark_dead(w.proc.pid)
        if w.failed_starts >= self.max_failed_starts:
            log.error(
                "worker-%d exited %d times in a row before its caches synced "
                "(last: %s); stopping the operator",
                w.index,
                w.failed_starts,
                _describe(code),
            )
            return 1
        return None

    async def _stop_all(self, grace: float = 60.0) -> None:
        log.info("stopping %d worker(s)", len(self.workers))
        for w in self.workers:
            if w.proc is not None and w.proc.poll() is None:
                w.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for w in self.workers:
            if w.proc is None:
                continue
            with contextlib.suppress(subprocess.TimeoutExpired):
                await asyncio.to_thread(w.proc.wait, max(0.0, deadline - time.monotonic()))
            if w.proc.poll() is None:
                log.warning("worker-%d did not drain in %.0fs; killing it", w.index, grace)
                w.proc.kill()
                w.proc.wait()

    def _mark_dead(self, pid: int) -> None:
        from prometheus_client import multiprocess

        from cliques import gang_metrics

        with contextlib.suppress(Exception):
            multiprocess.mark_process_dead(pid, str(self.metrics_dir))  # type: ignore[no-untyped-call]
        gang_metrics.remove_files(self.metrics_dir, pid)
        for name in (READY_FILE, ALIVE_FILE):
            with contextlib.suppress(FileNotFoundError):
                (self.runtime_dir / name.format(pid=pid)).unlink()


def _describe(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"code {code}"
