"""Kubernetes Events for what a person should see in `kubectl describe`.

Recording never blocks a reconcile: events go to a bounded in-memory queue that a background
task posts. Identical events for one object within `dedupe_window` seconds are sent once;
when the queue is full, events are dropped (and counted in the log), never awaited.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
import secrets
import time
from dataclasses import dataclass

from cliques.kube import errors
from cliques.kube.protocol import Client
from cliques.kube.resources import EVENTS

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ObjectRef:
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str


class EventRecorder:
    def __init__(
        self,
        client: Client,
        component: str = "cliques-operator",
        *,
        max_queue: int = 1000,
        dedupe_window: float = 60.0,
    ) -> None:
        self.client = client
        self.component = component
        self.host = os.uname().nodename
        self.dedupe_window = dedupe_window
        self._queue: asyncio.Queue[dict[str, object]] = asyncio.Queue(max_queue)
        self._recent: dict[tuple[str, str, str], float] = {}
        self._task: asyncio.Task[None] | None = None
        self.dropped = 0

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="event-recorder")

    async def stop(self) -> None:
        if self._task is not None:
            # Give queued events a moment to go out, then stop.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._queue.join(), timeout=2.0)
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def record(self, ref: ObjectRef, type_: str, reason: str, message: str) -> None:
        now = time.monotonic()
        dkey = (ref.uid, reason, message)
        last = self._recent.get(dkey)
        if last is not None and now - last < self.dedupe_window:
            return
        self._recent[dkey] = now
        if len(self._recent) > 10_000:
            cutoff = now - self.dedupe_window
            self._recent = {k: t for k, t in self._recent.items() if t >= cutoff}
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        event: dict[str, object] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{ref.name}.{secrets.token_hex(8)}",
                "namespace": ref.namespace,
            },
            "involvedObject": {
                "apiVersion": ref.api_version,
                "kind": ref.kind,
                "name": ref.name,
                "namespace": ref.namespace,
                "uid": ref.uid,
            },
            "type": type_,
            "reason": reason,
            "message": message[:1024],
            "source": {"component": self.component, "host": self.host},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        }
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            self.dropped += 1
            log.warning("event queue full; dropped %s %s on %s", type_, reason, ref.name)

    async def _run(self) -> None:
        while True:
            event = await self._queue.get()
            try:
                ns = event["metadata"]["namespace"]  # type: ignore[index]
                await self.client.create(EVENTS, str(ns), event, dict)
            except errors.API_FAILURES as exc:
                log.info("could not record event: %s", exc)
            finally:
                self._queue.task_done()
