"""`cliques start-gate`: what the start gate's init container runs in a gang's pod.

    cliques start-gate --file /etc/cliques/start-gate/state [--poll S] [--timeout S]

It waits until the file reads `open`, then exits 0 and the pod's own containers start. The
file is a downward API projection of the pod's `cliques.dev/start-gate` annotation, which
the operator sets to `open` once the Cliques this pod starts after are Ready
(`controllers.start_gate`); the kubelet rewrites it when the annotation changes. The
command reads a file and nothing else: no API access, no token, no network. It says what
it waits for when it starts and again every minute, so `kubectl logs -c
cliques-start-gate` tells why a pod has not started.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cliques import argtypes

OPEN = "open"
#: How often a waiting gate says it still waits, in seconds.
REMIND_EVERY = 60.0


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "start-gate",
        help="wait until a pod's start gate opens (the init container of gated pods)",
        description="Wait until FILE reads 'open', then exit 0. Run by the init container "
        "the operator adds to the pods of a clique that starts after others when its gang "
        "is scheduled as one; FILE shows the pod's cliques.dev/start-gate annotation.",
    )
    p.add_argument("--file", type=Path, required=True, help="the gate's state file")
    p.add_argument(
        "--poll",
        type=argtypes.seconds(),
        default=0.5,
        help="seconds between two reads of FILE (default 0.5)",
    )
    p.add_argument(
        "--timeout",
        type=argtypes.seconds(zero=True),
        default=0.0,
        help="give up (exit 1) after this many seconds (default 0: wait for ever; the "
        "kubelet restarts a failed init container anyway)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return wait(args.file, poll=args.poll, timeout=args.timeout)


def read_state(path: Path) -> str:
    """The gate's state: the file's content, "" while it is missing or unreadable."""
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def wait(
    path: Path,
    *,
    poll: float = 0.5,
    timeout: float = 0.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    say: Callable[[str], None] = lambda line: print(line, flush=True),
) -> int:
    """Wait until `path` reads `open` (exit code 0), or `timeout` seconds (1; 0 = never)."""
    started = clock()
    reminded = started
    after = read_state(path.parent / "starts-after") or "the cliques it starts after"
    state = read_state(path)
    if state != OPEN:
        say(f"start gate {state or 'not set'}: waiting for {after} to be Ready")
    while state != OPEN:
        now = clock()
        if timeout and now - started >= timeout:
            say(f"start gate still {state or 'not set'} after {now - started:.0f}s: giving up")
            return 1
        if now - reminded >= REMIND_EVERY:
            say(f"still waiting for {after} to be Ready ({now - started:.0f}s)")
            reminded = now
        sleep(poll)
        state = read_state(path)
    say(f"start gate open after {clock() - started:.1f}s")
    return 0
