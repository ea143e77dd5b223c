"""The check that no test leaves an asyncio task running (tests/support/asyncio_leaks.py),
run by pytest itself on a few small test files (pytester, in a subprocess)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
INI = """\
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = session
asyncio_default_test_loop_scope = session
"""
TESTS = """
import asyncio

import pytest


@pytest.fixture(scope="session")
async def server():
    task = asyncio.create_task(asyncio.sleep(3600), name="session-server")
    yield task
    task.cancel()


@pytest.fixture
async def worker():
    task = asyncio.create_task(asyncio.sleep(3600), name="worker")
    yield task
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_leaves_a_task(server):
    asyncio.create_task(asyncio.sleep(3600), name="sleeper")


async def test_stops_what_it_starts(server, worker):
    task = asyncio.create_task(asyncio.sleep(3600))
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_the_leftover_was_stopped():
    names = {t.get_name() for t in asyncio.all_tasks()}
    assert "sleeper" not in names
    assert "session-server" in names


def test_sync():
    pass
"""


@pytest.fixture
def leaky(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pythonpath = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(pythonpath))
    pytester.makeini(INI)
    pytester.makeconftest('pytest_plugins = ["tests.support.asyncio_leaks"]\n')
    pytester.makepyfile(test_leaky=TESTS)
    return pytester


def test_a_task_left_running_fails_the_test_that_started_it(leaky: pytest.Pytester) -> None:
    result = leaky.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=4, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_leaves_a_task*",
            "test_leaky.py::test_leaves_a_task left 1 asyncio task(s) running*",
            "  sleeper: sleep() at *",
        ]
    )
    result.stdout.no_fnmatch_line("*session-server:*")
    result.stdout.no_fnmatch_line("*worker:*")
