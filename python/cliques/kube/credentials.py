"""Who the operator is to the API server: the `Authorization` header of each request, and
the two errors of loading and renewing credentials.

`ConfigError` is a configuration that cannot work (fix it and start again: the operator's
command line exits 3 on it); `CredentialsUnavailable` is a credential that could not be had
this time (an exec plugin failed or timed out): it is one of the API failures every caller
retries with backoff. Neither message, nor any `repr`, holds a token, a password or a key.
"""

from __future__ import annotations

import re
import time
from typing import Protocol

#: How often a token file is read again (the kubelet rotates a pod's token).
TOKEN_FILE_PERIOD = 60.0


class ConfigError(Exception):
    """The cluster configuration cannot be loaded; the message says which and why, in one
    line."""


class CredentialsUnavailable(Exception):
    """The credentials of a request could not be had this time (an exec plugin failed, timed
    out or printed no credential): retried with backoff, as a failed request is."""


class Auth(Protocol):
    """How requests authenticate."""

    async def header(self) -> str | None:
        """The `Authorization` header of the next request (None: send none); raises
        `CredentialsUnavailable` when it cannot be had now."""
        ...

    def client_cert(self) -> tuple[bytes, bytes] | None:
        """The client certificate and key (PEM) these credentials bring, if any (an exec
        plugin's); None: the cluster's own, if any."""
        ...

    def refused(self, header: str | None) -> None:
        """The API server answered 401 to a request sent with `header`: what was cached is
        not to be trusted (read again or renewed before the next request)."""
        ...


class Static:
    """A header that does not change (a token, basic credentials, an OIDC id-token)."""

    def __init__(self, value: str | None = None) -> None:
        self.value = value

    async def header(self) -> str | None:
        return self.value

    def client_cert(self) -> tuple[bytes, bytes] | None:
        return None

    def refused(self, header: str | None) -> None:
        pass

    def __repr__(self) -> str:
        scheme = self.value.split(" ", 1)[0] if self.value else "none"
        return f"Static({scheme} <redacted>)" if self.value else "Static(none)"


class TokenFile:
    """A bearer token read from a file, and read again every `period` seconds (and after a
    401). A file that cannot be read again keeps the last token; `fallback` (the kubeconfig's
    `token` next to its `tokenFile`, as client-go has it) is used while it never could."""

    def __init__(
        self, path: str, *, period: float = TOKEN_FILE_PERIOD, fallback: str | None = None
    ) -> None:
        self.path = path
        self.period = period
        self._token = fallback or ""
        self._read_at = -1.0

    def read(self) -> str:
        """The token, read from the file when `period` has passed; raises `ConfigError` when
        there is none at all (the file unreadable or empty, and no token before)."""
        now = time.monotonic()
        if self._read_at < 0 or now - self._read_at >= self.period:
            try:
                with open(self.path, encoding="utf-8") as f:
                    token = f.read().strip()
            except (OSError, UnicodeDecodeError) as exc:
                token, problem = "", f"cannot be read ({type(exc).__name__})"
            else:
                problem = "is empty"
            if token:
                self._token = token
            elif not self._token:
                raise ConfigError(f"token file {self.path} {problem}")
            self._read_at = now
        return self._token

    async def header(self) -> str | None:
        try:
            return f"Bearer {self.read()}"
        except ConfigError as exc:
            raise CredentialsUnavailable(str(exc)) from None

    def client_cert(self) -> tuple[bytes, bytes] | None:
        return None

    def refused(self, header: str | None) -> None:
        self._read_at = -1.0

    def __repr__(self) -> str:
        return f"TokenFile({self.path!r})"


#: What looks like a credential in a message: a JWT, a bearer or basic header's value, a
#: `token`/`password`/`secret`/`key` setting, a long run of base64 or hex.
_SECRETISH = re.compile(
    r"eyJ[\w-]*\.[\w-]*\.?[\w-]*"
    r"|(?i:bearer|basic)\s+\S+"
    r"|(?i:token|password|passwd|secret|key)(?:[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]+"
    r"|[A-Za-z0-9+/_=-]{32,}"
)
REDACTED = "<redacted>"


def redact(text: str, *secrets: str) -> str:
    """`text` with the `secrets` and anything that looks like a credential replaced."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return _SECRETISH.sub(REDACTED, text)


def tail(text: str, *, lines: int = 5, chars: int = 500) -> str:
    """The end of a program's output for a message: its last `lines` non-blank lines, at
    most `chars` characters, on one line."""
    kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    out = " | ".join(kept)
    return out if len(out) <= chars else "..." + out[-chars:]
