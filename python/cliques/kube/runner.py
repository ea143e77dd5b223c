"""Runs a reconciler over a work queue with bounded concurrency (controller-runtime style).

A reconcile gets only a key and re-reads state itself (level-based). Its result is explicit:
`Result(requeue_after=T)` asks to be called again after T seconds, `TerminalError` is logged
and not retried, any other exception is retried with per-key exponential backoff. Reconcile
functions never sleep or poll; waiting is done here, by the queue.

Logs are for a person: a failure is logged when a stretch of failures of one key begins
(and when its kind changes), as one line naming the object, what happened and when it is
tried again, and once more when the key reconciles again (`stretches`); the retries in
between are at debug level. Expected outcomes (an API server's answer, a dropped
connection, a `ReconcileFailure` such as a plan's refused writes) never carry a traceback;
a bug does, at the start of its stretch. Every line carries `object` and `controller` as
structured fields (`--log-format json`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from cliques import metrics
from cliques.kube import errors, fair, trace
from cliques.kube.stretches import Stretches
from cliques.kube.workqueue import ShutDown, WorkQueue

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Result:
    requeue_after: float = 0.0


class TerminalError(Exception):
    """An error that retrying cannot fix (bad spec): logged, reported, not retried."""


Reconcile = Callable[[str], Awaitable[Result]]


class Runner:
    def __init__(
        self,
        name: str,
        queue: WorkQueue,
        reconcile: Reconcile,
        *,
        concurrency: int = 8,
        trace: Callable[[str, str, float, float], None] | None = None,
    ) -> None:
        self.name = name
        self.queue = queue
        self.reconcile = reconcile
        self.concurrency = concurrency
        self.trace = trace  # (controller, key, started, ended) of every reconcile
        self._tasks: list[asyncio.Task[None]] = []
        self._reconciles = {
            r: metrics.RECONCILES.labels(name, r)
            for r in ("success", "requeue", "error", "conflict", "terminal")
        }
        self._duration = metrics.RECONCILE_DURATION.labels(name)
        #: the keys whose reconciles fail, since when and how (logged once per stretch)
        self.failing = Stretches()

    def start(self) -> None:
        for i in range(self.concurrency):
            self._tasks.append(asyncio.create_task(self._worker(), name=f"{self.name}-{i}"))

    async def stop(self, grace: float = 30.0) -> None:
        """Drain: stop handing out keys, let in-flight reconciles finish, then return."""
        self.queue.shut_down()
        if not self._tasks:
            return
        _done, pending = await asyncio.wait(self._tasks, timeout=grace)
        for task in pending:
            task.cancel()
        for task in pending:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    def abort(self) -> None:
        """Cancel every reconcile now (fencing): nothing it has not sent yet is sent."""
        self.queue.shut_down()
        for task in self._tasks:
            task.cancel()

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            try:
                await self._process(key)
            finally:
                self.queue.done(key)

    async def _process(self, key: str) -> None:
        started = time.perf_counter()
        # The writes of this reconcile (and of the tasks it starts) wait in its flow's line.
        token = fair.current_flow.set(self.queue.group(key))
        traced = trace.current.set((self.name, key, trace.next_id()))
        fields = {"object": key, "controller": self.name}
        try:
            result = await self.reconcile(key)
        except errors.Conflict as exc:
            self._reconciles["conflict"].inc()
            delay = self.queue.add_rate_limited(key)
            log.debug(
                "%s %s: conflict (%s); retry in %.3fs", self.name, key, exc, delay, extra=fields
            )
        except TerminalError as exc:
            self._reconciles["terminal"].inc()
            self.queue.forget(key)
            self.failing.ended(key)
            log.error("%s %s: %s (not retried)", self.name, key, exc, extra=fields)
        except Exception as exc:
            self._reconciles["error"].inc()
            # a failure may bound its own retry (e.g. a name held by someone else)
            cap = exc.retry_within if isinstance(exc, errors.ReconcileFailure) else None
            delay = self.queue.add_rate_limited(key, cap)
            self._failed(key, exc, delay, fields)
        else:
            self.queue.forget(key)
            if result.requeue_after > 0:
                self._reconciles["requeue"].inc()
                self.queue.add_after(key, result.requeue_after)
            else:
                self._reconciles["success"].inc()
            stretch = self.failing.ended(key)
            if stretch is not None:
                log.info(
                    "%s %s: reconciles again after %d failed attempt(s) over %.0fs (the first: %s)",
                    self.name,
                    key,
                    stretch.count,
                    stretch.lasted(self.failing.now()),
                    stretch.first,
                    extra={**fields, "reason": stretch.signature},
                )
        finally:
            trace.current.reset(traced)
            fair.current_flow.reset(token)
            ended = time.perf_counter()
            self._duration.observe(ended - started)
            if self.trace is not None:
                self.trace(self.name, key, started, ended)

    def _failed(self, key: str, exc: Exception, delay: float, fields: dict[str, str]) -> None:
        """Log a failed reconcile: one line when a stretch of failures begins (or changes
        kind), with a traceback only for a bug; at debug level while it goes on."""
        expected = isinstance(exc, errors.ReconcileFailure) or _expected(exc)
        signature = _signature(exc)
        fields = {**fields, "reason": signature}
        stretch = self.failing.failed(key, signature)
        if stretch is None:
            log.debug(
                "%s %s: reconcile failed again: %s; retry in %.2fs",
                self.name,
                key,
                exc,
                delay,
                extra=fields,
            )
            return
        stretch.first = shorten(str(exc), FIRST_CHARS)
        log.warning(
            "%s %s: reconcile failed: %s; retry in %.2fs (retries are logged again only "
            "if the failure changes, and when it ends)",
            self.name,
            key,
            exc,
            delay,
            exc_info=not expected,
            extra=fields,
        )


#: How much of a stretch's first failure the line that ends the stretch repeats.
FIRST_CHARS = 300


def shorten(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters in the middle, marked: an API error says what
    was refused first and why last ("... because it is being terminated"), and both stay."""
    if len(text) <= limit:
        return text
    keep = (limit - 3) // 2
    return f"{text[:keep]} … {text[-keep:]}"


def _signature(exc: BaseException) -> str:
    """What stays the same while the same failure repeats: a `ReconcileFailure`'s own,
    an API error's status, else the exception's type (and a bug's message)."""
    if isinstance(exc, errors.ReconcileFailure):
        return exc.signature
    if isinstance(exc, errors.ApiError):
        return f"{type(exc).__name__} {exc.status}"
    if _expected(exc):
        return type(exc).__name__
    return f"{type(exc).__name__}: {exc}"


def _expected(exc: BaseException | None) -> bool:
    """A failure that is part of talking to an API server (an error answer, a dropped
    connection, a timeout), directly or as the cause of a wrapper such as a plan's failed
    writes: logged as one line. Anything else is a bug, logged with its traceback."""
    while exc is not None:
        if isinstance(exc, errors.API_FAILURES):
            return True
        exc = exc.__cause__
    return False
