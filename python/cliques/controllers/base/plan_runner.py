"""The end of every reconcile: carry out a plan for its owner and publish its status.

Both controllers end a reconcile the same way, here:
1. log what the plan writes, and let the executor carry it out (events included);
2. when the API server refuses the writes for a reason a person has to fix, remember the
   failure and publish the owner's status with its ReplicaFailure condition at once
   (`failures`), then raise so the work queue retries with backoff; the first plan whose
   writes succeed clears it;
3. write the status the plan computed, unless the plan wrote: that status is left to the
   reconcile the watch events of those writes bring, which sees their outcome (this one
   would only publish a state already on its way out, and cost a request). A controller
   may hold a status back (`Hold`: the Clique controller's progress-only statuses);
4. ask to be called again after the expectations' TTL while creates or deletes are unseen.

A status write that meets a conflict re-reads the owner from the API server and plans
again (`replan`); the executor stays the only code that writes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

import msgspec

from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.controllers.base import failures
from cliques.controllers.base.actions import Plan
from cliques.controllers.base.executor import ExecutionError, Executor
from cliques.kube.events import ObjectRef
from cliques.kube.expectations import Expectations
from cliques.kube.objects import key_of, split_key
from cliques.kube.resources import Resource
from cliques.kube.runner import Result

log = logging.getLogger(__name__)

#: The kinds of owner a plan is made for.
Owner = TypeVar("Owner", Clique, CliqueSet)
_ENCODE_STATUS = msgspec.to_builtins


class Hold(Protocol):
    """A controller's say in when a status is written."""

    def hold(self, key: str, old: Any, new: Any) -> bool:
        """Whether to hold back the status `new` of the owner `key` (now `old`)."""
        ...

    def release(self, key: str) -> None:
        """The owner `key` has no status to hold back any more (written, or none due)."""
        ...


class _NoHold:
    def hold(self, key: str, old: Any, new: Any) -> bool:
        return False

    def release(self, key: str) -> None:
        pass


def ref_of(owner: Clique | CliqueSet) -> ObjectRef:
    """The owner as Events name it."""
    m = owner.metadata
    return ObjectRef(owner.api_version, owner.kind, m.namespace, m.name, m.uid)


class PlanRunner(Generic[Owner]):
    """Carries out the plans of one controller (`name`) for owners of `resource`."""

    def __init__(
        self,
        name: str,
        resource: Resource,
        owner_type: type[Owner],
        executor: Executor,
        expectations: Expectations,
        replan: Callable[[Owner], Plan],
        *,
        hold: Hold | None = None,
    ) -> None:
        self.name = name
        self.resource = resource
        self.executor = executor
        self.expectations = expectations
        self.replan: Callable[[Owner], Plan] = replan
        self.hold: Hold = hold if hold is not None else _NoHold()
        self._decode: Callable[[bytes], Owner] = msgspec.json.Decoder(owner_type).decode
        #: owners whose writes the API server refuses (their ReplicaFailure condition)
        self.failures = failures.FailureMemo()

    async def run(
        self, key: str, owner: Owner, plan: Plan, *, expectations_satisfied: bool
    ) -> Result:
        """Carry out `plan`, made for `owner` (at `key`), and publish its status."""
        if plan.writes or plan.events:
            log.info(
                "%s: %d create(s), %d delete(s), %d patch(es)",
                key,
                len(plan.creates),
                len(plan.deletes),
                len(plan.patches),
                extra={"key": key, "controller": self.name},
            )
        try:
            await self.executor.execute(plan, ref_of(owner))
        except ExecutionError as exc:
            gen = owner.metadata.generation
            await self.failures.report(key, gen, exc, lambda: self.publish(key, owner))
            raise
        if plan.awaited_writes:
            # The status is left to the reconcile that the watch events of these writes
            # bring (or the hold's timer they armed): that one sees their outcome. (A plan
            # whose only writes are status-neutral, pods' gang readiness conditions, has no
            # outcome to wait for.)
            self.failures.clear(key)
        elif plan.status is None:
            self.hold.release(key)
        elif not self.hold.hold(key, owner.status, plan.status):
            await self.write_status(owner, plan.status)
        # Look again when the plan asks (a back-off or a gang restart falls due then) or
        # when unconfirmed writes would expire, whichever comes first: never sleep.
        after = [
            t
            for t in (
                plan.requeue_after,
                0.0 if expectations_satisfied else self.expectations.ttl + 1,
            )
            if t > 0
        ]
        return Result(requeue_after=min(after)) if after else Result()

    async def publish(self, key: str, owner: Owner) -> None:
        """Write the owner's status now (with a newly recorded failure), past any hold."""
        status = self.replan(owner).status
        if status is not None:
            self.hold.release(key)
            await self.write_status(owner, status)

    async def write_status(self, owner: Owner, status: Any) -> None:
        ns, name = split_key(key_of(owner))

        async def recompute(raw: bytes) -> tuple[str, Any] | None:
            fresh = self._decode(raw)
            if fresh.metadata.uid != owner.metadata.uid:
                return None
            again = self.replan(fresh).status
            if again is None:
                return None
            return fresh.metadata.resource_version, _ENCODE_STATUS(again)

        await self.executor.write_status(
            self.resource,
            ns or "",
            name,
            owner.metadata.resource_version,
            _ENCODE_STATUS(status),
            recompute=recompute,
        )
