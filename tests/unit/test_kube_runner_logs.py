"""How the runner logs a failed reconcile: an API server's answer (even wrapped, as a plan's
failed writes are) is one line; a bug keeps its traceback."""

from __future__ import annotations

import asyncio
import logging

import pytest

from cliques.kube import errors
from cliques.kube.runner import Result, Runner
from cliques.kube.workqueue import WorkQueue


class PlanFailed(Exception):
    """Stands in for the controllers' ExecutionError (a wrapper raised `from` the cause)."""


def invalid() -> errors.ApiError:
    return errors.from_response(422, b'{"reason": "Invalid", "message": "bad name"}')


async def run_once(failure: BaseException) -> None:
    queue = WorkQueue("test-logs")

    async def reconcile(key: str) -> Result:
        queue.shut_down()  # one reconcile, then the runner stops
        raise failure

    runner = Runner("test-logs", queue, reconcile, concurrency=1)
    queue.add("ns/a")
    runner.start()
    await asyncio.wait_for(runner.stop(grace=5), timeout=10)


def wrapped(cause: BaseException) -> PlanFailed:
    try:
        raise PlanFailed("1 write(s) failed") from cause
    except PlanFailed as exc:
        return exc


@pytest.mark.parametrize(
    ("failure", "traceback"),
    [
        (invalid(), False),
        (wrapped(invalid()), False),
        (wrapped(TimeoutError("no answer")), False),
        (wrapped(KeyError("spec")), True),
        (ValueError("a bug"), True),
    ],
    ids=["api-error", "wrapped-api-error", "wrapped-timeout", "wrapped-bug", "bug"],
)
def test_failed_reconciles_are_one_line_unless_they_are_bugs(
    caplog: pytest.LogCaptureFixture, failure: BaseException, traceback: bool
) -> None:
    caplog.set_level(logging.WARNING, logger="cliques.kube.runner")
    asyncio.run(run_once(failure))
    (record,) = [r for r in caplog.records if "reconcile failed" in r.getMessage()]
    assert bool(record.exc_info) is traceback
