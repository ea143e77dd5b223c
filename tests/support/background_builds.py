"""The one-off Go builds a test session needs, run beside the tests instead of before them.

On a machine that has not built them yet, the dev cluster's binaries (Kubernetes, etcd,
KWOK), helm and the add-ons (Kueue, metrics-server) are half an hour of Go builds on two
cores. Built one after the other before the first test, that half hour adds to the whole
suite's. Here they run in a thread of their own, each step a process (`cliques dev-cluster
build`), while the tests that need none of them run:

- the session's tests are reordered (stably) by the last pending step they need: those
  that need none first (the unit tests, while the cluster's binaries build), then the
  cluster's tests (while helm and the add-ons build, niced, so that they take the CPU the
  tests leave), then helm's, then the add-ons';
- before a test that needs a step starts, `wait` blocks until that step is done (outside
  the test, so pytest-timeout's per-test limit never counts the build) and hands back why
  it failed, if it did; the fixtures then fail the test with that reason, as before.

Nothing is built and no test moves when nothing is missing. Each step's output goes
to a log file under the session's base temp directory, named in the failure and in the
progress lines on stderr.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO, TypeVar

T = TypeVar("T")

#: The steps, in the order they build: what the cluster's tests need first.
CLUSTER = "cluster"
HELM = "helm"
ADDONS = "add-ons"
ORDER = (CLUSTER, HELM, ADDONS)
#: Niceness of the steps that build while the cluster's tests run.
BESIDE_TESTS_NICE = 19
LOG_TAIL_LINES = 40


@dataclass
class Step:
    """One build step: its command (without the `nice`) and its outcome."""

    name: str
    argv: list[str]
    nice: int
    log: Path
    done: threading.Event = field(default_factory=threading.Event)
    error: str | None = None
    seconds: float = 0.0


def dev_cluster_build(*args: str) -> list[str]:
    """The command `cliques dev-cluster build ARGS` (which builds the cluster's binaries
    first, then what ARGS add)."""
    return [sys.executable, "-m", "cliques", "dev-cluster", "build", *args]


#: helm alone (`dev-cluster build --helm` would build the cluster's binaries first, which an
#: external cluster's tests do not need).
HELM_ONLY = (
    "import sys; from cliques_lab.devcluster import build, gomodules, progress; "
    "print(build.ensure_tool(gomodules.HELM, progress.PlainReporter(sys.stdout)).binary('helm'))"
)


def build_argv(step: Step) -> list[str]:
    """The command line of `step`, niced where asked."""
    nice = shutil.which("nice")
    if step.nice and nice is not None:
        return [nice, "-n", str(step.nice), *step.argv]
    return list(step.argv)


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class Builds:
    """The steps of one session, run in order by one thread (`start`); `wait` for one."""

    def __init__(
        self,
        steps: Sequence[Step],
        stream: TextIO,
        run: Callable[[Step], int] | None = None,
    ) -> None:
        self.steps = {s.name: s for s in steps}
        self.stream = stream
        self._run = run if run is not None else self._subprocess
        self._thread: threading.Thread | None = None

    def _subprocess(self, step: Step) -> int:
        step.log.parent.mkdir(parents=True, exist_ok=True)
        with step.log.open("w") as out:
            return subprocess.run(
                build_argv(step), stdout=out, stderr=subprocess.STDOUT, check=False
            ).returncode

    def _say(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def _work(self) -> None:
        failed: Step | None = None
        for name in ORDER:
            step = self.steps.get(name)
            if step is None:
                continue
            if failed is not None and failed.name == CLUSTER:
                # Every later step builds the cluster's binaries first: it would fail alike.
                step.error = f"not built: the {CLUSTER} build failed first ({failed.error})"
                step.done.set()
                continue
            started = time.monotonic()
            try:
                code = self._run(step)
            except OSError as exc:
                code, step.error = -1, f"could not run the build: {exc}"
            step.seconds = time.monotonic() - started
            if code != 0 and step.error is None:
                step.error = (
                    f"`{shlex.join(step.argv)}` exited {code} (log: {step.log}):\n{_tail(step.log)}"
                )
            outcome = "failed" if step.error else "done"
            failed = step if step.error else failed
            self._say(f"\n[builds] {name}: {outcome} after {step.seconds:.0f} s (log: {step.log})")
            step.done.set()

    def start(self) -> None:
        """Start the steps, in `ORDER`, in a daemon thread (a session that ends early
        leaves the build to finish or die with the process)."""
        if not self.steps:
            return
        names = ", ".join(n for n in ORDER if n in self.steps)
        self._say(f"\n[builds] building beside the tests (once per machine): {names}")
        self._thread = threading.Thread(target=self._work, name="cliques-builds", daemon=True)
        self._thread.start()

    def pending(self, name: str) -> bool:
        """Whether step `name` is part of this session and not done yet."""
        step = self.steps.get(name)
        return step is not None and not step.done.is_set()

    def wait(self, names: Iterable[str]) -> dict[str, str]:
        """Block until each of `names` (those this session builds) is done; the errors of
        those that failed, by step."""
        errors: dict[str, str] = {}
        for name in names:
            step = self.steps.get(name)
            if step is None:
                continue
            if not step.done.is_set():
                self._say(f"\n[builds] the next test needs {name}: waiting for its build")
                step.done.wait()
            if step.error is not None:
                errors[name] = step.error
        return errors


def reorder(items: list[T], needs: Callable[[T], set[str]], pending: set[str]) -> None:
    """Stably reorder `items` in place so that a test waits for as little as can be: first
    those that need none of the `pending` steps, then by the latest of them (in `ORDER`)
    they need."""
    rank = {name: i + 1 for i, name in enumerate(ORDER)}

    def key(item: T) -> int:
        return max((rank[n] for n in needs(item) & pending), default=0)

    items.sort(key=key)
