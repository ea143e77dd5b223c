"""The exit codes of `kubectl cliques`, one per kind of outcome, and the failure that
carries one.

    0  done (`diff`: the two sides mean the same)
    1  `diff` only: they differ (as `kubectl diff` and `cliques hash --diff`)
    2  a usage error (argparse's)
    3  the cluster cannot be used: no or a bad kubeconfig, the API server unreachable, a
       timeout, a 5xx answer (`cliques operator` also exits 3 on a configuration it cannot
       use)
    4  not found: no such CliqueSet (or the CRDs are not installed), no such revision
    5  no permission: the API server refused the credentials (401) or the request (403)
    6  `rollout undo` only: the set was changed between the undo's read and its write;
       nothing was written (try again)
"""

from __future__ import annotations

from typing import Final

OK: Final = 0
DIFFERENT: Final = 1
USAGE: Final = 2
CLUSTER: Final = 3
NOT_FOUND: Final = 4
FORBIDDEN: Final = 5
CONFLICT: Final = 6


class Failure(Exception):
    """What ends a command early: its exit code and a one-line message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = " ".join(message.split())
