"""The actions a planner asks for. Plain data: the executor is the only code that sends them.

`owner_uid` ties a create or delete to the expectations of the object that wants it, so the
controller does not act again for that owner until the watch shows the result.

A plan asks for at most `CREATE_BURST` creates, as the ReplicaSet controller creates at most
500 pods per sync: the rest come in the next passes, each started by the watch events of
the creates before it. One object's plan then holds the event loop for a bounded time
however many gangs or pods it asks for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from cliques.kube.resources import Resource

#: The most creates one plan asks for (bodies are built only for these).
CREATE_BURST: Final = 100


@dataclass(frozen=True, slots=True)
class Create:
    resource: Resource
    name: str
    body: dict[str, Any]
    owner_uid: str


@dataclass(frozen=True, slots=True)
class Delete:
    resource: Resource
    name: str
    uid: str  # precondition: never delete a same-named successor
    owner_uid: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Patch:
    resource: Resource
    name: str
    patch: Any
    patch_type: Literal["merge", "json", "strategic"] = "merge"
    reason: str = ""
    #: An expectation token (`name@hash`) that the watch must show before the owner's next
    #: rollout decision; empty when the patch needs no expectation.
    expect: str = ""
    owner_uid: str = ""
    #: A subresource to patch (`resize`, `status`), "" for the object itself.
    sub: str = ""
    #: The owner's status does not depend on this write (a pod's gang readiness condition,
    #: `gang_ready`): the status is written in the same reconcile (`Plan.awaited_writes`).
    status_neutral: bool = False
    #: A report to an object that may have moved on (an Eviction's responder status,
    #: `eviction_requests`): NotFound (it is gone) or Invalid (it no longer takes this
    #: write, say its responder is no longer the active one) means done, not a failure.
    moot_if_stale: bool = False


def pointer_key(key: str) -> str:
    """`key` as one segment of a JSON pointer (RFC 6901), for a JSON patch `path`: a label
    or annotation key such as `cliques.dev/template-hash`."""
    return key.replace("~", "~0").replace("/", "~1")


@dataclass(frozen=True, slots=True)
class Event:
    type: Literal["Normal", "Warning"]
    reason: str
    message: str


@dataclass
class Plan:
    """What one reconcile wants done, in order: deletes, patches, creates; then status."""

    creates: list[Create] = field(default_factory=list)
    deletes: list[Delete] = field(default_factory=list)
    patches: list[Patch] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    status: Any = None  # the new status Struct, or None when it did not change
    requeue_after: float = 0.0

    @property
    def writes(self) -> int:
        return len(self.creates) + len(self.deletes) + len(self.patches)

    @property
    def awaited_writes(self) -> int:
        """The writes whose outcome the owner's status waits to see (`plan_runner`): all but
        the status-neutral patches."""
        return self.writes - sum(1 for p in self.patches if p.status_neutral)
