"""When the informer says a stretch of list and watch failures ended: as soon as the API
server answers the next watch, not at its first event, which on a quiet collection is the
next bookmark a minute later (a log that said "after 60s" for a watch back in one second
sent people looking for an outage that was not there)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest

from cliques.api.pod import Pod
from cliques.kube.client import WatchEvent
from cliques.kube.informer import Informer
from cliques.kube.resources import PODS


class Flaky:
    """Lists nothing; its first two watches fail mid-stream, the third is answered and then
    stays quiet (no event, no bookmark)."""

    def __init__(self) -> None:
        self.watches = 0
        self.opened = asyncio.Event()

    async def list_page(self, *a: Any, **kw: Any) -> bytes:
        return b'{"metadata": {"resourceVersion": "5"}, "items": []}'

    async def watch(
        self, *a: Any, on_open: Callable[[], None] | None = None, **kw: Any
    ) -> AsyncIterator[WatchEvent]:
        self.watches += 1
        if self.watches <= 2:
            raise aiohttp.ClientPayloadError("Response payload is not completed")
        if on_open is not None:
            on_open()
        self.opened.set()
        await asyncio.sleep(3600)
        yield WatchEvent("BOOKMARK", b"{}")  # pragma: no cover: never reached


@pytest.mark.parametrize("answered", [True, False], ids=["answered", "not-yet"])
def test_a_stretch_ends_when_the_watch_is_answered(
    answered: bool, caplog: pytest.LogCaptureFixture
) -> None:
    client = Flaky()
    informer = Informer(client, PODS, Pod)  # type: ignore[arg-type]

    async def run() -> None:
        task = asyncio.create_task(informer.run())
        try:
            await asyncio.wait_for(client.opened.wait(), timeout=10)
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    if not answered:
        informer._opened = lambda: None  # type: ignore[method-assign]
    with caplog.at_level(logging.INFO, logger="cliques.kube.informer"):
        asyncio.run(run())
    said = [r.getMessage() for r in caplog.records]
    assert any("watch connection dropped" in m for m in said), said
    assert any("retrying with backoff" in m for m in said), said
    ended = [m for m in said if "listing and watching again" in m]
    assert bool(ended) is answered, said
