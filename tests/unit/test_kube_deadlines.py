"""`Deadlines`: one check for the deadlines of all requests in flight (no cluster).

A "request" here is a task awaiting a future that never completes, between `start` and
`finish` as `KubeClient.request` does it.
"""

from __future__ import annotations

import asyncio

import pytest

from cliques.kube.client import Deadlines


async def request(deadlines: Deadlines, forever: asyncio.Future[None]) -> str:
    """`KubeClient.request`'s use of `Deadlines` around an await."""
    task = asyncio.current_task()
    assert task is not None
    deadlines.start(task)
    try:
        await forever
    except asyncio.CancelledError:
        if deadlines.overran(task):
            return "timeout"
        raise
    finally:
        deadlines.finish(task)
    return "answered"


async def test_a_request_past_its_deadline_is_ended_a_tick_late_at_most() -> None:
    deadlines = Deadlines(0.2, tick=0.05)
    loop = asyncio.get_running_loop()
    started = loop.time()
    outcome = await asyncio.create_task(request(deadlines, loop.create_future()))
    took = loop.time() - started
    assert outcome == "timeout"
    assert 0.2 <= took < 0.2 + 0.05 + 0.2, took
    assert deadlines._due == {} and deadlines._expired == set()
    await asyncio.sleep(0.1)
    assert deadlines._timer is None  # nothing in flight: the check is not re-armed


async def test_an_answered_request_is_untouched_and_the_check_stops() -> None:
    deadlines = Deadlines(0.2, tick=0.05)
    loop = asyncio.get_running_loop()
    answer = loop.create_future()
    task = asyncio.create_task(request(deadlines, answer))
    await asyncio.sleep(0.1)
    answer.set_result(None)
    assert await task == "answered"
    await asyncio.sleep(0.3)  # past the deadline it had
    assert task.cancelling() == 0
    assert deadlines._timer is None and deadlines._due == {}


async def test_only_overdue_requests_are_ended() -> None:
    deadlines = Deadlines(0.3, tick=0.05)
    loop = asyncio.get_running_loop()
    early = asyncio.create_task(request(deadlines, loop.create_future()))
    await asyncio.sleep(0.2)
    late_answer = loop.create_future()
    late = asyncio.create_task(request(deadlines, late_answer))
    assert await early == "timeout"
    assert not late.done()
    late_answer.set_result(None)
    assert await late == "answered"


async def test_an_outside_cancellation_wins_over_the_deadline() -> None:
    deadlines = Deadlines(10.0, tick=5.0)
    loop = asyncio.get_running_loop()
    task = asyncio.create_task(request(deadlines, loop.create_future()))
    await asyncio.sleep(0)
    # Its deadline has passed and the check cancels it; someone else cancels it too.
    deadlines._due[task] = loop.time() - 1
    deadlines._check(loop)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert deadlines._due == {} and deadlines._expired == set()


async def test_a_cancellation_turned_into_another_error_is_withdrawn() -> None:
    """A library that turns the CancelledError into its own error: `finish` withdraws the
    deadline's cancellation, so the task is not left cancelling."""
    deadlines = Deadlines(10.0, tick=5.0)
    loop = asyncio.get_running_loop()

    async def converting() -> None:
        task = asyncio.current_task()
        assert task is not None
        deadlines.start(task)
        try:
            try:
                await loop.create_future()
            except asyncio.CancelledError:
                raise ConnectionError("closed") from None
        finally:
            deadlines.finish(task)

    task = asyncio.create_task(converting())
    await asyncio.sleep(0)
    deadlines._due[task] = loop.time() - 1
    deadlines._check(loop)
    with pytest.raises(ConnectionError):
        await task
    assert task.cancelling() == 0
    assert deadlines._expired == set()


def test_a_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="must be positive"):
        Deadlines(0)
