"""Write failures a controller reports in status until its writes succeed again.

When the API server refuses a plan's writes for a reason a person has to fix (an invalid
pod template, an exhausted quota, an admission webhook, RBAC), the owner gets the condition
`ReplicaFailure` (reason FailedCreate, FailedDelete or FailedUpdate, message the API
server's), as a ReplicaSet does; the reconcile is retried with backoff meanwhile. A
failure belongs to the owner's generation: a new spec starts clean, and the first plan
whose writes succeed removes it. Kept in memory: after a restart the next failed write
reports it again.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cliques.api.meta import CONDITION_REPLICA_FAILURE, Condition
from cliques.controllers.base import conditions
from cliques.kube import errors

if TYPE_CHECKING:  # the planners import this module; the executor's client need not load
    from cliques.controllers.base.executor import ExecutionError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Failure:
    reason: str
    message: str


class FailureMemo:
    """The current write failure of each owner (by key), for the generation it hit."""

    def __init__(self) -> None:
        self._by_key: dict[str, tuple[int, Failure]] = {}

    def current(self, key: str, generation: int) -> Failure | None:
        held = self._by_key.get(key)
        return held[1] if held is not None and held[0] == generation else None

    def record(self, key: str, generation: int, failure: Failure) -> bool:
        """Remember `failure` of `key` at `generation`; whether the reported one changed."""
        if self.current(key, generation) == failure:
            return False
        self._by_key[key] = (generation, failure)
        return True

    def clear(self, key: str) -> None:
        self._by_key.pop(key, None)

    async def report(
        self,
        key: str,
        generation: int,
        exc: ExecutionError,
        publish: Callable[[], Awaitable[None]],
    ) -> None:
        """Remember a refusal a person must fix and `publish` the owner's status with it,
        at once and once per distinct failure (the reconcile is retried with backoff
        meanwhile). A status write that fails is logged; the retry reports it again."""
        if not exc.reportable:
            return
        if not self.record(key, generation, Failure(exc.reason, exc.detail)):
            return
        try:
            await publish()
        except errors.API_FAILURES as write_exc:
            self.clear(key)
            log.warning("%s: could not report the failure in status: %s", key, write_exc)


def condition(conds: conditions.Setter, failure: Failure | None) -> list[Condition]:
    """[] without a failure, else the ReplicaFailure condition (its transition time kept
    while it stays True)."""
    if failure is None:
        return []
    return [conds.set(CONDITION_REPLICA_FAILURE, "True", failure.reason, failure.message)]
