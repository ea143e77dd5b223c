"""Helpers for operator integration tests: an in-process operator, two clients, waiting.

The operator under test is the real `Manager`, run in the test's event loop and restricted
to the test's namespace, talking to the real local API server. The tests read through the
project's own `KubeClient` (typed, decoded with the operator's API types) and write
CliqueSets as a user's tooling would, through kubernetes-asyncio (`Cluster.outside`): server-
side apply with a field manager of their own. `wait_for` polls a condition with a deadline
and says what it was waiting for when it gives up.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.pod import Pod
from cliques.kube import errors
from cliques.kube.client import KubeClient
from cliques.kube.resources import CLIQUES, CLIQUESETS, PODS, Resource
from cliques.operator.manager import Config, Manager

REPO = Path(__file__).resolve().parents[2]
CRDS = REPO / "deploy" / "crds"
T = TypeVar("T")


class _List(msgspec.Struct):
    items: list[msgspec.Raw] = []


async def wait_for(
    check: Callable[[], Awaitable[T | None]], *, timeout: float = 60.0, what: str = "condition"
) -> T:
    """Poll `check` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        last = await check()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(0.2)


def install_crds(kubeconfig: str) -> None:
    env = {**os.environ, "KUBECONFIG": kubeconfig}  # keeps the session's KUBECACHEDIR
    subprocess.run(
        ["kubectl", "apply", "--server-side", "--force-conflicts", "-f", str(CRDS)],
        check=True,
        env=env,
        capture_output=True,
        timeout=60,
    )
    subprocess.run(
        [
            "kubectl",
            "wait",
            "--for=condition=established",
            "--timeout=60s",
            "crd/cliquesets.cliques.dev",
            "crd/cliques.cliques.dev",
            "crd/cliquescalinggroups.cliques.dev",
        ],
        check=True,
        env=env,
        capture_output=True,
        timeout=90,
    )


@dataclass
class Cluster:
    """Typed reads of one namespace through the project's client; CliqueSet writes through
    kubernetes-asyncio, the client users write their own tools with."""

    client: KubeClient
    namespace: str
    outside: k8s.ApiClient
    _decoders: dict[Any, Any] = field(default_factory=dict)

    async def list(self, resource: Resource, type_: type[T], selector: str = "") -> list[T]:
        raw = await self.client.list_page(
            resource, self.namespace, label_selector=selector, limit=5000
        )
        dec = self._decoders.setdefault(type_, msgspec.json.Decoder(type_))
        return [dec.decode(item) for item in msgspec.json.decode(raw, type=_List).items]

    async def pods(self) -> list[Pod]:
        return await self.list(PODS, Pod)

    async def cliques(self) -> list[Clique]:
        return await self.list(CLIQUES, Clique)

    async def cliqueset(self, name: str) -> CliqueSet:
        return await self.client.get(CLIQUESETS, self.namespace, name, CliqueSet)

    async def apply(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create or server-side apply a CliqueSet manifest through kubernetes-asyncio (field
        manager `cliques-tests`, forced, as `kubectl apply --server-side --force-conflicts`);
        returns the object the server kept."""
        body = {**body, "metadata": {**body["metadata"], "namespace": self.namespace}}
        group, version = CLIQUESETS.group, CLIQUESETS.version
        kept: dict[str, Any] = await k8s.CustomObjectsApi(
            self.outside
        ).patch_namespaced_custom_object(
            group,
            version,
            self.namespace,
            CLIQUESETS.plural,
            body["metadata"]["name"],
            body,
            field_manager=OUTSIDE_FIELD_MANAGER,
            force=True,
            _content_type="application/apply-patch+yaml",
        )
        return kept

    async def condition(self, name: str, type_: str) -> Any:
        cqs = await self.cliqueset(name)
        for c in cqs.status.conditions if cqs.status else []:
            if c.type == type_:
                return c
        return None

    async def available(self, name: str) -> CliqueSet | None:
        """The set, if its status speaks for its spec and says Available with every gang
        updated; else None."""
        cqs = await self.cliqueset(name)
        st = cqs.status
        if st is None or st.observed_generation != cqs.metadata.generation:
            return None
        ok = any(c.type == "Available" and c.status == "True" for c in st.conditions)
        return cqs if ok and st.updated_replicas == cqs.spec.replicas else None

    async def wait_available(self, name: str, timeout: float = 90.0) -> CliqueSet:
        return await wait_for(
            lambda: self.available(name), timeout=timeout, what=f"CliqueSet {name} Available"
        )

    async def wait_set_gone(self, name: str, timeout: float = 60.0) -> None:
        """Wait until CliqueSet `name` is gone (its finalizers done)."""

        async def gone() -> bool:
            try:
                await self.cliqueset(name)
            except errors.NotFound:
                return True
            return False

        await wait_for(gone, timeout=timeout, what=f"CliqueSet {name} gone")


#: The field manager of the tests' writes, as a user's tool would have its own.
OUTSIDE_FIELD_MANAGER = "cliques-tests"


@contextlib.asynccontextmanager
async def connected(kubeconfig: str, namespace: str) -> AsyncIterator[Cluster]:
    """Both clients of `namespace`: the project's for reads, kubernetes-asyncio for writes."""
    client = await KubeClient.connect(kubeconfig, qps=0, field_manager=OUTSIDE_FIELD_MANAGER)
    try:
        outside = await k8s_config.new_client_from_config(config_file=kubeconfig)
        async with outside:
            yield Cluster(client, namespace, outside)
    finally:
        await client.close()


@contextlib.asynccontextmanager
async def running_operator(
    kubeconfig: str, namespace: str, *, client: KubeClient | None = None, **overrides: Any
) -> AsyncIterator[Manager]:
    """The real operator, in this event loop, watching only `namespace`; through `client`
    if given (the test's to close), else a client of its own."""
    cfg = Config(
        kubeconfig=kubeconfig,
        namespace=namespace,
        qps=0,
        events=True,
        expectations_ttl=overrides.pop("expectations_ttl", 30.0),
        **overrides,
    )
    manager = Manager(cfg, client)
    task = asyncio.create_task(manager.run(), name=f"operator-{namespace}")
    try:
        await wait_for(lambda: _ready(manager, task), timeout=30, what="operator caches synced")
        yield manager
    finally:
        manager.stop()
        await asyncio.wait_for(task, timeout=30)


async def _ready(manager: Manager, task: asyncio.Task[None]) -> bool:
    if task.done():
        task.result()  # raise the operator's failure in the test
    return manager.ready()


async def crash(manager: Manager, task: asyncio.Task[None]) -> None:
    """Kill an in-process operator abruptly: cancel it mid-flight, no drain."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def cliqueset(
    name: str = "llama",
    replicas: int = 2,
    *,
    startup: str = "AnyOrder",
    leader: int = 1,
    workers: int = 2,
    image: str = "busybox:1.36",
    max_unavailable: int = 1,
    strategy: str = "RollingUpdate",
) -> dict[str, Any]:
    def tmpl(role: str) -> dict[str, Any]:
        return {
            "metadata": {"labels": {"app": name, "role": role}},
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": image,
                        "ports": [
                            {"name": "http", "containerPort": 8000},
                            {"name": "metrics", "containerPort": 9000},
                        ],
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                    },
                    {"name": "sidecar", "image": "busybox:1.36"},
                ],
            },
        }

    return {
        "apiVersion": "cliques.dev/v1alpha1",
        "kind": "CliqueSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "startupType": startup,
            "updateStrategy": {"type": strategy, "maxUnavailable": max_unavailable},
            "template": {
                "cliques": [
                    {"name": "leader", "replicas": leader, "template": tmpl("leader")},
                    {"name": "worker", "replicas": workers, "template": tmpl("worker")},
                ]
            },
        },
    }


class PodTracker:
    """Watches the namespace's pods with a real informer and keeps their history, so a
    test can check what happened between two moments (creates, deletes, disruption)."""

    def __init__(self, client: KubeClient, namespace: str, pods_per_gang: int) -> None:
        from cliques.kube.informer import Informer

        self.informer: Any = Informer(client, PODS, Pod, namespace=namespace)
        self.pods_per_gang = pods_per_gang
        self.added: list[str] = []  # pod names, in order of ADDED events
        self.deleted: list[str] = []
        self.uids_seen: dict[str, set[str]] = {}
        self.ready: dict[str, set[str]] = {}  # gang -> ready pod names
        self.max_disrupted = 0
        #: the fewest gangs (any index) with all their pods Ready while counting
        self.min_whole: int | None = None
        self.counting = False
        self._task: asyncio.Task[None] | None = None
        self.informer.add_handler(self._on)

    def _on(self, kind: str, old: Any, new: Pod) -> None:
        name = new.metadata.name
        gang = new.metadata.labels.get("cliques.dev/gang-index", "?")
        if kind == "ADDED":
            self.added.append(name)
        if kind == "DELETED":
            self.deleted.append(name)
        self.uids_seen.setdefault(name, set()).add(new.metadata.uid)
        ready = self.ready.setdefault(gang, set())
        if kind != "DELETED" and new.is_ready:
            ready.add(name)
        else:
            ready.discard(name)
        if self.counting:
            self.max_disrupted = max(self.max_disrupted, self.disrupted())
            self.min_whole = min(self.min_whole, self.whole()) if self.min_whole else self.whole()

    def disrupted(self) -> int:
        return sum(1 for names in self.ready.values() if len(names) < self.pods_per_gang)

    def whole(self) -> int:
        """Gangs (any index) with all their pods Ready."""
        return sum(1 for names in self.ready.values() if len(names) >= self.pods_per_gang)

    def start_counting(self) -> None:
        self.counting = True
        self.max_disrupted = self.disrupted()
        self.min_whole = self.whole()

    async def __aenter__(self) -> PodTracker:
        self._task = asyncio.create_task(self.informer.run())
        await wait_for(lambda: _synced(self.informer), timeout=30, what="pod tracker synced")
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


async def _synced(informer: Any) -> bool:
    return bool(informer.synced.is_set())
