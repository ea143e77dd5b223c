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


class Refused(errors.ReconcileFailure):
    """Stands in for a plan whose writes the API server refused (a name conflict)."""


async def run_sequence(outcomes: list[BaseException | None]) -> None:
    """Reconciles of one key with these outcomes (None: success), one after another."""
    queue = WorkQueue("test-stretch", base_delay=0.001, max_delay=0.001)
    left = list(outcomes)
    finished = asyncio.Event()

    async def reconcile(key: str) -> Result:
        outcome = left.pop(0)
        if not left:
            finished.set()
        if outcome is not None:
            raise outcome
        if left:
            return Result(requeue_after=0.001)
        return Result()

    runner = Runner("test-stretch", queue, reconcile, concurrency=1)
    queue.add("ns/a")
    runner.start()
    await asyncio.wait_for(finished.wait(), timeout=10)
    await asyncio.wait_for(runner.stop(grace=5), timeout=10)


def test_a_failure_that_repeats_is_logged_when_it_starts_and_when_it_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="cliques.kube.runner")
    conflict = Refused("Service ns/a already exists and is owned by someone else")
    asyncio.run(run_sequence([conflict] * 5 + [None]))
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    infos = [r for r in caplog.records if r.levelno == logging.INFO]
    debugs = [r for r in caplog.records if "failed again" in r.getMessage()]
    assert len(warnings) == 1 and not warnings[0].exc_info
    assert "already exists" in warnings[0].getMessage()
    assert warnings[0].object == "ns/a" and warnings[0].controller == "test-stretch"  # type: ignore[attr-defined]
    assert len(debugs) == 4
    assert len(infos) == 1 and "after 5 failed attempt(s)" in infos[0].getMessage()


def test_a_failure_that_changes_is_logged_again(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="cliques.kube.runner")
    asyncio.run(run_sequence([Refused("a"), Refused("a"), invalid(), invalid(), None]))
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2


def test_a_bug_keeps_its_traceback_once_per_stretch(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="cliques.kube.runner")
    asyncio.run(run_sequence([ValueError("a bug")] * 3 + [None]))
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.exc_info


def test_json_lines_written_during_a_reconcile_carry_its_trace() -> None:
    import json

    from cliques.operator.logs import JsonFormatter

    formatter = JsonFormatter()
    lines: list[dict[str, object]] = []
    inner = logging.getLogger("cliques.test.inner")

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(json.loads(formatter.format(record)))

    handler = Keep()
    inner.addHandler(handler)
    inner.setLevel(logging.INFO)
    try:

        async def scenario() -> None:
            queue = WorkQueue("test-trace")
            seen = 0

            async def reconcile(key: str) -> Result:
                nonlocal seen
                inner.info("planning %s", key)
                inner.info("writing %s", key)
                seen += 1
                if seen == 2:
                    queue.shut_down()
                return Result()

            runner = Runner("test-trace", queue, reconcile, concurrency=1)
            queue.add("ns/a")
            queue.add("ns/b")
            runner.start()
            await asyncio.wait_for(runner.stop(grace=5), timeout=10)

        asyncio.run(scenario())
        inner.info("outside any reconcile")
    finally:
        inner.removeHandler(handler)
    assert [line["object"] for line in lines[:4]] == ["ns/a", "ns/a", "ns/b", "ns/b"]
    assert lines[0]["controller"] == "test-trace"
    assert lines[0]["reconcile"] == lines[1]["reconcile"] != lines[2]["reconcile"]
    assert "reconcile" not in lines[4] and "object" not in lines[4]


def test_the_log_setup_imports_no_metrics() -> None:
    """The supervisor sets up its logs, then chooses the metrics' multiprocess directory,
    then imports prometheus_client: a log module that imported it first would leave the
    supervisor's own metrics (worker restarts) out of /metrics."""
    import subprocess
    import sys

    code = (
        "import sys; import cliques.cli.operator_cmd, cliques.operator.logs; "
        "assert 'prometheus_client' not in sys.modules, 'imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_long_first_failure_keeps_its_head_and_its_reason() -> None:
    from cliques.kube.runner import FIRST_CHARS, shorten

    message = (
        "create /api/v1/namespaces/" + "n" * 200 + '/pods: 403 Forbidden: pods "p" is '
        "forbidden: unable to create new content in namespace x because it is being terminated"
    )
    short = shorten(message, FIRST_CHARS)
    assert len(short) <= FIRST_CHARS
    assert short.startswith("create /api/v1/namespaces/")
    assert short.endswith("because it is being terminated") and " … " in short
    assert shorten("short", FIRST_CHARS) == "short"


class Bounded(errors.ReconcileFailure):
    """A failure that bounds its own retry, through the kube contract."""

    @property
    def retry_within(self) -> float | None:
        return 0.5


class Lookalike(Exception):
    """An attribute of the same name on a type the runner does not know: not honoured."""

    retry_within = 0.5


async def retry_delays(failure: BaseException, attempts: int) -> list[float]:
    """The waits the runner schedules after `attempts` failed reconciles of one key."""
    queue = WorkQueue("test-cap", base_delay=1.0, max_delay=300.0)
    delays: list[float] = []
    limited = queue.add_rate_limited

    def recorded(key: str, cap: float | None = None) -> float:
        delays.append(limited(key, cap))
        return delays[-1]

    queue.add_rate_limited = recorded  # type: ignore[method-assign]

    async def reconcile(key: str) -> Result:
        raise failure

    runner = Runner("test-cap", queue, reconcile, concurrency=1)
    for _ in range(attempts):
        await runner._process("ns/a")
    queue.shut_down()
    return delays


def test_a_reconcile_failure_bounds_its_retry_and_nothing_else_does() -> None:
    assert asyncio.run(retry_delays(Bounded("held"), 3)) == [0.5, 0.5, 0.5]
    assert asyncio.run(retry_delays(Lookalike("held"), 3)) == [1.0, 2.0, 4.0]
