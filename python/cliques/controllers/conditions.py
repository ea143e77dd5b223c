"""Building condition lists that only change when something changed (pure).

A condition keeps its `lastTransitionTime` while its status stays the same, so that two
reconciles over the same state produce equal status objects and no write is sent. A planner
builds the conditions of one new status through one `Setter` (the old conditions, the time,
the generation observed).
"""

from __future__ import annotations

from dataclasses import dataclass

from cliques.api.meta import Condition, ConditionStatus, find_condition


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
    since = prev.last_transition_time if prev is not None and prev.status == status else now
    return Condition(
        type=type_,
        status=status,
        reason=reason,
        message=message,
        last_transition_time=since,
        observed_generation=generation,
    )
