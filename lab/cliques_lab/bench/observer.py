"""The benchmark's view of the cluster: watches (not polls) pods and the workload's objects
(CliqueSets, or LeaderWorkerSets for LWS) of one namespace and keeps what the phases need:
which pods exist, are Ready and run which image, which sets are Available, every pod
ADDED/DELETED event in order, and when the workload serves on a template (`serve_from`:
every pod it should have is Ready and runs the image, so every gang is whole and Ready)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import msgspec

from cliques.api.meta import Condition, ObjectMeta
from cliques.kube.client import KubeClient
from cliques.kube.informer import Informer
from cliques.kube.resources import CLIQUESETS, PODS, Resource


class _Ctr(msgspec.Struct):
    name: str = ""
    image: str = ""


class _PodSpec(msgspec.Struct):
    containers: list[_Ctr] = []
    nodeName: str = ""  # the API's name; "" until scheduled


class _Cond(msgspec.Struct):
    type: str = ""
    status: str = ""


class _PodStatus(msgspec.Struct):
    conditions: list[_Cond] = []
    containerStatuses: list[_Ctr] = []  # the API's name


class BenchPod(msgspec.Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: _PodSpec = msgspec.field(default_factory=_PodSpec)
    status: _PodStatus = msgspec.field(default_factory=_PodStatus)

    @property
    def ready(self) -> bool:
        return self.metadata.deletion_timestamp is None and any(
            c.type == "Ready" and c.status == "True" for c in self.status.conditions
        )

    def image(self, container: str = "main") -> str:
        return next((c.image for c in self.spec.containers if c.name == container), "")

    def runs(self, image: str, container: str = "main") -> bool:
        """The container asks for `image` and its status reports it running (an in-place
        update is done only then)."""
        status = next((c.image for c in self.status.containerStatuses if c.name == container), "")
        return self.image(container) == image and status == image


class _CqsStatus(msgspec.Struct, rename="camel"):
    observed_generation: int = 0
    conditions: list[Condition] = []


class BenchSet(msgspec.Struct):
    """A CliqueSet or a LeaderWorkerSet: both report `observedGeneration` and an
    `Available` condition that holds when every gang (group) is ready and up to date."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    status: _CqsStatus | None = None

    @property
    def available(self) -> bool:
        st = self.status
        return (
            st is not None
            and st.observed_generation == self.metadata.generation
            and any(c.type == "Available" and c.status == "True" for c in st.conditions)
        )


class Observer:
    def __init__(self, client: KubeClient, namespace: str, sets: Resource = CLIQUESETS) -> None:
        self.pods: Informer[Any] = Informer(client, PODS, BenchPod, namespace=namespace)
        self.sets: Informer[Any] = Informer(client, sets, BenchSet, namespace=namespace)
        self.added: list[str] = []
        self.deleted: list[str] = []
        self.pods.add_handler(self._on_pod)
        self._tasks: list[asyncio.Task[None]] = []
        #: (image, pod names) the workload must serve on, once `serve_from` is called
        self._serve: tuple[str, frozenset[str]] | None = None
        self._serving: set[str] = set()
        #: when (time.monotonic) every pod of `_serve` was first seen serving, since the call
        self.served_at: float | None = None

    def _on_pod(self, kind: str, old: Any, new: BenchPod) -> None:
        if kind == "ADDED":
            self.added.append(new.metadata.name)
        elif kind == "DELETED":
            self.deleted.append(new.metadata.name)
        if self._serve is not None:
            self._judge_serving(new, gone=kind == "DELETED")

    def serve_from(self, image: str, names: set[str]) -> None:
        """From now on, note when every pod of `names` is first Ready and running `image`
        (`served_at`; now, if they already are)."""
        self._serve = (image, frozenset(names))
        self._serving = set()
        self.served_at = None
        for pod in self.pods.store.objects():
            self._judge_serving(pod, gone=False)
        if self.served_at is None and not names:
            self.served_at = time.monotonic()

    def _judge_serving(self, pod: BenchPod, *, gone: bool) -> None:
        assert self._serve is not None
        image, names = self._serve
        name = pod.metadata.name
        if name not in names:
            return
        if not gone and pod.ready and pod.runs(image):
            self._serving.add(name)
        else:
            self._serving.discard(name)
        if self.served_at is None and len(self._serving) == len(names):
            self.served_at = time.monotonic()

    async def start(self) -> None:
        self._tasks = [asyncio.create_task(i.run()) for i in (self.pods, self.sets)]
        await asyncio.wait_for(
            asyncio.gather(self.pods.synced.wait(), self.sets.synced.wait()), timeout=60
        )

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t

    def live_pods(self) -> list[BenchPod]:
        return [p for p in self.pods.store.objects() if p.metadata.deletion_timestamp is None]

    def count(self, *, ready: bool = False, image: str | None = None, running: bool = False) -> int:
        """Live pods (Ready ones; asking for `image`; with `running`, also reporting it)."""
        n = 0
        for p in self.live_pods():
            if ready and not p.ready:
                continue
            if image is not None and p.image() != image:
                continue
            if running and image is not None and not p.runs(image):
                continue
            n += 1
        return n

    def available_sets(self) -> int:
        return sum(1 for s in self.sets.store.objects() if s.available)
