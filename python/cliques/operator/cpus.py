"""How many CPUs this process may really use: the default number of worker processes.

`os.cpu_count()` counts the node's CPUs; in a pod limited to 1 CPU on a 64-core node that
would start 64 workers fighting for one CPU's quota. The answer here is the smallest of the
CPUs the scheduler lets this process run on (`sched_getaffinity`, i.e. cpusets) and the
cgroup v2 CPU quota (`cpu.max`, rounded up), read at the process's own cgroup and every
parent up to the root; cgroup v1's `cpu.cfs_quota_us`/`cpu.cfs_period_us` likewise.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _affinity() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def quota_from_cpu_max(text: str) -> float | None:
    """`max 100000` -> None (no limit); `150000 100000` -> 1.5."""
    parts = text.split()
    if len(parts) != 2 or parts[0] == "max":
        return None
    try:
        quota, period = int(parts[0]), int(parts[1])
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def _own_cgroup_dirs(root: Path, proc_cgroup: str) -> list[Path]:
    """The process's cgroup v2 directory and its parents (innermost first)."""
    for line in proc_cgroup.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            own = root / path.lstrip("/")
            out = [own, *own.parents]
            return [p for p in out if p == root or root in p.parents]
    return [root]


def cgroup_quota(root: Path = CGROUP_ROOT, proc_cgroup: str | None = None) -> float | None:
    """The tightest CPU quota of this process's cgroups, in CPUs (None: no limit)."""
    if proc_cgroup is None:
        try:
            proc_cgroup = Path("/proc/self/cgroup").read_text()
        except OSError:
            proc_cgroup = ""
    quotas: list[float] = []
    for directory in _own_cgroup_dirs(root, proc_cgroup):
        try:
            quota = quota_from_cpu_max((directory / "cpu.max").read_text())
        except OSError:
            continue
        if quota is not None:
            quotas.append(quota)
    try:  # cgroup v1
        q = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        p = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        if q > 0 and p > 0:
            quotas.append(q / p)
    except (OSError, ValueError):
        pass
    return min(quotas) if quotas else None


def available(root: Path = CGROUP_ROOT, proc_cgroup: str | None = None) -> int:
    """CPUs this process may use: affinity, capped by the cgroup quota (at least 1)."""
    n = _affinity()
    quota = cgroup_quota(root, proc_cgroup)
    if quota is not None:
        n = min(n, math.ceil(quota))
    return max(1, n)
