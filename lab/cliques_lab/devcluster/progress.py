"""Progress display for the long Go builds: a rich bar on a terminal, plain lines elsewhere.

`build` reports through the small `Reporter` protocol below and never prints itself. On a
terminal the `RichReporter` shows one bar per module (packages compiled out of the packages
the build needs); in CI logs the `PlainReporter` prints one line per step and one per tenth
of the packages, so the log stays short but shows that the build is alive.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import IO, Protocol


def format_seconds(seconds: float) -> str:
    """`75.2` -> `1m15s`; `3700` -> `1h01m40s`."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


class Reporter(Protocol):
    """What a build tells the person waiting for it."""

    def start(self, label: str, note: str) -> None:
        """A module build begins (`label` like `kube v1.35.4`)."""

    def step(self, label: str, text: str) -> None:
        """A named step begins, or a notable event happens (a module download)."""

    def downloaded(self, label: str, count: int, module: str) -> None:
        """The Go proxy delivered the `count`-th module (`module` is `path version`)."""

    def total(self, label: str, packages: int) -> None:
        """How many packages the compile step may need to build."""

    def advance(self, label: str, done: int, current: str) -> None:
        """`done` packages compiled so far, `current` the latest one."""

    def finish(self, label: str, ok: bool, text: str) -> None:
        """The module build ended."""

    def close(self) -> None:
        """No more reports will come."""


class PlainReporter:
    """Line-per-step output for logs (CI, pipes): one extra line per 10% of packages."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._totals: dict[str, int] = {}
        self._printed: dict[str, int] = {}
        self._started: dict[str, float] = {}

    def _line(self, label: str, text: str) -> None:
        print(f"[build {label}] {text}", file=self._stream, flush=True)

    def start(self, label: str, note: str) -> None:
        self._started[label] = time.monotonic()
        self._line(label, note)

    def step(self, label: str, text: str) -> None:
        self._line(label, text)

    def downloaded(self, label: str, count: int, module: str) -> None:
        if count == 1 or count % 50 == 0:
            self._line(label, f"downloaded {count} modules (latest {module})")

    def total(self, label: str, packages: int) -> None:
        self._totals[label] = packages
        self._printed[label] = 0

    def advance(self, label: str, done: int, current: str) -> None:
        total = self._totals.get(label, 0)
        if total <= 0:
            return
        tenth = min(10, done * 10 // total)
        if tenth > self._printed.get(label, 0):
            self._printed[label] = tenth
            elapsed = format_seconds(time.monotonic() - self._started.get(label, time.monotonic()))
            self._line(label, f"compiled {done}/{total} packages ({tenth * 10}%, {elapsed})")

    def finish(self, label: str, ok: bool, text: str) -> None:
        self._line(label, text)

    def close(self) -> None:
        self._stream.flush()


class RichReporter:
    """A live bar per module on a terminal (rich is in the `operator` extra)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TaskID,
            TextColumn,
            TimeElapsedColumn,
        )

        self._console = Console(stderr=True)
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[detail]}", style="dim"),
            console=self._console,
        )
        self._tasks: dict[str, TaskID] = {}
        self._totals: dict[str, int] = {}
        self._live = False

    def start(self, label: str, note: str) -> None:
        if not self._live:  # only once there is a build to show: nothing flickers otherwise
            self._progress.start()
            self._live = True
        self._console.print(f"[bold]{label}[/]: {note}")
        self._tasks[label] = self._progress.add_task(label, total=None, detail="")

    def step(self, label: str, text: str) -> None:
        if label not in self._tasks:  # e.g. "reusing ..." after waiting for another build
            self._console.print(f"{label}: {text}")
            return
        self._progress.update(self._tasks[label], detail=text[-60:])

    def downloaded(self, label: str, count: int, module: str) -> None:
        self._progress.update(self._tasks[label], detail=f"downloaded {count}: {module}"[-60:])

    def total(self, label: str, packages: int) -> None:
        self._totals[label] = packages
        self._progress.update(self._tasks[label], total=packages, completed=0)

    def advance(self, label: str, done: int, current: str) -> None:
        task = self._tasks[label]
        self._progress.update(task, completed=done, detail=current[-60:])

    def finish(self, label: str, ok: bool, text: str) -> None:
        task = self._tasks[label]
        if ok:
            total = self._totals.get(label) or 1
            self._progress.update(task, total=total, completed=total, detail="")
        self._progress.stop_task(task)
        colour = "green" if ok else "red"
        self._console.print(f"[{colour}]{label}[/]: {text}")

    def close(self) -> None:
        if self._live:
            self._progress.stop()
            self._live = False


class QuietReporter:
    """Reports nothing (for callers that only want the result)."""

    def start(self, label: str, note: str) -> None:
        pass

    def step(self, label: str, text: str) -> None:
        pass

    def downloaded(self, label: str, count: int, module: str) -> None:
        pass

    def total(self, label: str, packages: int) -> None:
        pass

    def advance(self, label: str, done: int, current: str) -> None:
        pass

    def finish(self, label: str, ok: bool, text: str) -> None:
        pass

    def close(self) -> None:
        pass


def make_reporter(stream: IO[str] | None = None) -> Reporter:
    """A rich bar when `stream` (default stderr) is a terminal and rich is installed."""
    out = stream if stream is not None else sys.stderr
    if out.isatty():
        try:
            return RichReporter()
        except ImportError:
            pass
    return PlainReporter(out)


class ReporterScope:
    """`with ReporterScope(reporter):` closes the reporter however the block ends."""

    def __init__(self, reporter: Reporter) -> None:
        self.reporter = reporter

    def __enter__(self) -> Reporter:
        return self.reporter

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.reporter.close()
