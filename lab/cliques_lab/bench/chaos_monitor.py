"""The invariants of `cliques bench chaos`, checked on every pod event as it happens.

The monitor watches (not polls) the pods of the run's namespace and is told by the chaos
engine what it asked for: every desired state of every CliqueSet in order (`desire`), every
delete of a set with its propagation policy (`deleted`), every pod it deleted itself
(`doom`). From that it judges each pod that goes away (its first event with a
deletionTimestamp, or its DELETED):

- meant, when at some moment since the pod appeared its set was deleted, or no longer had
  its gang, clique or index (a scale-down or resize), or wanted another template hash for
  its clique (a rollout), or the engine deleted it (a pod-loss fault);
- garbage, when the Clique owning it had been deleted (the garbage collector removes pods
  of a deleted owner; an operator reading a stale cache may create such pods);
- otherwise a violation: the operator deleted a pod nobody meant to replace.

And after every event:

- duplicates: two live (not terminating) pods with the same (set, gang, clique, index);
- rollout budget: per RollingUpdate set, the gangs a rollout took down (a pod deleted for
  its template hash, until every clique of the gang has `minAvailable` Ready pods on the
  desired hash again) number at most `maxUnavailable`; a gang that also lost a pod to a
  fault is not counted against the rollout.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.pod import Pod
from cliques.api.policies import UpdateStrategyType
from cliques.controllers.base.revision import Hasher
from cliques.controllers.features import placement
from cliques.kube.client import KubeClient
from cliques.kube.informer import Informer
from cliques.kube.resources import CLIQUES, PODS
from cliques_lab.bench.chaos_actions import Shape, manifest

Identity = tuple[str, int, str, int]  # set, gang, clique, pod index


@dataclass(frozen=True)
class Desired:
    """What the engine asked of one set at one moment (None fields: the set is gone)."""

    replicas: int
    cliques: dict[str, tuple[int, int, str]]  # clique -> (replicas, minAvailable, hash)
    rolling: bool
    max_unavailable: int


DELETED = "deleted"
ORPHANED = "orphaned"


def desired_of(shape: Shape, hasher: Hasher) -> Desired:
    """The desired state of `shape`, hashed as the operator hashes it."""
    cqs = _decode_cliqueset(manifest(shape))
    where = cqs.spec.placement
    return Desired(
        replicas=shape.replicas,
        cliques={
            c.name: (
                c.replicas,
                c.effective_min_available,
                hasher.template_hash(dict(placement.hash_basis(c.template, where, shape.name))),
            )
            for c in cqs.spec.template.cliques
        },
        rolling=shape.strategy == UpdateStrategyType.ROLLING_UPDATE,
        max_unavailable=max(1, shape.max_unavailable),
    )


def _decode_cliqueset(body: dict[str, Any]) -> CliqueSet:
    import msgspec

    return msgspec.convert(body, CliqueSet)


@dataclass
class _Seen:
    identity: Identity
    hash: str
    added: float
    ready: bool


#: Seconds a pod's delete with no cause waits for its Clique's deletion to be seen.
PENDING_GRACE = 30.0


@dataclass
class _Pending:
    clique: str
    name: str
    message: str
    since: float


@dataclass
class Monitor:
    client: KubeClient
    namespace: str
    step: str = "start"  # what the engine is doing (named in a violation)
    violations: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    max_rollout_down: int = 0
    history: dict[str, list[tuple[float, Desired | str]]] = field(default_factory=dict)
    _pods: dict[str, _Seen] = field(default_factory=dict)  # uid -> what we saw
    _live: dict[Identity, set[str]] = field(default_factory=dict)
    _doomed: set[str] = field(default_factory=set)
    _down: dict[str, dict[int, float]] = field(default_factory=dict)  # set -> gang -> since
    _faulted: dict[str, set[int]] = field(default_factory=dict)
    _over: set[str] = field(default_factory=set)  # sets reported over budget (once each)
    _dead_cliques: dict[str, float] = field(default_factory=dict)  # uid -> seen deleted
    _clique_seen: dict[str, float] = field(default_factory=dict)  # uid -> first seen
    #: pod uid -> a delete with no cause yet, whose Clique's deletion may not be seen yet
    _pending: dict[str, _Pending] = field(default_factory=dict)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.informer: Informer[Pod] = Informer(
            self.client, PODS, Pod, namespace=self.namespace, label_selector=labels.LABEL_CLIQUESET
        )
        self.informer.add_handler(self._on)
        self.cliques: Informer[Clique] = Informer(
            self.client, CLIQUES, Clique, namespace=self.namespace
        )
        self.cliques.add_handler(self._on_clique)

    async def start(self) -> None:
        self._tasks = [asyncio.create_task(i.run()) for i in (self.cliques, self.informer)]
        await asyncio.wait_for(self.cliques.synced.wait(), timeout=60)
        await asyncio.wait_for(self.informer.synced.wait(), timeout=60)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _on_clique(self, kind: str, old: Clique | None, new: Clique) -> None:
        uid = new.metadata.uid
        now = time.monotonic()
        self._clique_seen.setdefault(uid, now)
        if kind != "DELETED":
            return
        self._dead_cliques[uid] = now
        for pod_uid, p in list(self._pending.items()):
            if p.clique != uid:
                continue
            del self._pending[pod_uid]
            cause = self._owner_cause(p.name, uid) if now - p.since <= PENDING_GRACE else None
            if cause is None:
                self.counts["pods deleted: UNMEANT"] += 1
                self.violations.append(p.message)
            else:
                self.counts[f"pods deleted: {cause}"] += 1

    def settle(self) -> None:
        """At the end: a delete whose Clique was never seen deleted had no cause."""
        for p in self._pending.values():
            self.counts["pods deleted: UNMEANT"] += 1
            self.violations.append(p.message)
        self._pending.clear()

    # -- what the engine tells ----------------------------------------------------------------

    def desire(self, name: str, desired: Desired) -> None:
        self.history.setdefault(name, []).append((time.monotonic(), desired))

    def deleted(self, name: str, propagation: str) -> None:
        state = ORPHANED if propagation == "Orphan" else DELETED
        self.history.setdefault(name, []).append((time.monotonic(), state))
        self._down.pop(name, None)

    def doom(self, uid: str) -> None:
        self._doomed.add(uid)

    def current(self, name: str) -> Desired | str | None:
        h = self.history.get(name)
        return h[-1][1] if h else None

    # -- queries ------------------------------------------------------------------------------

    def live_pods(self, name: str | None = None) -> list[Pod]:
        return [
            p
            for p in self.informer.store.objects()
            if p.metadata.deletion_timestamp is None
            and (name is None or p.metadata.labels.get(labels.LABEL_CLIQUESET) == name)
        ]

    def converged(self, name: str) -> str | None:
        """None when the set's live pods are exactly its desired ones, Ready, on the desired
        hash; else what is still missing or extra."""
        want = self.current(name)
        if not isinstance(want, Desired):
            return f"{name} is not a live set"
        have: dict[Identity, Pod] = {}
        for p in self.live_pods(name):
            ident = _identity(p)
            if ident is not None:
                have[ident] = p
        missing = extra = stale = 0
        why: list[str] = []
        for g in range(want.replicas):
            for c, (n, _, h) in want.cliques.items():
                for i in range(n):
                    p = have.pop((name, g, c, i), None)  # type: ignore[arg-type]
                    if p is None or not p.is_ready:
                        missing += 1
                        why.append(f"{name}-{g}-{c}-{i} {_unready(p)}")
                    elif p.metadata.labels.get(labels.LABEL_TEMPLATE_HASH) != h:
                        stale += 1
        extra = len(have)
        if missing or extra or stale:
            shown = "; ".join(why[:SHOWN]) + ("; …" if len(why) > SHOWN else "")
            return f"{name}: {missing} pods missing or not Ready, {stale} stale, {extra} extra" + (
                f" ({shown})" if why else ""
            )
        return None

    # -- the events ---------------------------------------------------------------------------

    def _on(self, kind: str, old: Pod | None, new: Pod) -> None:
        if kind == "MODIFIED" and old is not None and old.metadata.uid != new.metadata.uid:
            self._gone(old)  # replaced while the watch was away (a relist)
            kind = "ADDED"
        if kind == "DELETED" or new.metadata.deletion_timestamp is not None:
            self._gone(new)
        else:
            self._seen(new)
        ident = _identity(new)
        if ident is not None:
            self._check_budget(ident[0])

    def _seen(self, pod: Pod) -> None:
        uid = pod.metadata.uid
        ident = _identity(pod)
        if ident is None:
            return
        seen = self._pods.get(uid)
        hash_ = pod.metadata.labels.get(labels.LABEL_TEMPLATE_HASH, "")
        if seen is None:
            self.counts["pods created"] += 1
            self._pods[uid] = _Seen(ident, hash_, time.monotonic(), pod.is_ready)
            live = self._live.setdefault(ident, set())
            live.add(uid)
            if len(live) > 1:
                self.violations.append(
                    f"duplicate pods for {ident} (uids {sorted(live)}) during {self.step}"
                )
        else:
            seen.hash = hash_  # re-labelled in place
            seen.ready = pod.is_ready

    def _gone(self, pod: Pod) -> None:
        uid = pod.metadata.uid
        seen = self._pods.pop(uid, None)
        if seen is None:
            return
        self._live.get(seen.identity, set()).discard(uid)
        cause = self._cause(uid, seen)
        owner = pod.metadata.controller_ref()
        name, gang = seen.identity[0], seen.identity[1]
        if cause is None and owner is not None:
            cause = self._owner_cause(name, owner.uid)
            if cause is None and owner.uid not in self._dead_cliques:
                # Its Clique's deletion may reach the other watch later.
                message = (
                    f"pod {pod.metadata.name} (uid {uid}) deleted though nothing meant to "
                    f"replace it, during {self.step}"
                )
                self._pending[uid] = _Pending(owner.uid, name, message, time.monotonic())
                return
        self.counts[f"pods deleted: {cause or 'UNMEANT'}"] += 1
        if cause is None:
            self.violations.append(
                f"pod {pod.metadata.name} (uid {uid}) deleted though nothing meant to "
                f"replace it, during {self.step}"
            )
        elif cause == "pod-loss":
            self._faulted.setdefault(name, set()).add(gang)
        elif cause == "rollout":
            want = self.current(name)
            if isinstance(want, Desired) and want.rolling and gang < want.replicas:
                self._down.setdefault(name, {}).setdefault(gang, time.monotonic())

    def _cause(self, uid: str, seen: _Seen) -> str | None:
        if uid in self._doomed:
            return "pod-loss"
        name, gang, clique, index = seen.identity
        history = self.history.get(name, [])
        since = [i for i, (t, _) in enumerate(history) if t <= seen.added]
        start = since[-1] if since else 0
        cause = None
        for _, state in history[start:]:
            if state == DELETED:
                return "set deleted"
            if not isinstance(state, Desired):
                continue
            spec = state.cliques.get(clique)
            if gang >= state.replicas or spec is None or index >= spec[0]:
                return "scaled down"
            if spec[2] != seen.hash:
                cause = "rollout"
        return cause

    def _state_at(self, name: str, when: float) -> Desired | str | None:
        """What set `name` was at monotonic time `when` (its last history entry by then)."""
        state: Desired | str | None = None
        for t, s in self.history.get(name, []):
            if t > when:
                break
            state = s
        return state

    def _owner_cause(self, name: str, clique: str) -> str | None:
        """Why a pod of set `name` controlled by the Clique `clique` could go with its Clique:
        the Clique was made while the set was deleted (by an operator that had not seen the
        delete yet: the garbage collector takes it), or the Clique was deleted, unless the
        set had been deleted with propagation Orphan after the Clique was made (an orphan is
        kept), or None."""
        born = self._clique_seen.get(clique)
        if born is not None and self._state_at(name, born) in (DELETED, ORPHANED):
            return "made after its set's delete"
        died = self._dead_cliques.get(clique)
        if died is None:
            return None
        if self._state_at(name, died) == ORPHANED:
            return None
        return "owner deleted"

    def _gang_up(self, name: str, gang: int, want: Desired) -> bool:
        for clique, (n, min_available, hash_) in want.cliques.items():
            ready = 0
            for i in range(n):
                for uid in self._live.get((name, gang, clique, i), ()):
                    seen = self._pods.get(uid)
                    if seen is not None and seen.ready and seen.hash == hash_:
                        ready += 1
            if ready < min_available:
                return False
        return True

    def _check_budget(self, name: str) -> None:
        down = self._down.get(name)
        if not down:
            return
        want = self.current(name)
        if not isinstance(want, Desired):
            self._down.pop(name, None)
            return
        faulted = self._faulted.setdefault(name, set())
        for gang in list(down):
            if gang >= want.replicas or self._gang_up(name, gang, want):
                del down[gang]
                faulted.discard(gang)
        counted = sum(1 for g in down if g not in faulted)
        self.max_rollout_down = max(self.max_rollout_down, counted)
        if counted > want.max_unavailable and name not in self._over:
            self._over.add(name)
            self.violations.append(
                f"{name}: {counted} gangs down for a rollout (gangs {sorted(down)}), "
                f"maxUnavailable {want.max_unavailable}, during {self.step}"
            )


def _identity(pod: Pod) -> Identity | None:
    lab = pod.metadata.labels
    try:
        return (
            lab[labels.LABEL_CLIQUESET],
            int(lab[labels.LABEL_GANG_INDEX]),
            lab[labels.LABEL_CLIQUE],
            int(lab[labels.LABEL_POD_INDEX]),
        )
    except (KeyError, ValueError):
        return None


#: Pods a convergence violation describes at most.
SHOWN = 6


def _unready(pod: Pod | None) -> str:
    """Why `pod` (None: not there) is not a Ready pod, for a violation's text: missing,
    terminating, unscheduled, or its phase and Ready condition on its node."""
    if pod is None:
        return "missing"
    if pod.metadata.deletion_timestamp is not None:
        return f"terminating since {pod.metadata.deletion_timestamp}"
    node = pod.spec.node_name
    if not node:
        return f"{pod.status.phase or 'Pending'}, not scheduled"
    ready = next((c for c in pod.status.conditions if c.type == "Ready"), None)
    said = f"Ready={ready.status} {ready.reason or ''}".rstrip() if ready else "no Ready condition"
    return f"{pod.status.phase or 'no phase'} on {node}, {said}"
