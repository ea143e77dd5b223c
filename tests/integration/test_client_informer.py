"""The Informer against the real local API server: paged lists, watch order, 410 Gone, and
the server-side label selector.

Every test runs in its own namespace (the `namespace` fixture), writes ConfigMaps through a
real `KubeClient` and watches them with a real `Informer`; nothing is mocked. Conditions are
awaited with deadlines; "nothing else arrived" is proven with a marker object written last,
since a watch delivers events in resourceVersion order.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec
import pytest
from prometheus_client import REGISTRY

from cliques.api.meta import ObjectMeta
from cliques.kube.client import KubeClient
from cliques.kube.informer import Informer, Pacing
from cliques.kube.resources import Resource

pytestmark = pytest.mark.cluster

T = TypeVar("T")

CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
LABEL = "cliques.dev/informer-test"
SELECTOR = f"{LABEL}=yes"


class ConfigMap(msgspec.Struct, kw_only=True, omit_defaults=True):
    metadata: ObjectMeta
    data: dict[str, str] = msgspec.field(default_factory=dict)


# --- helpers ------------------------------------------------------------------------------


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def lists_done() -> float:
    return metric("cliques_api_requests_total", verb="list", resource="configmaps", code="200")


def gone_relists() -> float:
    return metric("cliques_informer_relists_total", resource="configmaps", reason="gone")


async def wait_for(
    check: Callable[[], Awaitable[T | None] | T | None], *, timeout: float, what: str
) -> T:
    """Poll `check` (sync or async) until it returns something truthy, with a deadline."""
    deadline = time.monotonic() + timeout
    while True:
        last = check()
        if asyncio.iscoroutine(last):
            last = await last
        if last:
            return last  # type: ignore[return-value]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(0.05)


def configmap(name: str, *, labelled: bool = True, **data: str) -> dict[str, Any]:
    labels = {LABEL: "yes"} if labelled else {"other": "yes"}
    return {"metadata": {"name": name, "labels": labels}, "data": data}


async def create_many(
    client: KubeClient, ns: str, bodies: list[dict[str, Any]], parallel: int = 16
) -> list[ConfigMap]:
    gate = asyncio.Semaphore(parallel)

    async def one(body: dict[str, Any]) -> ConfigMap:
        async with gate:
            return await client.create(CONFIGMAPS, ns, body, ConfigMap)

    return list(await asyncio.gather(*(one(b) for b in bodies)))


@dataclass(frozen=True)
class Event:
    kind: str
    name: str
    rv: str
    old_rv: str | None
    data: dict[str, str]


class Recorder:
    """An informer handler that keeps every event it is given, in order."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, kind: str, old: ConfigMap | None, new: ConfigMap) -> None:
        self.events.append(
            Event(
                kind,
                new.metadata.name,
                new.metadata.resource_version,
                old.metadata.resource_version if old is not None else None,
                dict(new.data),
            )
        )

    def take(self) -> list[Event]:
        events, self.events = self.events, []
        return events


@contextlib.asynccontextmanager
async def running(informer: Informer[Any], timeout: float = 120.0) -> AsyncIterator[None]:
    """Run `informer` in the background until the block ends; wait for its first sync."""
    task = asyncio.create_task(informer.run(), name=f"informer-{informer.resource.plural}")

    async def synced() -> bool:
        if task.done():
            task.result()  # the informer died: raise its error here
        return informer.synced.is_set()

    try:
        await wait_for(synced, timeout=timeout, what=f"{informer!r} to sync")
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@pytest.fixture
async def client(kubeconfig: str) -> AsyncIterator[KubeClient]:
    kube = await KubeClient.connect(kubeconfig, qps=0, field_manager="cliques-tests")
    try:
        yield kube
    finally:
        await kube.close()


def names(keys: list[str]) -> set[str]:
    """Object names from store keys (`namespace/name`)."""
    return {key.partition("/")[2] for key in keys}


# --- (a) paginated list, (d) server-side label selector -----------------------------------

PAGED = 1200
PAGE_SIZE = 500


async def test_paginated_list_fills_the_store_with_exactly_the_selected_objects(
    client: KubeClient, namespace: str
) -> None:
    selected = [configmap(f"cm-{i:04d}", index=str(i)) for i in range(PAGED)]
    others = [configmap(f"other-{i:02d}", labelled=False) for i in range(20)]
    created = await create_many(client, namespace, selected + others)
    want = {cm.metadata.name for cm in created[:PAGED]}

    informer = Informer(
        client,
        CONFIGMAPS,
        ConfigMap,
        namespace=namespace,
        label_selector=SELECTOR,
        pacing=Pacing(page_size=PAGE_SIZE),
    )
    recorder = Recorder()
    informer.add_handler(recorder)
    lists_before = lists_done()
    async with running(informer):
        pages = lists_done() - lists_before
        # (a) exactly the labelled objects, fetched in pages of at most PAGE_SIZE
        assert names(informer.store.keys()) == want
        assert len(informer.store) == PAGED
        least = math.ceil(PAGED / PAGE_SIZE)  # 3: no page holds more than PAGE_SIZE
        assert pages >= least, f"{PAGED} objects came in {pages:.0f} LISTs, not {least}+ pages"
        sync_events = recorder.take()
        assert [e.kind for e in sync_events] == ["ADDED"] * PAGED
        assert {e.name for e in sync_events} == want  # each object once: no duplicate ADDED
        by_name = {cm.metadata.name: cm for cm in created}
        for cached in informer.store.objects():
            assert cached.metadata.resource_version == (
                by_name[cached.metadata.name].metadata.resource_version
            )
            assert cached.data == {"index": str(int(cached.metadata.name.removeprefix("cm-")))}

        # (d) writes to objects without the label never reach the informer: the server
        # filters them out of the watch too, and an object that gains or loses the label
        # enters or leaves the selection. The marker, written last, proves the watch has
        # delivered everything before it.
        ns = namespace
        await client.patch(CONFIGMAPS, ns, "other-00", {"data": {"v": "2"}}, ConfigMap)
        await client.create(CONFIGMAPS, ns, configmap("other-new", labelled=False), ConfigMap)
        await client.delete(CONFIGMAPS, ns, "other-01")
        relabel = {"metadata": {"labels": {LABEL: "yes"}}}
        await client.patch(CONFIGMAPS, ns, "other-02", relabel, ConfigMap)
        relabel = {"metadata": {"labels": {LABEL: None}}}  # merge patch: remove the label
        await client.patch(CONFIGMAPS, ns, "other-02", relabel, ConfigMap)
        await client.patch(CONFIGMAPS, ns, "other-02", {"data": {"v": "3"}}, ConfigMap)
        await client.create(CONFIGMAPS, ns, configmap("marker"), ConfigMap)
        await wait_for(lambda: f"{ns}/marker" in informer.store, timeout=60, what="the marker")
        assert [(e.kind, e.name) for e in recorder.take()] == [
            ("ADDED", "other-02"),
            ("DELETED", "other-02"),
            ("ADDED", "marker"),
        ]
        assert names(informer.store.keys()) == want | {"marker"}
        assert not any(n.startswith("other-") for n in names(informer.store.keys()))


# --- (b) the watch: adds, updates and deletes, in order -----------------------------------


async def test_watch_delivers_adds_updates_and_deletes_in_order(
    client: KubeClient, namespace: str
) -> None:
    informer = Informer(client, CONFIGMAPS, ConfigMap, namespace=namespace, label_selector=SELECTOR)
    recorder = Recorder()
    informer.add_handler(recorder)
    async with running(informer):
        assert recorder.take() == []  # kube-root-ca.crt has no label: not ours
        ns = namespace
        a1 = await client.create(CONFIGMAPS, ns, configmap("a", v="1"), ConfigMap)
        b1 = await client.create(CONFIGMAPS, ns, configmap("b", v="1"), ConfigMap)
        a2 = await client.patch(CONFIGMAPS, ns, "a", {"data": {"v": "2"}}, ConfigMap)
        b1.data["v"] = "2"
        b2 = await client.replace(CONFIGMAPS, ns, "b", b1, ConfigMap)  # PUT, with b1's version
        await client.delete(CONFIGMAPS, ns, "a", uid=a1.metadata.uid)
        b3 = await client.patch(CONFIGMAPS, ns, "b", {"data": {"v": "3"}}, ConfigMap)
        await client.delete(CONFIGMAPS, ns, "b", resource_version=b3.metadata.resource_version)
        c1 = await client.create(CONFIGMAPS, ns, configmap("c", v="1"), ConfigMap)

        await wait_for(lambda: len(recorder.events) >= 8, timeout=60, what="8 watch events")
        events = recorder.take()
        rv = {
            "a1": a1.metadata.resource_version,
            "a2": a2.metadata.resource_version,
            "b1": b1.metadata.resource_version,
            "b2": b2.metadata.resource_version,
            "b3": b3.metadata.resource_version,
            "c1": c1.metadata.resource_version,
        }
        got = [(e.kind, e.name, e.old_rv, e.data) for e in events]
        assert got == [
            ("ADDED", "a", None, {"v": "1"}),
            ("ADDED", "b", None, {"v": "1"}),
            ("MODIFIED", "a", rv["a1"], {"v": "2"}),
            ("MODIFIED", "b", rv["b1"], {"v": "2"}),
            ("DELETED", "a", rv["a2"], {"v": "2"}),
            ("MODIFIED", "b", rv["b2"], {"v": "3"}),
            ("DELETED", "b", rv["b3"], {"v": "3"}),
            ("ADDED", "c", None, {"v": "1"}),
        ]
        # each event carries the version the write produced (a delete gets a new one)
        assert [e.rv for e in events if e.kind != "DELETED"] == [
            rv["a1"],
            rv["b1"],
            rv["a2"],
            rv["b2"],
            rv["b3"],
            rv["c1"],
        ]
        # one etcd: versions grow with every write, so the order is the order of the writes
        versions = [int(e.rv) for e in events]
        assert versions == sorted(versions) and len(set(versions)) == len(versions)
        assert names(informer.store.keys()) == {"c"}
        # the informer resumes after the last event (or a later bookmark)
        assert int(informer.resource_version) >= int(events[-1].rv)


# --- (c) 410 Gone: relist, and deliver only the differences -------------------------------


async def test_410_gone_relists_and_delivers_only_the_differences(
    client: KubeClient, namespace: str
) -> None:
    ns = namespace
    await create_many(client, ns, [configmap(f"cm-{i:02d}", v="1") for i in range(50)])
    informer = Informer(
        client, CONFIGMAPS, ConfigMap, namespace=ns, label_selector=SELECTOR, pacing=Pacing(20)
    )
    recorder = Recorder()
    informer.add_handler(recorder)

    def relisted_after(before: float) -> Callable[[], bool]:
        # The relist counts itself first and sets its resourceVersion last.
        return lambda: gone_relists() > before and informer.resource_version not in ("", "1")

    async with running(informer):
        assert len(recorder.take()) == 50
        # A live watch is cut and resumed from an ancient version, as after a long
        # disconnect: the API server answers 410 Gone, the informer relists. Nothing
        # changed, so the handlers hear nothing.
        before = gone_relists()
        informer.interrupt_watch(resume_from="1")
        await wait_for(relisted_after(before), timeout=60, what="a relist after 410 Gone")
        assert gone_relists() == before + 1
        await client.create(CONFIGMAPS, ns, configmap("marker-1"), ConfigMap)
        await wait_for(lambda: f"{ns}/marker-1" in informer.store, timeout=60, what="marker-1")
        assert [(e.kind, e.name) for e in recorder.take()] == [("ADDED", "marker-1")]

    # The informer is down while the world changes; it comes back resuming from an ancient
    # version: 410 Gone, relist, and the handlers get exactly the differences.
    cached = {cm.metadata.name: cm for cm in informer.store.objects()}
    changed: dict[str, str] = {}
    for name in ("cm-00", "cm-01", "cm-02"):
        cm = await client.patch(CONFIGMAPS, ns, name, {"data": {"v": "2"}}, ConfigMap)
        changed[name] = cm.metadata.resource_version
    await client.delete(CONFIGMAPS, ns, "cm-03")
    await client.delete(CONFIGMAPS, ns, "cm-04")
    await client.patch(CONFIGMAPS, ns, "cm-05", {"metadata": {"labels": {LABEL: "no"}}}, ConfigMap)
    added = await create_many(client, ns, [configmap("new-00"), configmap("new-01")])
    await client.create(CONFIGMAPS, ns, configmap("unlabelled", labelled=False), ConfigMap)
    # deleted and made again under the same name: another object (another UID)
    await client.delete(CONFIGMAPS, ns, "cm-06")
    added.append(await client.create(CONFIGMAPS, ns, configmap("cm-06", v="9"), ConfigMap))

    before = gone_relists()
    informer.interrupt_watch(resume_from="1")
    async with running(informer):
        await wait_for(relisted_after(before), timeout=60, what="a relist after 410 Gone")
        assert gone_relists() == before + 1
        events = recorder.take()
        by_kind: dict[str, list[str]] = {}
        for e in events:
            by_kind.setdefault(e.kind, []).append(e.name)
        assert {k: sorted(v) for k, v in by_kind.items()} == {
            "MODIFIED": ["cm-00", "cm-01", "cm-02"],
            "DELETED": ["cm-03", "cm-04", "cm-05", "cm-06"],
            "ADDED": ["cm-06", "new-00", "new-01"],
        }
        # the old cm-06 goes before the new one comes, and the old is what went
        again = [e for e in events if e.name == "cm-06"]
        assert [e.kind for e in again] == ["DELETED", "ADDED"]
        assert again[0].rv == cached["cm-06"].metadata.resource_version
        assert again[1].data == {"v": "9"}
        for e in events:
            if e.kind == "MODIFIED":
                assert e.old_rv == cached[e.name].metadata.resource_version
                assert e.rv == changed[e.name] and e.data == {"v": "2"}
            if e.kind == "ADDED":
                assert e.old_rv is None
        assert {e.rv for e in events if e.kind == "ADDED"} == {
            cm.metadata.resource_version for cm in added
        }
        want = (set(cached) - {"cm-03", "cm-04", "cm-05"}) | {"new-00", "new-01"}
        assert names(informer.store.keys()) == want

        # and the watch goes on from the relist
        await client.create(CONFIGMAPS, ns, configmap("marker-2"), ConfigMap)
        await wait_for(lambda: f"{ns}/marker-2" in informer.store, timeout=60, what="marker-2")
        assert [(e.kind, e.name) for e in recorder.take()] == [("ADDED", "marker-2")]


async def test_an_unserved_custom_resource_is_retried_with_a_hint(
    client: KubeClient, caplog: pytest.LogCaptureFixture
) -> None:
    """A list of a type nobody serves (its CRD not installed yet) is retried, and the log
    says what to install rather than only "404 page not found", once: the retries of the
    same failure are at debug level."""
    missing = Resource("nothing.cliques.dev", "v1", "ghosts", "Ghost")
    informer = Informer(client, missing, ConfigMap)
    caplog.set_level("DEBUG", logger="cliques.kube.informer")
    task = asyncio.create_task(informer.run())
    try:
        await wait_for(
            lambda: sum("ghosts" in r.getMessage() for r in caplog.records) >= 3,
            timeout=30,
            what="three failed lists of ghosts",
        )
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    warned = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1, [r.getMessage() for r in warned]
    message = warned[0].getMessage()
    assert message.startswith("ghosts ns=*: ")
    assert "404 Not Found" in message
    assert (
        "does not serve ghosts.nothing.cliques.dev/v1: is its CustomResourceDefinition "
        "installed?" in message
    )
    assert not informer.synced.is_set()
