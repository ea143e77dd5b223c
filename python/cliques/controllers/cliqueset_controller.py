"""The CliqueSet controller: snapshot → `cliqueset_planner.plan` → executor, per key.

It owns one work queue of CliqueSet keys. Events that enqueue a CliqueSet: the CliqueSet
itself, and any of its Cliques or gang Services (found by the `cliques.dev/cliqueset` label).
It only handles CliqueSets whose bucket this process owns (`owns(namespace, name)`).
Watch events of Cliques and Services also satisfy its expectations.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import msgspec

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet, CliqueSetStatus
from cliques.api.meta import format_now, only_status_changed
from cliques.api.service import Service
from cliques.controllers import cliqueset_planner, failures
from cliques.controllers.executor import ExecutionError, Executor
from cliques.controllers.revision import Hasher
from cliques.kube.events import ObjectRef
from cliques.kube.expectations import Expectations
from cliques.kube.informer import EventKind, Informer
from cliques.kube.objects import controller_uid, key_of, split_key
from cliques.kube.resources import CLIQUESETS
from cliques.kube.runner import Result
from cliques.kube.workqueue import WorkQueue

log = logging.getLogger(__name__)
NAME = "cliqueset"
_DECODE = msgspec.json.Decoder(CliqueSet).decode
_ENCODE_STATUS = msgspec.to_builtins


class CliqueSetController:
    def __init__(
        self,
        cliquesets: Informer[CliqueSet],
        cliques: Informer[Clique],
        services: Informer[Service],
        executor: Executor,
        expectations: Expectations,
        hasher: Hasher,
        *,
        owns: Callable[[str, str], bool] = lambda ns, name: True,
        child_debounce: float = 0.5,
        max_child_debounce: float = 1.0,
    ) -> None:
        self.child_debounce = child_debounce
        self.max_child_debounce = max_child_debounce
        #: seconds of the last plan per CliqueSet key (what one more reconcile costs)
        self._plan_cost: dict[str, float] = {}
        self.cliquesets = cliquesets
        self.cliques = cliques
        self.services = services
        self.executor = executor
        self.expectations = expectations
        self.hasher = hasher
        self.owns = owns
        self.queue = WorkQueue(NAME)
        self._hash_memo: dict[tuple[str, int], dict[str, str]] = {}
        #: CliqueSet UID -> the verdicts of its last plan, per gang
        self._gang_memo: dict[str, cliqueset_planner.GangMemo] = {}
        #: CliqueSets whose writes the API server refuses (their ReplicaFailure condition)
        self.failures = failures.FailureMemo()
        cliquesets.add_handler(self._on_cliqueset)
        cliques.add_handler(self._on_child)
        services.add_handler(self._on_child)

    # -- event handlers (enqueue only) ------------------------------------------------------

    def _on_cliqueset(self, kind: EventKind, old: Any, new: CliqueSet) -> None:
        meta = new.metadata
        if not self.owns(meta.namespace, meta.name):
            return
        if kind == "DELETED":
            self.expectations.forget(meta.uid)
            self._hash_memo = {k: v for k, v in self._hash_memo.items() if k[0] != meta.uid}
            self._plan_cost.pop(key_of(new), None)
            self._gang_memo.pop(meta.uid, None)
            self.failures.clear(key_of(new))
        elif kind == "MODIFIED" and old is not None and only_status_changed(old, new):
            # Its status is written by this controller alone, from a plan that already saw
            # everything the new status says: reconciling again would find nothing to do.
            return
        self.queue.add(key_of(new))

    def _on_child(self, kind: EventKind, old: Any, new: Any) -> None:
        meta = new.metadata
        owner = controller_uid(new)
        if owner is not None:
            if kind == "DELETED":
                self.expectations.deleted(owner, meta.name)
            else:
                self.expectations.created(owner, meta.name)
                h = meta.labels.get(labels.LABEL_TEMPLATE_HASH)
                if h:
                    self.expectations.created(owner, f"{meta.name}@{h}")
        parent = meta.labels.get(labels.LABEL_CLIQUESET)
        if parent and self.owns(meta.namespace, parent):
            key = f"{meta.namespace}/{parent}"
            self.queue.add_after(key, self.debounce(key))

    def debounce(self, key: str) -> float:
        """How long child events of CliqueSet `key` are gathered before it reconciles.

        A thousand Cliques changing status at once cost a few reconciles, not a thousand
        (its own events are not delayed). The status of a CliqueSet, an aggregate of its
        gangs, so follows its Cliques within half a second by default. The window grows
        with what a plan of this set costs (20x its last plan, within [child_debounce,
        max_child_debounce]), so that planning a big set takes at most ~5% of a core
        however busy its children are.
        """
        cost = self._plan_cost.get(key, 0.0)
        return min(self.max_child_debounce, max(self.child_debounce, 20.0 * cost))

    # -- reconcile --------------------------------------------------------------------------

    def _hashes(self, cqs: CliqueSet) -> dict[str, str]:
        memo_key = (cqs.metadata.uid, cqs.metadata.generation)
        hashes = self._hash_memo.get(memo_key)
        if hashes is None:
            hashes = {
                c.name: self.hasher.template_hash(c.template) for c in cqs.spec.template.cliques
            }
            if len(self._hash_memo) > 10_000:
                self._hash_memo.clear()
            self._hash_memo[memo_key] = hashes
        return hashes

    def snapshot(self, cqs: CliqueSet) -> cliqueset_planner.CliqueSetSnapshot:
        """What the planner sees of `cqs`: its Cliques and Services from the cache, and the
        gang verdicts of its last plan (reused for the gangs whose Cliques are unchanged)."""
        uid = cqs.metadata.uid
        gang_memo = self._gang_memo.get(uid)
        if gang_memo is None:
            gang_memo = self._gang_memo[uid] = cliqueset_planner.GangMemo()
        return cliqueset_planner.CliqueSetSnapshot(
            cliqueset=cqs,
            cliques=self.cliques.store.by_index("controller", uid),
            services=self.services.store.by_index("controller", uid),
            hashes=self._hashes(cqs),
            rehash=self.hasher.template_hash,
            algorithm=self.hasher.algorithm,
            expectations_satisfied=self.expectations.satisfied(uid),
            now=format_now(),
            memo=gang_memo,
            failure=self.failures.current(key_of(cqs), cqs.metadata.generation),
        )

    async def reconcile(self, key: str) -> Result:
        cqs = self.cliquesets.store.get(key)
        if cqs is None or cqs.metadata.deletion_timestamp is not None:
            if cqs is not None:
                self._gang_memo.pop(cqs.metadata.uid, None)
            return Result()
        started = time.perf_counter()
        try:
            snap = self.snapshot(cqs)
        except ValueError as exc:  # a template the canonical form refuses
            return await self._invalid(cqs, f"invalid pod template: {exc}")
        plan = cliqueset_planner.plan(snap)
        self._plan_cost[key] = time.perf_counter() - started
        ref = _ref(cqs)
        if plan.writes or plan.events:
            log.info(
                "%s: %d create(s), %d delete(s), %d patch(es)",
                key,
                len(plan.creates),
                len(plan.deletes),
                len(plan.patches),
                extra={"key": key, "controller": NAME},
            )
        try:
            await self.executor.execute(plan, ref)
        except ExecutionError as exc:
            gen = cqs.metadata.generation
            await self.failures.report(key, gen, exc, lambda: self._publish(cqs))
            raise
        if plan.writes:
            self.failures.clear(key)
        # A plan that wrote leaves its status for the reconcile that the watch events of
        # those writes (Cliques and Services) bring: that one sees their outcome, this one
        # would only publish a state already on its way out (and cost a request).
        if plan.status is not None and not plan.writes:
            await self._write_status(cqs, plan.status)
        if not snap.expectations_satisfied:
            return Result(requeue_after=self.expectations.ttl + 1)
        return Result()

    async def _publish(self, cqs: CliqueSet) -> None:
        """Write the CliqueSet's status now, with a newly recorded failure of its writes."""
        status = cliqueset_planner.plan(self.snapshot(cqs)).status
        if status is not None:
            await self._write_status(cqs, status)

    async def _invalid(self, cqs: CliqueSet, message: str) -> Result:
        snap = cliqueset_planner.CliqueSetSnapshot(cliqueset=cqs, cliques=[], now=format_now())
        status = cliqueset_planner.invalid_status(snap, message)
        if status != cqs.status:
            if self.executor.recorder is not None:
                self.executor.recorder.record(_ref(cqs), "Warning", "InvalidSpec", message)
            await self._write_status(cqs, status)
        return Result()

    async def _write_status(self, cqs: CliqueSet, status: CliqueSetStatus) -> None:
        ns, name = split_key(key_of(cqs))

        async def recompute(raw: bytes) -> tuple[str, Any] | None:
            fresh = _DECODE(raw)
            if fresh.metadata.uid != cqs.metadata.uid:
                return None
            again = cliqueset_planner.plan(self.snapshot(fresh)).status
            if again is None:
                return None
            return fresh.metadata.resource_version, _ENCODE_STATUS(again)

        await self.executor.write_status(
            CLIQUESETS,
            ns or "",
            name,
            cqs.metadata.resource_version,
            _ENCODE_STATUS(status),
            recompute=recompute,
        )


def _ref(cqs: CliqueSet) -> ObjectRef:
    m = cqs.metadata
    return ObjectRef(cqs.api_version, cqs.kind, m.namespace, m.name, m.uid)
