"""Splitting the buckets between operator replicas through `coordination.k8s.io` Leases.

The 256 buckets are grouped into `shards` shards. Every operator process taking part is a
*member*: it renews a member Lease (`cliques-member-<identity>`), and the live members are
those whose member Lease is fresh. Each shard has a Lease (`cliques-shard-<i>`) that at most
one member holds. Every `retry_period` a member:

1. renews its member Lease and the shard Leases it holds (a resourceVersion-guarded update:
   if someone else changed it, the shard is lost and its controllers stop at once);
2. stops reconciling any shard it could not renew within `renew_deadline` (shorter than the
   lease duration, so it has stopped before anyone may take the shard over);
3. when it holds more than its fair share (`ceil(shards / live members)`, e.g. a member
   joined), drains the controllers of the extra shards and only then releases their Leases;
4. when it holds less, acquires free shards: never held, released, or expired (a Lease whose
   holder and renew time have not changed for `lease_duration` on this member's own clock,
   so clocks need not agree).

Kubernetes is the only arbiter: there is no other channel between replicas. The clock is
injected so the decisions can be unit-tested.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from cliques.kube import errors
from cliques.kube.client import KubeClient
from cliques.kube.resources import LEASES

log = logging.getLogger(__name__)

LABEL_ROLE = "cliques.dev/lease"


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


class Lease(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    api_version: str = "coordination.k8s.io/v1"
    kind: str = "Lease"
    metadata: LeaseMeta = msgspec.field(default_factory=LeaseMeta)
    spec: LeaseSpec = msgspec.field(default_factory=LeaseSpec)


class _LeaseList(msgspec.Struct):
    items: list[Lease] = []


@dataclass(frozen=True)
class Timings:
    """client-go's leader-election defaults: 15 s lease, 10 s renew deadline, 2 s retry."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError("need retry_period < renew_deadline < lease_duration")


def shard_buckets(shard: int, shards: int, total: int = 256) -> list[int]:
    lo = shard * total // shards
    hi = (shard + 1) * total // shards
    return list(range(lo, hi))


def fair_share(shards: int, members: int) -> int:
    return math.ceil(shards / max(1, members))


def _now_rfc3339() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


StartShard = Callable[[int], Awaitable[None]]
StopShard = Callable[[int], Awaitable[None]]


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
    owned: dict[int, float] = field(default_factory=dict)  # shard -> last renew (local clock)
    _rv: dict[int, str] = field(default_factory=dict)
    _seen: dict[str, _Seen] = field(default_factory=dict)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)

    def lease_name(self, shard: int) -> str:
        return f"cliques-shard-{shard}"

    def member_name(self) -> str:
        return f"cliques-member-{self.identity}"

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    await self.tick()
                except errors.API_FAILURES as exc:
                    log.warning("shard coordination: %s", exc)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), timeout=self.timings.retry_period)
        finally:
            await self.release_all()

    # -- one round --------------------------------------------------------------------------

    async def tick(self) -> None:
        now = self.clock()
        await self._renew_member()
        leases = await self._list()
        members = self._live_members(leases, now)
        shard_leases = {
            int(name.rsplit("-", 1)[1]): lease
            for name, lease in leases.items()
            if lease.metadata.labels.get(LABEL_ROLE) == "shard"
        }
        # 1-2: renew what we hold; drop what we cannot prove we still hold.
        for shard in sorted(self.owned):
            lease = shard_leases.get(shard)
            if lease is None or lease.spec.holder_identity != self.identity:
                log.warning(
                    "shard %d: lease taken by %s; stopping",
                    shard,
                    lease.spec.holder_identity if lease else "nobody",
                )
                await self._lose(shard)
                continue
            if await self._update(lease, holder=self.identity):
                self.owned[shard] = self.clock()
            elif self.clock() - self.owned[shard] > self.timings.renew_deadline:
                log.warning(
                    "shard %d: not renewed within %.0fs; stopping",
                    shard,
                    self.timings.renew_deadline,
                )
                await self._lose(shard)
        # 3: give back extras (drain first, then release).
        target = fair_share(self.shards, len(members))
        for shard in sorted(self.owned, reverse=True)[: max(0, len(self.owned) - target)]:
            log.info(
                "shard %d: releasing (holding %d, fair share %d of %d members)",
                shard,
                len(self.owned),
                target,
                len(members),
            )
            await self._release(shard, shard_leases.get(shard))
        # 4: take free shards up to the fair share.
        for shard in range(self.shards):
            if len(self.owned) >= target:
                break
            if shard in self.owned:
                continue
            lease = shard_leases.get(shard)
            if lease is not None and not self._is_free(lease, now):
                continue
            if await self._acquire(shard, lease):
                log.info(
                    "shard %d: acquired (buckets %s)",
                    shard,
                    _range(shard_buckets(shard, self.shards)),
                )
                self.owned[shard] = self.clock()
                await self.start_shard(shard)

    def _live_members(self, leases: dict[str, Lease], now: float) -> list[str]:
        live = {self.identity}
        for lease in leases.values():
            if lease.metadata.labels.get(LABEL_ROLE) != "member":
                continue
            holder = lease.spec.holder_identity
            if holder and not self._expired(lease, now):
                live.add(holder)
        return sorted(live)

    def _expired(self, lease: Lease, now: float) -> bool:
        record = (lease.spec.holder_identity, lease.spec.renew_time)
        seen = self._seen.get(lease.metadata.name)
        if seen is None or seen.record != record:
            self._seen[lease.metadata.name] = _Seen(record, now)
            return False
        duration = lease.spec.lease_duration_seconds or self.timings.lease_duration
        return now - seen.since > duration

    def _is_free(self, lease: Lease, now: float) -> bool:
        holder = lease.spec.holder_identity
        return not holder or holder == self.identity or self._expired(lease, now)

    # -- API --------------------------------------------------------------------------------

    async def _list(self) -> dict[str, Lease]:
        raw = await self.client.list_page(
            LEASES, self.namespace, label_selector=LABEL_ROLE, limit=1000
        )
        return {
            lease.metadata.name: lease for lease in msgspec.json.decode(raw, type=_LeaseList).items
        }

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
            "leaseDurationSeconds": int(self.timings.lease_duration),
            "renewTime": now if holder else None,
        }
        if acquire:
            spec["acquireTime"] = now
            spec["leaseTransitions"] = (transitions or 0) + 1
        meta: dict[str, Any] = {
            "name": name,
            "namespace": self.namespace,
            "labels": {LABEL_ROLE: role},
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
        return await self._update(
            lease, holder=self.identity, acquire=lease.spec.holder_identity != self.identity
        )

    async def _lose(self, shard: int) -> None:
        self.owned.pop(shard, None)
        await self.stop_shard(shard)

    async def _release(self, shard: int, lease: Lease | None) -> None:
        self.owned.pop(shard, None)
        await self.stop_shard(shard)  # drained before anyone else may take it
        if lease is None:
            return
        fresh = await self._list()
        current = fresh.get(lease.metadata.name)
        if current is not None and current.spec.holder_identity == self.identity:
            await self._update(current, holder=None)

    async def release_all(self) -> None:
        """On shutdown: drain every shard, then hand the leases back for immediate takeover."""
        if not self.owned:
            return
        shards = sorted(self.owned)
        leases: dict[str, Lease] = {}
        with contextlib.suppress(*errors.API_FAILURES):
            leases = await self._list()
        for shard in shards:
            # Every shard is drained; a lease that cannot be handed back expires by itself.
            try:
                await self._release(shard, leases.get(self.lease_name(shard)))
            except errors.API_FAILURES as exc:
                log.warning(
                    "could not hand back shard %d (its lease expires in %gs): %s",
                    shard,
                    self.timings.lease_duration,
                    exc,
                )
        with contextlib.suppress(*errors.API_FAILURES):
            await self.client.delete(LEASES, self.namespace, self.member_name())
        log.info("released shards %s", shards)


def _range(b: list[int]) -> str:
    return f"{b[0]}-{b[-1]}" if b else "-"
