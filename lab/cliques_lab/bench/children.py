"""The local processes a benchmark starts (an operator, a peer): a free loopback port for
one, and stopping one with everything it started.

Each child runs in a session of its own (`start_new_session=True`), so its process group is
it and its children (an operator's supervisor and workers); `stop` sends that group SIGTERM,
waits up to `grace` seconds for a clean drain, then SIGKILLs whatever is left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop(proc: subprocess.Popen[bytes], grace: float) -> None:
    """Stop `proc`'s process group: SIGTERM, then SIGKILL after `grace` seconds."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
