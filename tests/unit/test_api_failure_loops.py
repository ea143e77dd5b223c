"""The operator's background loops outlive a failed API call of any kind.

A dropped connection surfaces from aiohttp as `ServerDisconnectedError`, which is neither
an `ApiError` nor an `OSError`. The event recorder and the shard coordinator used to catch
only those two, so one such drop ended the recorder's task (no Event was recorded again)
or the coordination loop, and a failed hand-back of one lease on shutdown left the next
shards undrained. They now catch `errors.API_FAILURES`, the shared list.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from cliques.kube import errors
from cliques.kube.events import EventRecorder, ObjectRef
from cliques.operator.shard_leases import Lease, LeaseMeta, LeaseSpec, ShardCoordinator, Timings

DROPPED = aiohttp.ServerDisconnectedError()


def test_a_dropped_connection_is_one_of_the_api_failures() -> None:
    assert not isinstance(DROPPED, errors.ApiError | OSError)
    assert isinstance(DROPPED, errors.API_FAILURES)


class _Events:
    """Answers the recorder's creates: the first fails as a dropped connection."""

    def __init__(self) -> None:
        self.created: list[str] = []
        self.calls = 0

    async def create(self, _resource: Any, _ns: str, body: Any, _type: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            raise DROPPED
        self.created.append(body["reason"])
        return {}


async def test_the_event_recorder_records_again_after_a_dropped_connection() -> None:
    client = _Events()
    rec = EventRecorder(client)  # type: ignore[arg-type]
    rec.start()
    ref = ObjectRef(api_version="v1", kind="Pod", namespace="ns", name="p", uid="uid-1")
    rec.record(ref, "Normal", "First", "lost with the connection")
    rec.record(ref, "Normal", "Second", "recorded")
    await asyncio.wait_for(rec._queue.join(), timeout=5)
    assert client.created == ["Second"]
    assert rec._task is not None and not rec._task.done()
    await rec.stop()


def _make(cls: type[ShardCoordinator], **kw: Any) -> ShardCoordinator:
    async def nothing(_shard: int, *_: Any) -> None:
        return None

    defaults: dict[str, Any] = {
        "client": None,
        "namespace": "ns",
        "identity": "me",
        "shards": 2,
        "start_shard": nothing,
        "stop_shard": nothing,
        "timings": Timings(lease_duration=0.3, renew_deadline=0.2, retry_period=0.01),
    }
    return cls(**{**defaults, **kw})


async def test_the_coordination_loop_goes_on_after_a_dropped_connection() -> None:
    ticks = 0

    class Flaky(ShardCoordinator):
        async def tick(self) -> None:
            nonlocal ticks
            ticks += 1
            if ticks == 1:
                raise DROPPED
            self.stop()

    await asyncio.wait_for(_make(Flaky).run(), timeout=5)
    assert ticks == 2


def _lease(shard: int) -> Lease:
    return Lease(
        metadata=LeaseMeta(
            name=f"cliques-shard-{shard}",
            resource_version="1",
            annotations={"cliques.dev/instance": "me-1"},
        ),
        spec=LeaseSpec(holder_identity="me"),
    )


async def test_shutdown_drains_every_shard_when_a_lease_cannot_be_handed_back() -> None:
    stopped: list[int] = []
    deleted: list[str] = []
    lists = 0

    async def stop_shard(shard: int, hard: bool, _grace: float) -> None:
        assert not hard  # a hand-back drains
        stopped.append(shard)

    class Client:
        async def delete(self, _resource: Any, _ns: str, name: str) -> None:
            deleted.append(name)

    class Coordinator(ShardCoordinator):
        async def _list(self) -> dict[str, Lease]:
            nonlocal lists
            lists += 1
            if lists == 1:  # the re-read inside the first shard's hand-back
                raise DROPPED
            return {lease.metadata.name: lease for lease in (_lease(0), _lease(1))}

        async def _update(self, lease: Lease, *, holder: str | None, acquire: bool = False) -> bool:
            return True

    coord = _make(Coordinator, stop_shard=stop_shard, client=Client(), instance="me-1")
    coord.owned = {0: coord.clock(), 1: coord.clock()}
    coord._member_written = True
    await coord.release_all()
    assert sorted(stopped) == [0, 1]
    assert lists == 2  # shard 1 was handed back although shard 0's hand-back failed
    assert deleted == ["cliques-member-me"]
    assert coord.owned == {}
