"""Typed API errors: a 409 Conflict is not a 409 AlreadyExists, a 410 is its own thing.

`client` raises these; controllers catch the specific ones they can handle (AlreadyExists
from a double create is harmless, NotFound on delete is success, Conflict means re-read).
"""

from __future__ import annotations

import http

import aiohttp
import msgspec

from cliques.kube.credentials import CredentialsUnavailable


class Status(msgspec.Struct, omit_defaults=True):
    """The `Status` body the API server sends with a failure."""

    message: str = ""
    reason: str = ""
    code: int = 0


_STATUS = msgspec.json.Decoder(Status)


class ApiError(Exception):
    """A non-2xx answer from the API server."""

    def __init__(self, status: int, reason: str, message: str, *, verb: str = "", path: str = ""):
        self.status = status
        self.reason = reason
        self.message = message
        self.verb = verb
        self.path = path
        super().__init__(f"{verb} {path}: {status} {reason}: {message}".strip())


class BadRequest(ApiError):
    """400: the request itself is wrong."""


class Unauthorized(ApiError):
    """401 or 403."""


class NotFound(ApiError):
    """404."""


class Conflict(ApiError):
    """409 Conflict: our resourceVersion is stale; re-read from the API server and retry."""


class AlreadyExists(ApiError):
    """409 AlreadyExists: a create raced another (or our own earlier) create."""


class Gone(ApiError):
    """410 Gone: the resourceVersion is too old; a watch must relist."""


class Invalid(ApiError):
    """422: the object failed validation (schema, CEL)."""


class TooManyRequests(ApiError):
    """429 after the client gave up honouring Retry-After."""


class ServerError(ApiError):
    """5xx."""


class ReconcileFailure(Exception):
    """A reconcile's failure that is an expected outcome, not a bug: a plan whose writes
    the API server refused, say. Whoever retries it (`runner`) logs it as one line, and
    `retry_within` may bound the wait before the next try."""

    @property
    def retry_within(self) -> float | None:
        """The longest wait before a retry, if shorter than the retrier's backoff."""
        return None

    @property
    def signature(self) -> str:
        """What stays the same while the same failure repeats (for logging it once)."""
        return type(self).__name__


class Fenced(Exception):
    """A write refused before it was sent: this process can no longer prove it holds the
    shard it writes for (its lease was not renewed within the renew deadline)."""


#: What talking to an API server can fail with, bugs aside: an error answer, a dropped
#: connection or truncated stream, a timeout, credentials that could not be had (an exec
#: plugin that failed). Retried (and logged as one line) by whoever talks to it; anything
#: else is a bug.
API_FAILURES: tuple[type[Exception], ...] = (
    ApiError,
    OSError,
    TimeoutError,
    aiohttp.ClientError,
    Fenced,
    CredentialsUnavailable,
)


def from_response(status: int, body: bytes, *, verb: str = "", path: str = "") -> ApiError:
    """Build the right ApiError subclass from a failed response."""
    try:
        st = _STATUS.decode(body) if body else Status()
    except (msgspec.DecodeError, msgspec.ValidationError):
        st = Status(message=body[:500].decode("utf-8", "replace"))
    # A body that is not a Status (a 404 for an API group nobody serves is plain text) gets
    # the HTTP reason phrase, so a message reads "404 Not Found: 404 page not found".
    reason = st.reason or _phrase(status)
    cls: type[ApiError]
    if status == 409:
        cls = AlreadyExists if st.reason == "AlreadyExists" else Conflict
    else:
        cls = {
            400: BadRequest,
            401: Unauthorized,
            403: Unauthorized,
            404: NotFound,
            410: Gone,
            422: Invalid,
            429: TooManyRequests,
        }.get(status, ServerError if status >= 500 else ApiError)
    return cls(status, reason, st.message, verb=verb, path=path)


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return str(status)
