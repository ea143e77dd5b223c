"""Who holds which shard: the `coordination.k8s.io` Lease protocol between operator processes.

The 256 buckets are grouped into `shards` shards. Every operator process taking part is a
*member*: it renews a member Lease (`cliques-member-<identity>`), and the live members are
those whose member Lease is fresh. Each shard has a Lease (`cliques-shard-<i>`) that at most
one member holds. Every `retry_period` a member runs one pass, bounded by `renew_deadline`:

1. renews its member Lease and the shard Leases it holds (a resourceVersion-guarded update:
   if someone else changed it, the shard is lost and its controllers are stopped at once);
2. hands back shards beyond its fair share (`ceil(shards / live members)`, e.g. a member
   joined): their controllers drain in the background while the lease is still renewed,
   and only then is the lease released;
3. acquires free shards up to its fair share: never held, released, or expired (a Lease
   whose holder and renew time have not changed for `lease_duration` on this member's own
   clock, so clocks need not agree);
4. deletes the member Leases of members that have been gone for two lease durations.

**Fencing.** Each held shard has a deadline: the local time its last successful renew was
*sent*, plus `renew_deadline`. `writes_allowed()` (checked by the client before every write)
refuses every write from the earliest deadline on, and a watchdog cancels the controllers
of a shard hard the moment its deadline passes. A shard given up (past its deadline, or its
lease taken) stays fenced until its controllers have stopped: no write passes in between.

**Why a takeover never overlaps.** Holder H sends a renewal at H's time `s`; its fence
closes at `s + renew_deadline`. Observer O first sees that renewal in a list answer that
arrives at O's time `a`, and dates it `a` (the time taken when the answer is in, never
before: the renewal was committed before the list was served, so `a` is after `s`). O takes
the shard only when the record has not changed for the duration written in the Lease,
`ceil(lease_duration)` whole seconds, `>= lease_duration > renew_deadline`: at O's time
`t > a + lease_duration`, so more than `renew_deadline` after `s`, and with a
resourceVersion-guarded update, which fails if H renewed after what O saw. H's fence is
therefore closed before O starts, whatever the two clocks read (they need only run at the
same rate; `lease_duration - renew_deadline` is the margin for drift and scheduling).

**Identity.** A holder is `identity` (`<pod>-worker-<n>`) plus an instance token that is
new for every process start, kept in the Lease's `cliques.dev/instance` annotation: a lease
left by an earlier process with the same name (a restarted container) is not "ours" and
must expire like anybody else's before it is taken.

Kubernetes is the only arbiter: there is no other channel between members. The clock is
injected so the decisions can be unit-tested.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import math
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from cliques.api import labels
from cliques.kube import errors
from cliques.kube.client import KubeClient
from cliques.kube.resources import LEASES
from cliques.kube.stretches import Stretches

log = logging.getLogger(__name__)

LABEL_ROLE: Final = labels.LABEL_LEASE_ROLE
#: Leases read per list request (the list is paginated).
LIST_PAGE = 500


class LeaseSpec(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int | None = None


class LeaseMeta(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    name: str = ""
    namespace: str = ""
    resource_version: str = ""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


class Lease(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    api_version: str = "coordination.k8s.io/v1"
    kind: str = "Lease"
    metadata: LeaseMeta = msgspec.field(default_factory=LeaseMeta)
    spec: LeaseSpec = msgspec.field(default_factory=LeaseSpec)


class _ListMeta(msgspec.Struct, rename="camel"):
    continue_: str = msgspec.field(default="", name="continue")


class _LeaseList(msgspec.Struct):
    items: list[Lease] = []
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)


@dataclass(frozen=True)
class Timings:
    """client-go's leader-election defaults: 15 s lease, 10 s renew deadline, 2 s retry."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError("need retry_period < renew_deadline < lease_duration")

    @property
    def lease_seconds(self) -> int:
        """`leaseDurationSeconds` as written: whole seconds, rounded up, so that the others
        (who go by it) never wait less than `lease_duration`."""
        return math.ceil(self.lease_duration)


def shard_buckets(shard: int, shards: int, total: int = 256) -> list[int]:
    lo = shard * total // shards
    hi = (shard + 1) * total // shards
    return list(range(lo, hi))


def fair_share(shards: int, members: int) -> int:
    return math.ceil(shards / max(1, members))


def new_instance() -> str:
    """A token unique to this process start (pid for people, a uuid for uniqueness)."""
    return f"{os.getpid()}-{uuid.uuid4().hex[:12]}"


def _now_rfc3339() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


StartShard = Callable[[int], Awaitable[None]]
#: Stop a shard's controllers: `hard=False` drains (in-flight reconciles finish, bounded by
#: the given seconds), `hard=True` cancels them at once.
StopShard = Callable[[int, bool, float], Awaitable[None]]


@dataclass
class _Seen:
    record: tuple[str | None, str | None]
    since: float


@dataclass
class ShardCoordinator:
    client: KubeClient
    namespace: str
    identity: str
    shards: int
    start_shard: StartShard
    stop_shard: StopShard
    timings: Timings = field(default_factory=Timings)
    clock: Callable[[], float] = time.monotonic
    instance: str = field(default_factory=new_instance)
    #: shard -> local time the last successful renew (or the acquire) was sent
    owned: dict[int, float] = field(default_factory=dict)
    #: shards being drained before their lease is handed back
    releasing: dict[int, asyncio.Task[None]] = field(default_factory=dict)
    #: shard -> local time before which it is not acquired again (its controllers crashed)
    cooldown: dict[int, float] = field(default_factory=dict)
    #: shards given up (late, or taken) whose controllers are still being stopped
    fenced: set[int] = field(default_factory=set)
    _seen: dict[str, _Seen] = field(default_factory=dict)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _member_written: bool = False

    def lease_name(self, shard: int) -> str:
        return f"cliques-shard-{shard}"

    def member_name(self) -> str:
        return f"cliques-member-{self.identity}"

    def stop(self) -> None:
        self._stop.set()

    # -- fencing ----------------------------------------------------------------------------

    def deadline(self, shard: int) -> float:
        return self.owned[shard] + self.timings.renew_deadline

    def writes_allowed(self) -> str | None:
        """None while every held shard is before its renew deadline and no shard given up
        is still stopping, else why not."""
        if self.fenced:
            return f"shard {min(self.fenced)} given up, its controllers stopping: writes are fenced"
        now = self.clock()
        for shard in self.owned:
            if now >= self.deadline(shard):
                return (
                    f"shard {shard} not renewed for {now - self.owned[shard]:.1f}s "
                    f"(renew deadline {self.timings.renew_deadline:g}s): writes are fenced"
                )
        return None

    async def _fence_loop(self) -> None:
        """Stop, hard and at once, every shard whose renew deadline has passed."""
        while not self._stop.is_set():
            now = self.clock()
            expired = [s for s in self.owned if now >= self.deadline(s)]
            if expired:
                for shard in expired:
                    log.warning(
                        "shard %d: not renewed within %gs; stopping its controllers",
                        shard,
                        self.timings.renew_deadline,
                    )
                await self._lose(expired)
                continue
            wait = min(
                (self.deadline(s) - now for s in self.owned), default=self.timings.retry_period
            )
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout=max(0.01, wait + 0.001))

    # -- the loop ---------------------------------------------------------------------------

    async def run(self) -> None:
        fence = asyncio.create_task(self._fence_loop(), name="shard-fence")
        failing = Stretches()
        try:
            while not self._stop.is_set():
                try:
                    async with asyncio.timeout(self.timings.renew_deadline):
                        await self.tick()
                except errors.API_FAILURES as exc:
                    # One line when the failures begin, one when they end (`stretches`).
                    if failing.failed("tick", type(exc).__name__) is not None:
                        log.warning(
                            "shard coordination: %s; retrying every %gs (logged again when "
                            "it works)",
                            exc or type(exc).__name__,
                            self.timings.retry_period,
                        )
                    else:
                        log.debug("shard coordination: %s", exc or type(exc).__name__)
                else:
                    ended = failing.ended("tick")
                    if ended is not None:
                        log.info(
                            "shard coordination works again after %d failed pass(es)",
                            ended.count,
                        )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), timeout=self.timings.retry_period)
        finally:
            fence.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await fence
            await self.release_all()

    def _ours(self, lease: Lease | None) -> bool:
        return (
            lease is not None
            and lease.spec.holder_identity == self.identity
            and lease.metadata.annotations.get(labels.ANNOTATION_INSTANCE) == self.instance
        )

    async def tick(self) -> None:
        await self._renew_member()
        leases = await self._list()
        # What the list shows is dated when its answer is in: a record dated earlier (say,
        # before a slow renewal) would look older than it is, and expire too soon.
        now = self.clock()
        self._observe(leases, now)
        members = self._live_members(leases, now)
        shard_leases = {
            int(name.rsplit("-", 1)[1]): lease
            for name, lease in leases.items()
            if lease.metadata.labels.get(LABEL_ROLE) == "shard"
        }
        # 1: renew what we hold (releasing ones too: they drain under a valid lease).
        lost = []
        for shard in sorted(self.owned):
            lease = shard_leases.get(shard)
            if not self._ours(lease):
                log.warning(
                    "shard %d: lease taken by %s; stopping",
                    shard,
                    lease.spec.holder_identity if lease else "nobody",
                )
                lost.append(shard)
                continue
            assert lease is not None
            sent = self.clock()
            if await self._update(lease, holder=self.identity) and shard in self.owned:
                self.owned[shard] = sent
                self._changed.set()
        if lost:
            await self._lose(lost)
        # 2: hand back extras (drain first, then release), in the background.
        target = fair_share(self.shards, len(members))
        active = sorted(s for s in self.owned if s not in self.releasing)
        for shard in sorted(active, reverse=True)[: max(0, len(active) - target)]:
            log.info(
                "shard %d: handing back (holding %d, fair share %d of %d members)",
                shard,
                len(active),
                target,
                len(members),
            )
            self.releasing[shard] = asyncio.create_task(
                self._release(shard), name=f"release-shard-{shard}"
            )
        # 3: take free shards up to the fair share.
        held = len(self.owned) - len(self.releasing)
        for shard in range(self.shards):
            if held >= target:
                break
            if shard in self.owned or shard in self.fenced or self.cooldown.get(shard, 0.0) > now:
                continue
            lease = shard_leases.get(shard)
            if lease is not None and not self._is_free(lease, now):
                continue
            sent = self.clock()
            if await self._acquire(shard, lease):
                log.info(
                    "shard %d: acquired (buckets %s)",
                    shard,
                    _range(shard_buckets(shard, self.shards)),
                )
                self.owned[shard] = sent
                self._changed.set()
                held += 1
                await self.start_shard(shard)
        # 4: forget members that are long gone.
        await self._clean_members(leases, now)

    def _live_members(self, leases: dict[str, Lease], now: float) -> list[str]:
        live = {self.identity}
        for lease in leases.values():
            if lease.metadata.labels.get(LABEL_ROLE) != "member":
                continue
            holder = lease.spec.holder_identity
            if holder and not self._expired(lease, now):
                live.add(holder)
        return sorted(live)

    def _observe(self, leases: dict[str, Lease], now: float) -> None:
        """Note when each lease's (holder, renew time) was first seen as it is: a lease
        expires `lease_duration` after that on our clock. Every lease, every pass, so that
        the clock of a lease runs before we need it (a member that dies while we hold our
        fair share is taken over one lease duration later, not two)."""
        for name, lease in leases.items():
            record = (lease.spec.holder_identity, lease.spec.renew_time)
            seen = self._seen.get(name)
            if seen is None or seen.record != record:
                self._seen[name] = _Seen(record, now)
        for name in [n for n in self._seen if n not in leases]:
            del self._seen[name]

    def _expired(self, lease: Lease, now: float, factor: float = 1.0) -> bool:
        record = (lease.spec.holder_identity, lease.spec.renew_time)
        seen = self._seen.get(lease.metadata.name)
        if seen is None or seen.record != record:
            self._seen[lease.metadata.name] = _Seen(record, now)
            return False
        duration = lease.spec.lease_duration_seconds or self.timings.lease_duration
        return now - seen.since > duration * factor

    def _is_free(self, lease: Lease, now: float) -> bool:
        """Never held, handed back, or expired. A lease held under our name by an earlier
        process (another instance) is not ours: it must expire first."""
        if not lease.spec.holder_identity:
            return True
        return self._ours(lease) or self._expired(lease, now)

    async def _clean_members(self, leases: dict[str, Lease], now: float) -> None:
        for name, lease in leases.items():
            if (
                lease.metadata.labels.get(LABEL_ROLE) != "member"
                or name == self.member_name()
                or not self._expired(lease, now, factor=2.0)
            ):
                continue
            log.info("deleting the member lease of %s (gone)", lease.spec.holder_identity)
            with contextlib.suppress(errors.NotFound, errors.Conflict):
                await self.client.delete(
                    LEASES, self.namespace, name, resource_version=lease.metadata.resource_version
                )
            self._seen.pop(name, None)

    # -- API --------------------------------------------------------------------------------

    async def _list(self) -> dict[str, Lease]:
        out: dict[str, Lease] = {}
        token = ""
        while True:
            raw = await self.client.list_page(
                LEASES, self.namespace, label_selector=LABEL_ROLE, limit=LIST_PAGE,
                continue_token=token,
            )  # fmt: skip
            page = msgspec.json.decode(raw, type=_LeaseList)
            out.update((lease.metadata.name, lease) for lease in page.items)
            token = page.metadata.continue_
            if not token:
                return out

    def _body(
        self,
        name: str,
        role: str,
        holder: str | None,
        rv: str = "",
        transitions: int | None = None,
        acquire: bool = False,
    ) -> dict[str, Any]:
        now = _now_rfc3339()
        spec: dict[str, Any] = {
            "holderIdentity": holder,
            "leaseDurationSeconds": self.timings.lease_seconds,
            "renewTime": now if holder else None,
        }
        if acquire:
            spec["acquireTime"] = now
            spec["leaseTransitions"] = (transitions or 0) + 1
        meta: dict[str, Any] = {
            "name": name,
            "namespace": self.namespace,
            "labels": {LABEL_ROLE: role},
            "annotations": {labels.ANNOTATION_INSTANCE: self.instance if holder else ""},
        }
        if rv:
            meta["resourceVersion"] = rv
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": meta,
            "spec": spec,
        }

    async def _renew_member(self) -> None:
        name = self.member_name()
        body = self._body(name, "member", self.identity)
        self._member_written = True
        try:
            await self.client.patch(LEASES, self.namespace, name, body, Lease, patch_type="merge")
        except errors.NotFound:
            with contextlib.suppress(errors.AlreadyExists):
                await self.client.create(LEASES, self.namespace, body, Lease)

    async def _update(self, lease: Lease, *, holder: str | None, acquire: bool = False) -> bool:
        body = self._body(
            lease.metadata.name,
            "shard",
            holder,
            lease.metadata.resource_version,
            lease.spec.lease_transitions,
            acquire,
        )
        try:
            await self.client.replace(LEASES, self.namespace, lease.metadata.name, body, Lease)
            return True
        except (errors.Conflict, errors.NotFound):
            return False

    async def _acquire(self, shard: int, lease: Lease | None) -> bool:
        if lease is None:
            body = self._body(self.lease_name(shard), "shard", self.identity, acquire=True)
            try:
                await self.client.create(LEASES, self.namespace, body, Lease)
                return True
            except errors.AlreadyExists:
                return False
        return await self._update(lease, holder=self.identity, acquire=not self._ours(lease))

    async def _lose(self, shards: list[int]) -> None:
        """Shards we can no longer prove we hold: cancel their controllers, all at once.
        They are fenced (no write passes) from now until their controllers have stopped.
        Shards no longer held (given up already, by the watchdog or the pass) are skipped."""
        shards = [s for s in shards if s in self.owned]
        self.fenced.update(shards)
        for shard in shards:
            self.owned.pop(shard, None)
            task = self.releasing.pop(shard, None)
            if task is not None:
                task.cancel()
        self._changed.set()
        try:
            await asyncio.gather(*(self.stop_shard(s, True, 0.0) for s in shards))
        finally:
            self.fenced.difference_update(shards)

    async def _release(self, shard: int) -> None:
        """Drain a shard's controllers, then hand its lease back (while still fenced)."""
        try:
            grace = max(0.0, self.deadline(shard) - self.clock())
            await self.stop_shard(shard, False, grace)
            if shard not in self.owned:
                return  # lost while draining
            fresh = await self._list()
            current = fresh.get(self.lease_name(shard))
            if self._ours(current):
                assert current is not None
                await self._update(current, holder=None)
        except errors.API_FAILURES as exc:
            log.warning(
                "could not hand back shard %d (its lease expires in %gs): %s",
                shard,
                self.timings.lease_duration,
                exc or type(exc).__name__,
            )
        finally:
            self.owned.pop(shard, None)
            self.releasing.pop(shard, None)
            self._changed.set()

    async def drop(self, shard: int, cooldown: float) -> None:
        """A shard whose controllers crashed: hand its lease back so that someone (maybe
        this member, after `cooldown` seconds) runs it afresh, instead of renewing a lease
        nobody serves."""
        if shard not in self.owned or shard in self.releasing:
            return
        self.cooldown[shard] = self.clock() + cooldown
        self.releasing[shard] = asyncio.create_task(
            self._release(shard), name=f"release-shard-{shard}"
        )

    async def release_all(self) -> None:
        """On shutdown: drain every shard (together), then hand the leases back for
        immediate takeover."""
        for shard in self.owned:
            if shard not in self.releasing:
                self.releasing[shard] = asyncio.create_task(
                    self._release(shard), name=f"release-shard-{shard}"
                )
        shards = sorted(self.owned)
        if self.releasing:
            await asyncio.gather(*self.releasing.values(), return_exceptions=True)
        if self._member_written:
            with contextlib.suppress(*errors.API_FAILURES):
                await self.client.delete(LEASES, self.namespace, self.member_name())
        if shards:
            log.info("released shards %s", shards)


def _range(b: list[int]) -> str:
    return f"{b[0]}-{b[-1]}" if b else "-"
