"""The dev cluster's processes as seen from outside: `ps`, pid files, log tails, stopping.

kwokctl starts each control-plane component detached and records its pid in a file;
`cluster` uses these helpers to tell which of them still run (a zombie does not count, and
neither does a recycled pid whose command line is not the component's), how much memory they
use, what their logs last said, and to stop them - politely, then by SIGKILL - by pid only.
`spawn` starts a process of an add-on the same way (detached, its pid in a file, its output
in a log). Portable to Linux and macOS (`ps -o`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

POLL_SECONDS = 0.25


@dataclass(frozen=True)
class Proc:
    """One live process: its pid, `ps` state letters, resident memory and command line."""

    pid: int
    stat: str
    rss_kib: int
    args: str


def ps(pids: Iterable[int]) -> dict[int, Proc]:
    """The live, non-zombie processes among `pids`, by pid."""
    wanted = sorted(set(pids))
    if not wanted:
        return {}
    done = subprocess.run(
        ["ps", "-ww", "-o", "pid=,stat=,rss=,args=", "-p", ",".join(map(str, wanted))],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    found: dict[int, Proc] = {}
    for line in done.stdout.splitlines():
        parts = line.split(None, 3)
        if len(parts) < 3 or not parts[0].isdigit() or not parts[2].isdigit():
            continue
        proc = Proc(int(parts[0]), parts[1], int(parts[2]), parts[3] if len(parts) > 3 else "")
        if not proc.stat.startswith("Z"):
            found[proc.pid] = proc
    return found


def read_pid(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def tail(path: Path, lines: int = 30) -> str:
    """The last `lines` lines of a (possibly large, possibly missing) log file."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 64 * 1024))
            data = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(data.splitlines()[-lines:])


def spawn(argv: list[str], log: Path, pid_file: Path, *, env: dict[str, str]) -> int:
    """Start `argv` detached, as kwokctl starts a component: in a session of its own (a ^C
    of whoever started it does not reach it), stdin from /dev/null, stdout and stderr
    appended to `log`; its pid is written to `pid_file` and returned."""
    log.parent.mkdir(parents=True, exist_ok=True)
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        pid = os.posix_spawn(
            argv[0],
            argv,
            env,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, null, 0),
                (os.POSIX_SPAWN_DUP2, out, 1),
                (os.POSIX_SPAWN_DUP2, out, 2),
            ],
            setsid=True,
        )
    finally:
        os.close(out)
        os.close(null)
    pid_file.write_text(f"{pid}\n", encoding="utf-8")
    return pid


def reap(pids: Iterable[int]) -> None:
    """Collect the exit status of those of `pids` that are our own exited children (a
    process that spawned them and lives on leaves no zombies behind)."""
    for pid in pids:
        with suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def send(pid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError):
        os.kill(pid, sig)


def stop(pids: Iterable[int], is_ours: Callable[[Proc], bool], timeout: float) -> list[int]:
    """SIGTERM the live ones among `pids` that are still ours, wait up to `timeout` seconds,
    SIGKILL those left; returns the pids that needed SIGKILL."""
    candidates = list(pids)

    def alive() -> list[int]:
        return [pid for pid, proc in ps(candidates).items() if is_ours(proc)]

    for pid in alive():
        send(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while (left := alive()) and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
    for pid in left:
        send(pid, signal.SIGKILL)
    end = time.monotonic() + 10
    while alive() and time.monotonic() < end:
        time.sleep(POLL_SECONDS)
    reap(candidates)
    return left
