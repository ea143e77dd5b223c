"""The default number of workers: CPU affinity capped by the cgroup CPU quota."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cliques.operator import cpus


@pytest.mark.parametrize(
    ("text", "want"),
    [("max 100000", None), ("100000 100000", 1.0), ("150000 100000", 1.5), ("junk", None)],
)
def test_cpu_max(text: str, want: float | None) -> None:
    assert cpus.quota_from_cpu_max(text) == want


def _cgroup(root: Path, path: str, cpu_max: str) -> None:
    d = root / path
    d.mkdir(parents=True, exist_ok=True)
    (d / "cpu.max").write_text(cpu_max)


def test_the_tightest_quota_of_the_process_cgroup_and_its_parents(tmp_path: Path) -> None:
    _cgroup(tmp_path, "", "max 100000")
    _cgroup(tmp_path, "kubepods", "400000 100000")
    _cgroup(tmp_path, "kubepods/pod1/ctr", "50000 100000")
    assert cpus.cgroup_quota(tmp_path, "0::/kubepods/pod1/ctr\n") == 0.5
    # a pod limited to half a CPU on a big node still gets one worker, never 0
    assert cpus.available(tmp_path, "0::/kubepods/pod1/ctr\n") == 1


def test_no_quota_means_the_cpus_we_may_run_on(tmp_path: Path) -> None:
    _cgroup(tmp_path, "", "max 100000")
    assert cpus.cgroup_quota(tmp_path, "0::/\n") is None
    assert cpus.available(tmp_path, "0::/\n") == len(os.sched_getaffinity(0))


def test_a_quota_rounds_up(tmp_path: Path) -> None:
    _cgroup(tmp_path, "a", "150000 100000")
    assert cpus.available(tmp_path, "0::/a\n") == min(2, len(os.sched_getaffinity(0)))
