"""A half-open watch is noticed: a TCP proxy between the informer and the real API server
stops forwarding bytes (without closing anything, as a dead peer or a broken NAT does), and
the informer restarts its watch from its last resourceVersion within its read deadline,
instead of waiting for the watch's own timeout (minutes)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import msgspec
import pytest
import yaml

from cliques.api.meta import ObjectMeta
from cliques.kube.client import KubeClient
from cliques.kube.informer import Informer, Pacing
from cliques.kube.resources import Resource

pytestmark = pytest.mark.cluster

CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
READ_DEADLINE = 2.0


class ConfigMap(msgspec.Struct, kw_only=True, omit_defaults=True):
    metadata: ObjectMeta
    data: dict[str, str] = msgspec.field(default_factory=dict)


class StallingProxy:
    """Forwards TCP both ways; `stall()` freezes every connection open at that moment
    (bytes are read from neither side any more, nothing is closed)."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.frozen: set[asyncio.Event] = set()
        self.live: set[asyncio.Event] = set()
        self.server: asyncio.Server | None = None
        self.port = 0
        self.tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._conn, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    def stall(self) -> None:
        self.frozen |= self.live
        self.live = set()

    async def _pipe(
        self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, gate: asyncio.Event
    ) -> None:
        with contextlib.suppress(OSError, asyncio.CancelledError):
            while True:
                data = await src.read(65536)
                if gate in self.frozen:
                    await asyncio.Event().wait()  # hold it: never forward, never close
                if not data:
                    break
                dst.write(data)
                await dst.drain()
        dst.close()

    async def _conn(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        gate = asyncio.Event()
        self.live.add(gate)
        for coro in (self._pipe(reader, up_writer, gate), self._pipe(up_reader, writer, gate)):
            task = asyncio.create_task(coro)
            self.tasks.add(task)

    async def close(self) -> None:
        assert self.server is not None
        self.server.close()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


async def wait_for(check, timeout: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(0.05)


async def test_a_watch_that_stops_receiving_bytes_is_restarted(
    kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    config = yaml.safe_load(Path(kubeconfig).read_text())
    server = config["clusters"][0]["cluster"]["server"]
    host, port = server.removeprefix("https://").rsplit(":", 1)
    proxy = StallingProxy(host, int(port))
    await proxy.start()
    config["clusters"][0]["cluster"]["server"] = f"https://{host}:{proxy.port}"
    proxied = tmp_path / "kubeconfig"
    proxied.write_text(yaml.safe_dump(config))
    direct = await KubeClient.connect(kubeconfig)
    client = await KubeClient.connect(str(proxied))
    informer: Informer[ConfigMap] = Informer(
        client,
        CONFIGMAPS,
        ConfigMap,
        namespace=namespace,
        pacing=Pacing(watch_read_timeout=READ_DEADLINE),
    )
    task = asyncio.create_task(informer.run())
    try:
        await wait_for(informer.synced.is_set, 30, "informer synced")
        body = {"metadata": {"name": "before"}, "data": {"a": "1"}}
        await direct.create(CONFIGMAPS, namespace, body, ConfigMap)
        await wait_for(lambda: informer.store.get(f"{namespace}/before") is not None, 30, "before")
        rv_before = informer.resource_version
        proxy.stall()
        stalled = time.monotonic()
        body = {"metadata": {"name": "after"}, "data": {"a": "2"}}
        await direct.create(CONFIGMAPS, namespace, body, ConfigMap)
        await wait_for(
            lambda: informer.store.get(f"{namespace}/after") is not None,
            8 * READ_DEADLINE,
            "the event sent after the stall",
        )
        noticed = time.monotonic() - stalled
        assert noticed < 8 * READ_DEADLINE
        # resumed from where it was (no relist): the cache kept the earlier object
        assert informer.resource_version != rv_before
        assert informer.store.get(f"{namespace}/before") is not None
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await client.close()
        await direct.close()
        await proxy.close()
