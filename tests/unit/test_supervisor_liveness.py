"""The supervisor's /healthz view of its workers: a worker whose event loop stopped
touching its alive file is stuck (the kubelet should restart the pod); a worker still
starting is not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cliques.operator.supervisor import ALIVE_FILE, STUCK_AFTER, Supervisor


@pytest.fixture
def sleeper() -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc  # type: ignore[misc]
    proc.kill()
    proc.wait()


def test_a_worker_that_stopped_beating_is_stuck(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    sup = Supervisor(1, [], metrics_port=0, runtime_dir=tmp_path)
    w = sup.workers[0]
    w.proc = sleeper
    w.spawned_wall = 1000.0
    assert sup.stuck(now=1000.0 + STUCK_AFTER - 1) is None  # starting: not stuck yet
    alive = tmp_path / ALIVE_FILE.format(pid=sleeper.pid)
    alive.touch()
    os.utime(alive, (2000.0, 2000.0))
    assert sup.stuck(now=2000.0 + STUCK_AFTER - 1) is None
    problem = sup.stuck(now=2000.0 + STUCK_AFTER + 5)
    assert problem is not None and problem.startswith("worker-0 ") and "stuck for 35s" in problem


def test_a_dead_worker_is_the_restart_loop_s_business_not_liveness(tmp_path: Path) -> None:
    sup = Supervisor(1, [], metrics_port=0, runtime_dir=tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    sup.workers[0].proc = proc
    assert sup.stuck(now=1e12) is None
