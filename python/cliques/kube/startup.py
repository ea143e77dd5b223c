"""Start-up calls that wait out a struggling API server instead of crashing.

Before an operator process serves, it asks the API server a few things (discovery, its
CRDs). An API server that is restarting, overloaded or not yet fully up answers 429, 503
("the request has been made before all known HTTP paths have been installed"), refuses or
resets the connection, or does not answer in time: none of that is a reason to exit, and
a process that exits on it only adds a restart to the load. `patiently` calls until the
API server answers, with exponential backoff and jitter, logging one line when the
failures begin and one when they end (the retries in between at debug level); the
caller's health endpoint reports not ready meanwhile.

Only what waiting cannot fix ends the wait: a 401 (the credentials are refused) or a 403
(RBAC does not allow the call) raises `StartupError`, whose message names what to fix;
the caller's own checks raise it too (a CRD that is not installed). `Stopped` is raised
when the process is asked to stop while it waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import aiohttp

from cliques.kube import errors
from cliques.kube.credentials import CredentialsUnavailable
from cliques.kube.stretches import Stretch

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Failures that waiting fixes: throttling, a server error (503 while it starts), a
#: refused, reset or dropped connection, no answer in time, credentials that could not be
#: had this time (an exec plugin that failed or timed out).
TRANSIENT: tuple[type[BaseException], ...] = (
    errors.TooManyRequests,
    errors.ServerError,
    OSError,
    TimeoutError,
    aiohttp.ClientError,
    CredentialsUnavailable,
)
FIRST_DELAY = 0.5
MAX_DELAY = 30.0


class StartupError(Exception):
    """A start-up call failed for a reason retrying cannot fix; the message says what to
    fix, in one line."""


class Stopped(Exception):
    """The process was asked to stop while a start-up call waited for the API server."""


def permanent(what: str, exc: errors.ApiError) -> StartupError:
    """The `StartupError` of a 401 or 403 answer to `what`."""
    if exc.status == 401:
        return StartupError(
            f"{what}: the API server refuses the operator's credentials (401 Unauthorized): "
            "check the kubeconfig, or the ServiceAccount token mounted in the pod"
        )
    return StartupError(
        f"{what}: forbidden (403) for {exc.verb} {exc.path}: the operator's ServiceAccount "
        "lacks the RBAC for it; apply deploy/operator/rbac.yaml (or install with the Helm "
        f"chart, which grants it). The API server said: {exc.message}"
    )


async def patiently(
    what: str,
    call: Callable[[], Awaitable[T]],
    *,
    stop: asyncio.Event | None = None,
    first_delay: float | None = None,
    max_delay: float = MAX_DELAY,
) -> T:
    """`await call()` until it answers; `what` names the call in the log ("discovery of
    scheduling.k8s.io"). Transient failures (`TRANSIENT`) are retried with backoff; a 401
    or 403 raises `StartupError`; anything else is raised as it is. Raises `Stopped` if
    `stop` is set while it waits."""
    delay = FIRST_DELAY if first_delay is None else first_delay
    failing: Stretch | None = None
    while True:
        try:
            result = await call()
        except errors.Unauthorized as exc:
            raise permanent(what, exc) from None
        except TRANSIENT as exc:
            if failing is None:
                failing = Stretch(type(exc).__name__, time.monotonic())
                log.warning(
                    "%s: %s; waiting for the API server (retried with backoff, logged again "
                    "when it answers)",
                    what,
                    exc or type(exc).__name__,
                )
            else:
                failing.count += 1
                log.debug("%s: %s; retrying in %.1fs", what, exc or type(exc).__name__, delay)
            wait = delay * (0.5 + random.random())
            delay = min(delay * 2, max_delay)
            if stop is None:
                await asyncio.sleep(wait)
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=wait)
            if stop.is_set():
                raise Stopped(what) from None
            continue
        if failing is not None:
            log.info(
                "%s: the API server answered after %d failed attempt(s) over %.0fs",
                what,
                failing.count,
                failing.lasted(time.monotonic()),
            )
        return result
