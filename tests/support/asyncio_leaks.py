"""No test leaves an asyncio task running (a pytest plugin, loaded by the root conftest.py).

pytest-asyncio runs the tests on one event loop for the session (pyproject:
asyncio_default_test_loop_scope = "session"), so a task a test starts and never stops keeps
running through the tests after it, where it can act on their objects or fail them. After
each test's teardown (its function-scoped fixtures' included) the tasks of the loops the
tests ran on are compared with those that were there before the test's setup: any new task
still pending fails the test, at teardown, naming each task's coroutine and where it waits;
the tasks are then cancelled and awaited, so that the next test starts clean.

Tasks that a fixture of wider scope (module, session) starts while it is set up belong to
that fixture, not to the test that first asked for it, and are never counted.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Generator
from typing import Any

import pytest

LEAK_WAIT = 5.0  # seconds a leftover task gets to finish once cancelled

# The loops the tests ran on (pytest-asyncio's runners' loops) and the tasks started by the
# setup of fixtures wider than a test.
_loops: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
_fixture_tasks: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()
_BEFORE_KEY = pytest.StashKey[set[asyncio.Task[Any]]]()


def _pending() -> set[asyncio.Task[Any]]:
    return {task for loop in list(_loops) for task in asyncio.all_tasks(loop)}


def _remember_loop(value: object) -> None:
    if isinstance(value, asyncio.Runner):
        _loops.add(value.get_loop())


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: Any) -> Generator[None]:
    before = _pending()
    result = yield
    _remember_loop(result)
    if fixturedef.scope != "function":
        _fixture_tasks.update(_pending() - before)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None]:
    item.stash[_BEFORE_KEY] = _pending()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    result = yield
    before = item.stash.get(_BEFORE_KEY, set())
    left = sorted(_pending() - before - set(_fixture_tasks), key=lambda t: t.get_name())
    if left:
        lines = "\n".join(f"  {describe(task)}" for task in left)
        _stop(left)
        pytest.fail(
            f"{item.nodeid} left {len(left)} asyncio task(s) running (cancel and await what a "
            f"test starts):\n{lines}",
            pytrace=False,
        )
    return result


def describe(task: asyncio.Task[Any]) -> str:
    """`name: coroutine (file:line where it waits)`."""
    coro = task.get_coro()
    name = getattr(coro, "__qualname__", None) or repr(coro)
    frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
    where = f" at {frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else ""
    return f"{task.get_name()}: {name}(){where}"


def _stop(tasks: list[asyncio.Task[Any]]) -> None:
    """Cancel the tasks and let their loops run until they are done (or LEAK_WAIT passes)."""
    for task in tasks:
        task.cancel()
    by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Task[Any]]] = {}
    for task in tasks:
        by_loop.setdefault(task.get_loop(), []).append(task)
    for loop, mine in by_loop.items():
        if not loop.is_closed() and not loop.is_running():
            loop.run_until_complete(asyncio.wait(mine, timeout=LEAK_WAIT))
