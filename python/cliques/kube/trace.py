"""The reconcile a task runs, for its log lines (no other import: the log setup reads it
before anything else of the operator is imported).

`current` holds (controller, object key, reconcile id) while a `runner.Runner` reconcile
runs; every line logged meanwhile, by any module, can be traced to it (`--log-format json`
adds the three as fields, `operator.logs`).
"""

from __future__ import annotations

import contextvars
import itertools

current: contextvars.ContextVar[tuple[str, str, int] | None] = contextvars.ContextVar(
    "reconcile", default=None
)
_ids = itertools.count(1)


def next_id() -> int:
    """A new reconcile id (unique in the process)."""
    return next(_ids)
