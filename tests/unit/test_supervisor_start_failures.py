"""A supervisor whose workers keep dying before their caches sync stops with exit 1 instead
of restarting them for ever, and one whose worker finds a configuration a restart cannot fix
stops at once with exit 3 (real worker processes; they fail on an option their parser
refuses, or on a kubeconfig that does not exist, so no cluster is needed)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from cliques.operator.supervisor import Supervisor


def test_workers_that_never_start_stop_the_operator(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="cliques.operator.supervisor")
    sup = Supervisor(
        2,
        ["--qps", "not-a-number", "--log-level", "error"],
        metrics_port=0,
        runtime_dir=tmp_path / "run",
        max_failed_starts=2,
    )
    assert asyncio.run(asyncio.wait_for(sup.run(), timeout=120)) == 1
    messages = [r.getMessage() for r in caplog.records]
    assert any(
        "exited 2 times in a row before its caches synced (last: code 2); stopping" in m
        for m in messages
    ), messages
    assert all(w.proc is not None and w.proc.poll() is not None for w in sup.workers)
    assert not (tmp_path / "run").exists(), "the runtime directory is removed"


def test_a_worker_without_its_kubeconfig_stops_the_operator_at_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="cliques.operator.supervisor")
    sup = Supervisor(
        2,
        ["--kubeconfig", str(tmp_path / "missing.yaml"), "--log-level", "error"],
        metrics_port=0,
        runtime_dir=tmp_path / "run",
        max_failed_starts=5,
    )
    assert asyncio.run(asyncio.wait_for(sup.run(), timeout=120)) == 3
    messages = [r.getMessage() for r in caplog.records]
    assert any("cannot start for a reason a restart does not fix" in m for m in messages)
    assert not any("in a row" in m for m in messages), messages
