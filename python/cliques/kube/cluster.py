"""An API server and how to reach it: its URL, the TLS it is checked with, the proxy, and
the credentials (`cliques.kube.credentials`) requests carry.

The TLS context is built when the cluster is loaded, so that a CA or client certificate
that cannot be used (unreadable, not PEM, a key that does not match) is a `ConfigError`
then, not a failure of every request; it is built again, for new connections, when the
credentials bring a new client certificate (an exec plugin's, rotated). The `repr` holds
no token, password or key.
"""

from __future__ import annotations

import ssl
import tempfile
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from cliques.kube.credentials import Auth, ConfigError, CredentialsUnavailable, Static


@dataclass(repr=False)
class Cluster:
    """An API server and how to talk to it."""

    host: str
    auth: Auth = field(default_factory=Static)
    #: the CA certificates trusted (PEM; None: the system's), and where they came from
    ca_pem: str | None = None
    ca_source: str = ""
    #: the client certificate and key, PEM (the credentials' own, if any, win)
    cert_pem: bytes | None = None
    key_pem: bytes | None = None
    verify: bool = True
    #: the name the server's certificate is checked against, if not the host's
    server_hostname: str | None = None
    #: the proxy requests go through (None: direct)
    proxy: str | None = None
    _ssl: ssl.SSLContext | None = field(default=None, init=False)
    _ssl_cert: tuple[bytes, bytes] | None = field(default=None, init=False)
    _ssl_built: bool = field(default=False, init=False)

    def __repr__(self) -> str:
        parts = [repr(self.host), f"auth={self.auth!r}"]
        if self.ca_source:
            parts.append(f"ca={self.ca_source!r}")
        if self.cert_pem is not None:
            parts.append("client_cert=<set>, client_key=<redacted>")
        if not self.verify:
            parts.append("verify=False")
        if self.server_hostname:
            parts.append(f"server_hostname={self.server_hostname!r}")
        if self.proxy:
            parts.append(f"proxy={_without_password(self.proxy)!r}")
        return f"Cluster({', '.join(parts)})"

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context of new connections to an https server (None for http): built
        again when the credentials' client certificate changes."""
        if not self.host.startswith("https"):
            return None
        cert = self.auth.client_cert()
        if cert is None and self.cert_pem is not None:
            cert = (self.cert_pem, self.key_pem or b"")
        if not self._ssl_built or cert != self._ssl_cert:
            try:
                self._ssl = context(self.ca_pem, cert, verify=self.verify)
            except ConfigError as exc:
                if cert is not None and cert is self.auth.client_cert():
                    raise CredentialsUnavailable(f"exec plugin's {exc}") from None
                raise
            self._ssl_cert, self._ssl_built = cert, True
        return self._ssl


def context(
    ca_pem: str | None, cert: tuple[bytes, bytes] | None, *, verify: bool = True
) -> ssl.SSLContext:
    """A client TLS context trusting `ca_pem` (None: the system's CAs) and presenting
    `cert` (certificate and key, PEM); raises `ConfigError` when either cannot be used."""
    if ca_pem is not None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        try:
            ctx.load_verify_locations(cadata=ca_pem)
        except (ssl.SSLError, ValueError) as exc:
            raise ConfigError(f"not a PEM CA certificate ({_reason(exc)})") from None
    else:
        ctx = ssl.create_default_context()
    if cert is not None:
        # ssl loads a certificate chain from files only: a private directory, gone once
        # they are loaded.
        with tempfile.TemporaryDirectory(prefix="cliques-tls-") as tmp:
            cert_file, key_file = Path(tmp, "cert.pem"), Path(tmp, "key.pem")
            cert_file.write_bytes(cert[0])
            key_file.write_bytes(cert[1])
            try:
                ctx.load_cert_chain(cert_file, key_file)
            except (ssl.SSLError, ValueError) as exc:
                raise ConfigError(
                    f"client certificate and key cannot be used ({_reason(exc)})"
                ) from None
    if not verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _reason(exc: Exception) -> str:
    """An ssl error's reason, without the C source location."""
    if isinstance(exc, ssl.SSLError) and exc.reason:
        return str(exc.reason).replace("_", " ").lower()
    return str(exc).split(" (_ssl.c")[0]


def _without_password(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:<redacted>@{parts.hostname}" + (
        f":{parts.port}" if parts.port else ""
    )
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
