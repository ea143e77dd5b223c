"""The status hold (`StatusHold`), with no cluster: progress waits for its timer, news is
written at once, and a stretching hold follows how long objects take from progress to news."""

from __future__ import annotations

import asyncio

import pytest

from cliques.controllers.base.status_hold import MARGIN, StatusHold


def progress(old: int, new: int) -> bool:
    """A toy status: a count, where going up is progress and anything else news."""
    return new > old


def make(seconds: float = 10.0, stretch: float = 1.0) -> tuple[StatusHold, list[str]]:
    woken: list[str] = []
    return StatusHold(seconds, woken.append, progress, stretch=stretch), woken


async def test_progress_is_held_and_news_is_not() -> None:
    hold, _ = make()
    assert hold.hold("a", 0, 1)
    assert "a" in hold
    assert not hold.hold("a", 1, 0), "news is written at once"
    assert "a" not in hold


async def test_a_held_status_is_due_when_its_timer_fires() -> None:
    hold, woken = make(seconds=0.02)
    assert hold.hold("a", 0, 1)
    for _ in range(100):
        if woken:
            break
        await asyncio.sleep(0.01)
    assert woken == ["a"]
    assert not hold.hold("a", 0, 2), "past its time the progress is written"


async def test_more_progress_does_not_postpone_the_write() -> None:
    hold, _ = make(seconds=5.0)
    hold.hold("a", 0, 1)
    first = hold.arm("a").when()
    hold.hold("a", 1, 2)
    assert hold.arm("a").when() == first
    hold.forget("a")


async def test_a_hold_without_stretch_stays_put() -> None:
    hold, _ = make(seconds=10.0)
    hold.observe(100.0)
    assert hold.seconds == 10.0


async def test_a_stretching_hold_follows_the_time_to_news_within_its_bounds() -> None:
    hold, _ = make(seconds=10.0, stretch=6.0)
    hold.observe(2.0)
    assert hold.seconds == 10.0, "never below the base"
    for _ in range(5):
        hold.observe(30.0)  # pods now take longer: the typical time moves towards 30 s
    assert 10.0 < hold.seconds < MARGIN * 30.0
    for _ in range(100):
        hold.observe(30.0)
    assert hold.seconds == pytest.approx(MARGIN * 30.0, rel=0.01)
    for _ in range(100):
        hold.observe(600.0)
    assert hold.seconds == 60.0, "never above stretch x base"
    for _ in range(100):
        hold.observe(1.0)
    assert hold.seconds == 10.0, "and back down when pods are quick again"


async def test_the_time_to_news_is_measured_from_the_first_progress() -> None:
    hold, _ = make(seconds=0.01, stretch=100.0)
    assert hold.hold("a", 0, 1)
    await asyncio.sleep(0.05)
    assert not hold.hold("a", 0, 2), "expired: written"
    hold.hold("a", 2, 3)  # more progress: a new timer, the same first progress
    await asyncio.sleep(0.05)
    assert not hold.hold("a", 3, 0)  # news
    assert hold.typical >= 0.1
    assert hold.seconds == pytest.approx(MARGIN * hold.typical)


async def test_a_forgotten_object_teaches_nothing() -> None:
    hold, _ = make(seconds=10.0, stretch=6.0)
    hold.hold("a", 0, 1)
    hold.forget("a")
    assert not hold.hold("a", 1, 0)
    assert hold.typical == 0.0 and "a" not in hold


def make_waking(seconds: float, stretch: float) -> tuple[StatusHold, list[str], asyncio.Event]:
    """A hold whose enqueues are recorded and set an Event."""
    woken: list[str] = []
    event = asyncio.Event()

    def enqueue(key: str) -> None:
        woken.append(key)
        event.set()

    return StatusHold(seconds, enqueue, progress, stretch=stretch), woken, event


async def _fired(event: asyncio.Event, timeout: float = 2.0) -> float:
    """Wait (with a timeout) until the hold enqueued something; the loop time it did."""
    await asyncio.wait_for(event.wait(), timeout)
    return asyncio.get_running_loop().time()


async def test_a_hold_that_stretched_while_armed_runs_to_its_new_end() -> None:
    hold, woken, event = make_waking(seconds=0.1, stretch=20.0)
    start = asyncio.get_running_loop().time()
    assert hold.hold("a", 0, 1)  # armed for 0.1 s
    # Meanwhile other objects took long from progress to news: the hold is now 1.5 s.
    hold.observe(1.0)
    assert hold.seconds == pytest.approx(MARGIN * 1.0)
    fired = await _fired(event, timeout=5.0)
    assert woken == ["a"]
    assert fired - start >= MARGIN * 1.0 - 0.05, "the timer ran to the stretched end"
    assert not hold.hold("a", 0, 2), "past its stretched end the progress is written"


async def test_a_hold_that_did_not_stretch_fires_at_its_time() -> None:
    hold, woken, event = make_waking(seconds=0.1, stretch=20.0)
    start = asyncio.get_running_loop().time()
    assert hold.hold("a", 0, 1)
    fired = await _fired(event)
    assert woken == ["a"]
    assert fired - start < 1.0, "not re-armed: no stretch since it was armed"


async def test_a_released_hold_is_not_re_armed() -> None:
    hold, woken, event = make_waking(seconds=0.05, stretch=20.0)
    assert hold.hold("a", 0, 1)
    hold.observe(1.0)
    assert not hold.hold("a", 1, 0)  # news: written, timer cancelled
    with pytest.raises(TimeoutError):
        await _fired(event, timeout=0.3)  # well past the first end (0.05 s)
    assert woken == [] and "a" not in hold
