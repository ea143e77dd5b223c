"""What a person sees about a CliqueSet the operator cannot read at all.

The informer skips an object it cannot decode (nested too deeply, or not matching the
schema) and hands its identity here. The process that owns the object's bucket records a
Warning Event on it and sets `Degraded=True, reason InvalidSpec` (with `Available` and
`Progressing` False) on its status, once per generation, so `kubectl describe` and
`kubectl get cqs` say what is wrong. Nothing else is done with it: no child is created,
changed or deleted until a new generation that can be read.

The status is written with a JSON merge patch on the status subresource: the object cannot
be decoded, so there is no cached status to compare with; the patch is guarded by the
object's UID and generation is recorded as `observedGeneration`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable

import msgspec

from cliques.kube import errors, rawjson
from cliques.kube.client import KubeClient
from cliques.kube.events import EventRecorder, ObjectRef
from cliques.kube.resources import CLIQUESETS

log = logging.getLogger(__name__)

API_VERSION = "cliques.dev/v1alpha1"


class UndecodableReporter:
    def __init__(
        self,
        client: KubeClient,
        recorder: EventRecorder | None,
        owns: Callable[[str, str], bool],
    ) -> None:
        self.client = client
        self.recorder = recorder
        self.owns = owns
        self._done: dict[str, tuple[str, int]] = {}  # key -> (uid, generation) reported
        self._tasks: set[asyncio.Task[None]] = set()

    def __call__(self, meta: rawjson.Meta, reason: str) -> None:
        if not self.owns(meta.namespace, meta.name):
            return
        key = f"{meta.namespace}/{meta.name}"
        if self._done.get(key) == (meta.uid, meta.generation):
            return
        self._done[key] = (meta.uid, meta.generation)
        message = f"the operator cannot read this CliqueSet: {reason}"
        if self.recorder is not None:
            ref = ObjectRef(API_VERSION, "CliqueSet", meta.namespace, meta.name, meta.uid)
            self.recorder.record(ref, "Warning", "InvalidSpec", message)
        task = asyncio.get_running_loop().create_task(self._write_status(meta, message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _write_status(self, meta: rawjson.Meta, message: str) -> None:
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

        def condition(type_: str, status: str) -> dict[str, object]:
            return {
                "type": type_,
                "status": status,
                "reason": "InvalidSpec",
                "message": message,
                "lastTransitionTime": now,
                "observedGeneration": meta.generation,
            }

        patch = {
            "metadata": {"uid": meta.uid},  # a precondition: the object we read, not a new one
            "status": {
                "observedGeneration": meta.generation,
                "conditions": [
                    condition("Available", "False"),
                    condition("Progressing", "False"),
                    condition("Degraded", "True"),
                ],
            },
        }
        try:
            # The answer holds the whole object, as deep as it is: it is not decoded.
            await self.client.request(
                "patch",
                CLIQUESETS,
                namespace=meta.namespace,
                name=meta.name,
                sub="status",
                body=msgspec.json.encode(patch),
                content_type="application/merge-patch+json",
                encoded_query="fieldManager=" + self.client.field_manager,
            )
        except errors.API_FAILURES as exc:
            self._done.pop(f"{meta.namespace}/{meta.name}", None)  # try again next time
            log.warning("could not report %s/%s as InvalidSpec: %s", meta.namespace, meta.name, exc)
