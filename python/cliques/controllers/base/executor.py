"""The executor: the only code in the controllers that writes to the API server.

It carries out a planner's `Plan` for one owner:
- deletes first (background propagation, UID precondition), in parallel;
- then patches, in parallel (each is resourceVersion-guarded by its planner; a 409 is
  raised after the others finished, so the work queue retries with backoff);
- then creates in slow-start batches (1, 2, 4, … up to `parallelism`), stopping at the
  first batch with a failure, so a quota or admission error costs one request, not 500.
  A delete or patch the API server refused (`refused`: a 4xx other than 409 and 429, a
  write a person must fix) holds only itself: the creates still go, so a pod lost while
  another pod's resize is refused is made again. Any other failure (a conflict, throttling,
  a server error, a timeout) holds the creates until the retry.

Expectations are recorded before a request goes out and withdrawn when it fails; a delete
that answers NotFound is done, and so is a report to an object that moved on
(`Patch.moot_if_stale`: an Eviction's responder status answered NotFound or Invalid).
A create that answers AlreadyExists is checked against the
object that holds the name, as a ReplicaSet claims its pods:
- controlled by the owner already (a stale cache, or a create that raced a restart):
  harmless, counts as observed;
- controlled by an earlier owner of the same kind and name (`_predecessor`): waited for,
  as the garbage collector deletes it or orphans it to be adopted; once a fresh read
  shows that earlier owner gone for good (its name free or held by another UID), it is
  deleted here (UID precondition), as the collector would have, since the collector can
  miss it and would leave the name taken for good;
- gone by the time it is read (a foreign object deleted, an orphan collected): the create
  is sent again at once, since no watch event of an object it does not own would bring
  the owner back;
- controlled by nobody and carrying the identity labels of the body (an orphan, e.g. left
  by `kubectl delete --cascade=orphan` of an earlier owner of the same name): adopted, by a
  resourceVersion-guarded patch that adds the owner as its controller, once a fresh read
  of the owner (not the cache) shows it still exists and is not being deleted: an owner
  deleted with `--cascade=orphan` must not re-adopt the objects the garbage collector just
  orphaned, or they would be collected with it (the ReplicaSet controller's recheck);
- anything else (another controller's object, a foreign object with the name): a
  `NameConflict`, reported as ReplicaFailure with reason NameConflict and a Warning Event;
  the object is left alone.

`write_status` writes a status through the status subresource with a merge patch that
carries the resourceVersion; on 409 it re-reads the object from the API server (not from
the cache), recomputes, and tries again a bounded number of times.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import msgspec

from cliques.api import labels
from cliques.api.meta import ObjectMeta
from cliques.controllers.base.actions import Create, Delete, Patch, Plan
from cliques.kube import errors
from cliques.kube.events import EventRecorder, ObjectRef
from cliques.kube.expectations import Expectations
from cliques.kube.protocol import Client
from cliques.kube.resources import CLIQUES, CLIQUESETS, Resource

log = logging.getLogger(__name__)

T = TypeVar("T")
STATUS_RETRIES = 3
MAX_DETAIL = 1024  # characters of an API error kept in a condition's message


class _Ignore(msgspec.Struct):
    """Decode target for responses the executor does not read."""


#: The kinds that own what the controllers create, by the ownerReference's kind.
_OWNERS = {r.kind: r for r in (CLIQUESETS, CLIQUES)}


class _Holder(msgspec.Struct):
    """Decode target for the object that holds a name a create wanted."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


#: The labels that say which set, gang, clique and index an object stands for: an orphan
#: is adopted only if it carries the same values as the object the owner wants.
IDENTITY_LABELS = (
    labels.LABEL_CLIQUESET,
    labels.LABEL_GANG_INDEX,
    labels.LABEL_CLIQUE,
    labels.LABEL_POD_INDEX,
)
REASON_NAME_CONFLICT = "NameConflict"


class NameConflict(Exception):
    """A create's name is held by an object the owner may not take over."""


class NameInTransition(Exception):
    """A create's name is held by an uncontrolled object that is being deleted: retried
    with backoff until it is gone, never reported as a conflict."""


#: The longest a create blocked by a name conflict waits before it is tried again (s).
NAME_CONFLICT_RETRY = 30.0
#: Creates sent for one name in one reconcile while its holder vanishes between the 409
#: and the read of it; then the create is retried with backoff (`NameInTransition`).
CREATE_RACES = 3


def refused(exc: BaseException) -> bool:
    """The API server refused this one write for a reason a person has to fix (an invalid
    object, a quota, an admission policy or webhook, RBAC): a 4xx other than a conflict
    (409, the cache is stale) or throttling (429). Such a refusal holds only its own write."""
    return (
        isinstance(exc, errors.ApiError)
        and 400 <= exc.status < 500
        and exc.status not in (409, 429)
    )


class ExecutionError(errors.ReconcileFailure):
    """Some writes of a plan failed; the reconcile is retried with backoff.

    `reason` names the kind of write that failed first, as a ReplicaSet's ReplicaFailure
    condition does (FailedCreate, FailedDelete, FailedUpdate); `first` is its error.
    """

    def __init__(self, message: str, *, reason: str, first: BaseException) -> None:
        super().__init__(message)
        self.reason = reason
        self.first = first

    @property
    def reportable(self) -> bool:
        """The API server refused the write for a reason a person has to fix (an invalid
        pod, a quota, an admission webhook, RBAC): worth a condition in status. Conflicts,
        throttling, server errors and timeouts are retried without one."""
        return isinstance(self.first, NameConflict) or refused(self.first)

    @property
    def retry_within(self) -> float | None:
        """The longest wait before a retry, if shorter than the work queue's backoff: a
        name held by someone else is freed by a person, whose object the operator does
        not watch, so it is looked at again at least every `NAME_CONFLICT_RETRY` s."""
        return NAME_CONFLICT_RETRY if isinstance(self.first, NameConflict) else None

    @property
    def signature(self) -> str:
        """The kind of write and of error that failed first (a refusal that repeats with
        another resourceVersion or count in its message is the same failure)."""
        first = self.first
        status = f" {first.status}" if isinstance(first, errors.ApiError) else ""
        return f"{self.reason} {type(first).__name__}{status}"

    @property
    def detail(self) -> str:
        """The API server's own message (or the error), for a condition's message."""
        first = self.first
        text = first.message if isinstance(first, errors.ApiError) and first.message else str(first)
        return text[:MAX_DETAIL]


class Executor:
    def __init__(
        self,
        client: Client,
        expectations: Expectations,
        recorder: EventRecorder | None,
        *,
        parallelism: int = 32,
        written: Callable[[Resource, bytes], None] | None = None,
    ) -> None:
        self.written = written  # write-through of updated objects into the caches
        self.client = client
        self.expectations = expectations
        self.recorder = recorder
        self.parallelism = max(1, parallelism)

    async def execute(self, plan: Plan, ref: ObjectRef) -> None:
        """Run every write of `plan` for the owner `ref` (events recorded too)."""
        ns = ref.namespace
        failures: list[BaseException] = []
        reasons: list[str] = []  # the kind of write of each failure, in order
        if self.recorder is not None:
            for ev in plan.events:
                self.recorder.record(ref, ev.type, ev.reason, ev.message)

        if plan.deletes:
            self.expectations.expect_deletes(ref.uid, [d.name for d in plan.deletes])
            results = await self._bounded([self._delete(ns, d) for d in plan.deletes])
            failures.extend(r for r in results if isinstance(r, BaseException))
            reasons += ["FailedDelete"] * (len(failures) - len(reasons))

        if plan.patches:
            tokens = [p.expect for p in plan.patches if p.expect]
            if tokens:
                self.expectations.expect_creates(ref.uid, tokens)
            results = await self._bounded([self._patch(ns, p) for p in plan.patches])
            for action, result in zip(plan.patches, results, strict=True):
                if action.expect and isinstance(result, BaseException):
                    self.expectations.created(ref.uid, action.expect)
            failures.extend(r for r in results if isinstance(r, BaseException))
            reasons += ["FailedUpdate"] * (len(failures) - len(reasons))

        if plan.creates and all(refused(f) for f in failures):
            failed = await self._slow_start(ns, plan.creates, ref)
            failures.extend(failed)
            reasons += [
                REASON_NAME_CONFLICT if isinstance(f, NameConflict) else "FailedCreate"
                for f in failed
            ]

        if failures:
            conflicts = [f for f in failures if isinstance(f, errors.Conflict)]
            if conflicts and len(conflicts) == len(failures):
                raise conflicts[0]
            first = failures[0]
            if self.recorder is not None and not isinstance(first, errors.Conflict):
                why = REASON_NAME_CONFLICT if isinstance(first, NameConflict) else "WriteFailed"
                self.recorder.record(ref, "Warning", why, str(first))
            raise ExecutionError(
                f"{len(failures)} write(s) failed for {ns}/{ref.name}: {first}",
                reason=reasons[0],
                first=first,
            ) from first

    async def _bounded(self, coros: list[Awaitable[None]]) -> list[BaseException | None]:
        sem = asyncio.Semaphore(self.parallelism)

        async def one(coro: Awaitable[None]) -> None:
            async with sem:
                await coro

        return list(await asyncio.gather(*(one(c) for c in coros), return_exceptions=True))

    async def _slow_start(
        self, ns: str, creates: list[Create], ref: ObjectRef
    ) -> list[BaseException]:
        batch = 1
        pos = 0
        while pos < len(creates):
            chunk = creates[pos : pos + batch]
            pos += len(chunk)
            self.expectations.expect_creates(ref.uid, [c.name for c in chunk])
            results = await asyncio.gather(
                *(self._create(ns, c) for c in chunk), return_exceptions=True
            )
            failed = [r for r in results if isinstance(r, BaseException)]
            if failed:
                # Withdraw the expectations of everything not sent.
                for rest in creates[pos:]:
                    self.expectations.created(rest.owner_uid, rest.name)
                return failed
            batch = min(batch * 2, self.parallelism)
        return []

    async def _create(self, ns: str, action: Create) -> None:
        for _ in range(CREATE_RACES):
            try:
                await self.client.create(action.resource, ns, action.body, _Ignore)
                return
            except errors.AlreadyExists:
                try:
                    if await self._claim(ns, action):
                        self.expectations.created(action.owner_uid, action.name)
                        return
                except BaseException:
                    self.expectations.created(action.owner_uid, action.name)
                    raise
            except BaseException:
                self.expectations.created(action.owner_uid, action.name)
                raise
        # The name keeps changing hands between the create and the read: try again later.
        self.expectations.created(action.owner_uid, action.name)
        raise NameInTransition(
            f"{action.resource.kind} {ns}/{action.name} was taken and freed again "
            f"{CREATE_RACES} times in a row; waiting"
        )

    async def _claim(self, ns: str, action: Create) -> bool:
        """The name of `action` is taken: ours already, an orphan to adopt, or a conflict.

        False when the holder is gone by the time it is read (a foreign object deleted, an
        orphan collected): the create is then sent again at once. Nothing else would bring
        it back, since an object the operator does not own is outside its watches.
        """
        kind = action.resource.kind
        try:
            holder = await self.client.get(action.resource, ns, action.name, _Holder)
        except errors.NotFound:
            return False
        meta = holder.metadata
        controller = meta.controller_ref()
        if controller is not None and controller.uid == action.owner_uid:
            log.debug("create %s %s/%s: already exists", kind, ns, action.name)
            return True
        want = action.body.get("metadata", {})
        mismatched = [
            key
            for key in IDENTITY_LABELS
            if key in want.get("labels", {}) and meta.labels.get(key) != want["labels"][key]
        ]
        ours = [r for r in want.get("ownerReferences", []) if r.get("controller")]
        if (
            controller is not None
            and ours
            and not mismatched
            and (controller.kind, controller.name) == (ours[0].get("kind"), ours[0].get("name"))
        ):
            gone = meta.deletion_timestamp is None and await self._owner_gone(
                ns, ours[0], controller.uid
            )
            if gone and not await self._collect(ns, action, meta.uid, controller.uid):
                return False  # gone already: the create is sent again at once
            raise _predecessor(ns, action, controller.uid, ours[0])
        if controller is None and not mismatched and ours and meta.deletion_timestamp is None:
            if not await self._may_adopt(ns, ours[0]):
                log.info(
                    "not adopting %s %s/%s: its owner %s %s is gone or being deleted",
                    kind,
                    ns,
                    action.name,
                    ours[0].get("kind"),
                    ours[0].get("name"),
                )
                return True
            refs = [msgspec.to_builtins(r) for r in meta.owner_references] + ours
            patch = {
                "metadata": {"resourceVersion": meta.resource_version, "ownerReferences": refs}
            }
            await self.client.patch(action.resource, ns, action.name, patch, _Ignore)
            log.info("adopted the orphaned %s %s/%s", kind, ns, action.name)
            return True
        if controller is None and meta.deletion_timestamp is not None:
            raise NameInTransition(f"{kind} {ns}/{action.name} is being deleted; waiting for it")
        if controller is not None:
            whose = f"is controlled by {controller.kind} {controller.name} (uid {controller.uid})"
        else:
            whose = (
                "is not controlled by any owner and its labels "
                + ", ".join(f"{k}={meta.labels.get(k, '(unset)')}" for k in mismatched)
                + " do not match"
            )
        raise NameConflict(
            f"{kind} {ns}/{action.name} already exists and {whose}: the name is needed for "
            f"this object; rename or delete the other one"
        )

    async def _owner_gone(self, ns: str, ref: dict[str, Any], uid: str) -> bool:
        """Whether the owner `uid`, of the kind and name of `ref`, is gone for good: the name
        is free or holds another UID, read from the API server. An owner deleted with
        propagation Orphan stays (with its finalizer) until the garbage collector has
        orphaned every dependent it knows, so a dependent still naming it once it is gone
        is one the collector will delete, never orphan."""
        known, owner = await self._read_owner(ns, ref)
        return known and (owner is None or owner.uid != uid)

    async def _collect(self, ns: str, action: Create, holder: str, owner: str) -> bool:
        """Delete the object (UID `holder`) that holds `action`'s name for an owner `owner`
        that is gone, as the garbage collector would: it may not (its graph can miss a
        delete while the API server restarts), and the name would stay taken for good.
        Whether it was deleted (False: it was gone already); the create then waits for it
        to go, as for any predecessor."""
        kind = action.resource.kind
        try:
            await self.client.delete(action.resource, ns, action.name, uid=holder)
        except (errors.NotFound, errors.Conflict):
            return False  # gone already, or another object holds the name now
        log.info(
            "deleted %s %s/%s: its owner (uid %s) is gone and the garbage collector had not "
            "collected it",
            kind,
            ns,
            action.name,
            owner,
        )
        return True

    async def _may_adopt(self, ns: str, ref: dict[str, Any]) -> bool:
        """Whether the owner named by `ref` exists with its UID and is not being deleted,
        read from the API server, not the cache."""
        known, owner = await self._read_owner(ns, ref)
        if not known:
            return True
        if owner is None:
            return False
        return owner.uid == ref.get("uid") and owner.deletion_timestamp is None

    async def _read_owner(self, ns: str, ref: dict[str, Any]) -> tuple[bool, ObjectMeta | None]:
        """The owner named by the owner reference `ref` (its kind and name), read from the
        API server: (whether its kind is one this operator owns with, its metadata or None
        when the name is free)."""
        resource = _OWNERS.get(str(ref.get("kind")))
        if resource is None:
            return False, None
        try:
            owner = await self.client.get(resource, ns, str(ref.get("name")), _Holder)
        except errors.NotFound:
            return True, None
        return True, owner.metadata

    async def _delete(self, ns: str, action: Delete) -> None:
        try:
            await self.client.delete(action.resource, ns, action.name, uid=action.uid)
        except (errors.NotFound, errors.Conflict):
            # Gone already, or the name now belongs to a successor: nothing to delete.
            self.expectations.deleted(action.owner_uid, action.name)
        except BaseException:
            self.expectations.deleted(action.owner_uid, action.name)
            raise

    async def _patch(self, ns: str, action: Patch) -> None:
        try:
            raw = await self.client.patch(
                action.resource,
                ns,
                action.name,
                action.patch,
                msgspec.Raw,
                patch_type=action.patch_type,
                sub=action.sub,
            )
        except (errors.NotFound, errors.Invalid) as exc:
            if not action.moot_if_stale:
                raise
            log.info(
                "%s %s/%s moved on, not patched: %s", action.resource.kind, ns, action.name, exc
            )
            return
        if self.written is not None:
            self.written(action.resource, bytes(raw))

    async def write_status(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        resource_version: str,
        status: Any,
        *,
        recompute: Callable[[bytes], Awaitable[tuple[str, Any] | None]],
    ) -> None:
        """Write `status` guarded by `resource_version`; on 409 re-read and recompute.

        `recompute(fresh_object_bytes)` returns (resourceVersion, status) to write, or None
        when nothing needs writing any more.
        """
        rv, body = resource_version, status
        for attempt in range(STATUS_RETRIES + 1):
            patch = {"metadata": {"resourceVersion": rv}, "status": body}
            try:
                raw = await self.client.patch(
                    resource, namespace, name, patch, msgspec.Raw, patch_type="merge", sub="status"
                )
                if self.written is not None:
                    self.written(resource, bytes(raw))
                return
            except errors.NotFound:
                return
            except errors.Conflict:
                if attempt == STATUS_RETRIES:
                    raise
                fresh = await self.client.request("get", resource, namespace=namespace, name=name)
                again = await recompute(fresh)
                if again is None:
                    return
                rv, body = again


def _predecessor(
    ns: str, action: Create, holder_owner: str, ref: dict[str, Any]
) -> NameInTransition:
    """The error for a name held by an object controlled by one of the owner's kind and name
    with another UID: an earlier owner of that name (deleted, and made again before the
    garbage collector deleted or released what it owned) or, if this view is stale, a
    later one. Either way it is not a conflict a person must resolve: the garbage
    collector deletes the holder, or orphans it (an owner deleted with the Orphan
    policy) and it is adopted then; the create is retried with backoff meanwhile. The
    operator deletes it itself only once that owner is gone for good (`_owner_gone`):
    an owner deleted with the Orphan policy outlives the orphaning of its dependents, so
    a dependent still naming it then was one the collector would delete."""
    kind = action.resource.kind
    log.debug(
        "create %s %s/%s: held by the %s of %s %s (uid %s), another of its name",
        kind,
        ns,
        action.name,
        kind,
        ref.get("kind"),
        ref.get("name"),
        holder_owner,
    )
    return NameInTransition(
        f"{kind} {ns}/{action.name} belongs to another {ref.get('kind')} named "
        f"{ref.get('name')} (uid {holder_owner}); waiting for the garbage collector"
    )
