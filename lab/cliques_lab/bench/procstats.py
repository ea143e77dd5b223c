"""CPU seconds and memory of an operator's whole process tree, read from /proc (Linux).

The benchmark measures an operator from the outside, the way `top` would: the sum of user
and system CPU time over the process and all its descendants (a supervisor and its workers,
or a kopf process and its threads), and the resident set size of each process.
"""

from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class ProcSample:
    pid: int
    cpu_seconds: float
    rss_bytes: int
    name: str


def _read_stat(pid: int) -> tuple[int, float, int, str] | None:
    """(ppid, cpu seconds, rss bytes, comm) of one process, None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm is in parentheses and may hold spaces: split after the last ')'.
    lpar, rpar = raw.index("("), raw.rindex(")")
    comm = raw[lpar + 1 : rpar]
    fields = raw[rpar + 2 :].split()
    ppid = int(fields[1])
    utime, stime = int(fields[11]), int(fields[12])
    rss_pages = int(fields[21])
    return ppid, (utime + stime) / _TICKS, rss_pages * _PAGE, comm


def _cmdline_name(pid: int, fallback: str) -> str:
    """A readable name: `worker-N` for a supervisor's worker, `kopf`, else the command."""
    try:
        parts = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return fallback
    text = " ".join(p.decode(errors="replace") for p in parts if p)
    m = re.search(r"--worker-name (\S+)", text)
    if m:
        return m.group(1)
    if "kopf run" in text:
        return "kopf"
    if " operator " in f"{text} ":
        return "operator"
    return fallback


def tree(root: int) -> list[int]:
    """`root` and every descendant alive now."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        st = _read_stat(int(entry))
        if st is not None:
            parents.setdefault(st[0], []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(parents.get(pid, ()))
    return out


class TreeMeter:
    """Accumulates the CPU of a process tree, including children that have exited
    (their last sample counts), so a worker killed mid-run is not forgotten."""

    def __init__(self, root: int) -> None:
        self.root = root
        self._last: dict[int, ProcSample] = {}

    def sample(self) -> list[ProcSample]:
        now = []
        for pid in tree(self.root):
            st = _read_stat(pid)
            if st is None:
                continue
            s = ProcSample(pid, st[1], st[2], _cmdline_name(pid, st[3]))
            self._last[pid] = s
            now.append(s)
        return now

    def cpu_seconds(self) -> float:
        self.sample()
        return sum(s.cpu_seconds for s in self._last.values())

    def rss(self) -> dict[int, ProcSample]:
        return {s.pid: s for s in self.sample()}


def cpu_of(pids: dict[str, int]) -> dict[str, float]:
    """CPU seconds so far of each named process alone (a control-plane component); a
    process that is gone is left out."""
    out = {}
    for name, pid in pids.items():
        stat = _read_stat(pid)
        if stat is not None:
            out[name] = stat[1]
    return out


def cpu_delta(now: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    """`cpu_<name>` for each process seen at both ends, and `cpu_control_plane`, their sum."""
    out = {f"cpu_{n}": now[n] - before[n] for n in sorted(now) if n in before}
    if out:
        out["cpu_control_plane"] = sum(out.values())
    return out


#: A control-plane component below this many cores is idle again (the fake nodes' heartbeats
#: and leases keep an idle controller-manager at ~0.01 cores, even with 1,000 nodes).
SETTLED_RATE = 0.1


def busy_until(
    samples: list[tuple[float, float]], rate: float = SETTLED_RATE, window: float = 5.0
) -> float | None:
    """From (seconds, CPU seconds so far) samples of one process, the end of the last span
    of at least `window` seconds in which it used more than `rate` cores: when it was last
    busy (0.0 if never; None with fewer than two samples). Spans, not single samples, so
    that a periodic task of a few ticks is not taken for work."""
    if len(samples) < 2:
        return None
    spans = [samples[0]]
    for t, cpu in samples[1:]:
        if t - spans[-1][0] >= window:
            spans.append((t, cpu))
    if spans[-1] is not samples[-1]:
        spans.append(samples[-1])  # the last, shorter span
    last = 0.0
    for (t0, c0), (t1, c1) in itertools.pairwise(spans):
        if t1 > t0 and (c1 - c0) / (t1 - t0) > rate:
            last = t1
    return last
