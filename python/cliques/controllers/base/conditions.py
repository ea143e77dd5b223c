"""Building condition lists that only change when something changed (pure).

A condition keeps its `lastTransitionTime` while its status stays the same, so that two
reconciles over the same state produce equal status objects and no write is sent. A planner
builds the conditions of one new status through one `Setter` (the old conditions, the time,
the generation observed).

Every condition the operator writes is made here, so this is where its message is bounded
(`bound_message`): a message can quote a user's value (an invalid pod template's, an API
server's refusal), which has no bound of its own, and the CRDs allow 32,768 characters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from cliques.api.meta import Condition, ConditionStatus, find_condition

#: The longest condition message the operator writes (docs/operator.md#limits).
MAX_MESSAGE: Final = 1024


def bound_message(message: str, limit: int = MAX_MESSAGE) -> str:
    """`message` if it has at most `limit` characters, else its beginning with the mark
    `… (N characters cut)`, `limit` characters in all. Messages start with what they are
    about (a template error with the JSON path of the offending value: `spec.containers[0]
    .image: ...`), so the cut falls in the value they quote, not in the path."""
    if len(message) <= limit:
        return message
    cut = len(message) - limit
    while True:
        mark = f"… ({cut:,} characters cut)"
        keep = max(limit - len(mark), 0)
        if len(message) - keep == cut:
            return message[:keep] + mark
        cut = len(message) - keep


@dataclass(frozen=True, slots=True)
class Setter:
    """The conditions of one new status: `set` merges one into `old`, at `now`, for
    `generation`."""

    old: list[Condition]
    now: str
    generation: int

    def set(self, type_: str, status: ConditionStatus, reason: str, message: str) -> Condition:
        return merge(
            self.old, type_, status, reason, message, now=self.now, generation=self.generation
        )


def merge(
    old: list[Condition],
    type_: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    *,
    now: str,
    generation: int,
) -> Condition:
    prev = find_condition(old, type_)
    message = bound_message(message)
    since = prev.last_transition_time if prev is not None and prev.status == status else now
    return Condition(
        type=type_,
        status=status,
        reason=reason,
        message=message,
        last_transition_time=since,
        observed_generation=generation,
    )
