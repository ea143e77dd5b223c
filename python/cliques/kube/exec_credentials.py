"""Credentials from an exec plugin (`users[].user.exec`, `client.authentication.k8s.io`).

The plugin runs when a request first needs credentials, not when the kubeconfig is
loaded, and then only when what it printed is about to expire: a token is kept until a
little before its `expirationTimestamp` (a tenth of its lifetime, at most a minute), so
even a short-lived token serves every request until then. One run at a time: requests
that need credentials while the plugin runs wait for that run and share its outcome,
success or failure. A client certificate and key it prints are used for new connections
(the cluster's TLS context is built again when they change).

A run has `timeout` seconds (`EXEC_TIMEOUT` by default); a plugin that takes longer, or
whose request is cancelled meanwhile, is killed with its process group and reaped. A
failed run raises `ExecFailed`, a `CredentialsUnavailable` that every caller retries with
backoff; its message holds the end of the plugin's stderr (`credentials.tail`), with what
looks like a credential redacted, and never its stdout.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import json
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cliques.kube.credentials import CredentialsUnavailable, redact, tail

#: Seconds an exec plugin may run before it is killed and its run fails.
EXEC_TIMEOUT = 30.0
#: A credential is renewed this long before it expires at most (a tenth of its lifetime
#: when that is shorter).
MAX_RENEW_MARGIN = 60.0
API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")


class ExecFailed(CredentialsUnavailable):
    """An exec plugin's run failed, timed out or printed no usable ExecCredential."""


@dataclass(frozen=True)
class ExecSpec:
    """An exec plugin as the kubeconfig names it (validated when it is loaded)."""

    command: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    api_version: str
    #: `spec.cluster` of the ExecCredential sent to it (`provideClusterInfo`), else None
    cluster_info: dict[str, Any] | None = None


@dataclass(frozen=True, repr=False)
class ExecCredential:
    """What one run printed."""

    token: str | None
    #: the client certificate and key, PEM (together or not at all)
    cert: tuple[bytes, bytes] | None
    #: seconds since the epoch when it expires / is renewed (None: never, until a 401)
    expires: float | None
    renew_at: float | None

    def __repr__(self) -> str:
        return f"ExecCredential(token={'<redacted>' if self.token else None}, ...)"


class ExecPlugin:
    """An exec plugin's credentials, cached for their lifetime (see the module's doc)."""

    def __init__(
        self,
        spec: ExecSpec,
        *,
        timeout: float = EXEC_TIMEOUT,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.spec = spec
        self.timeout = timeout
        #: the wall clock expiry times are read against
        self.clock = clock
        #: runs started (for tests and logs)
        self.runs = 0
        self._cred: ExecCredential | None = None
        self._lock = asyncio.Lock()
        #: runs ended, with a credential or an error (not cancelled ones)
        self._ended = 0
        self._error: ExecFailed | None = None

    def __repr__(self) -> str:
        return f"ExecPlugin({self.spec.command!r})"

    async def credential(self) -> ExecCredential:
        """The current credential, running the plugin when there is none or it is due for
        renewal (raises `ExecFailed` when that run fails)."""
        cred = self._cred
        if cred is not None and not self._due(cred):
            return cred
        seen = self._ended
        async with self._lock:
            if self._ended != seen:  # a run ended while this caller waited: its outcome
                if self._error is not None:
                    raise ExecFailed(str(self._error))
                assert self._cred is not None
                return self._cred
            cred = self._cred
            if cred is not None and not self._due(cred):
                return cred
            try:
                cred = await self._run()
            except ExecFailed as exc:
                self._error, self._ended = exc, self._ended + 1
                raise
            self._cred, self._error, self._ended = cred, None, self._ended + 1
            return cred

    async def header(self) -> str | None:
        cred = await self.credential()
        return f"Bearer {cred.token}" if cred.token else None

    def client_cert(self) -> tuple[bytes, bytes] | None:
        return self._cred.cert if self._cred is not None else None

    def refused(self, header: str | None) -> None:
        cred = self._cred
        if cred is not None and header is not None and header == f"Bearer {cred.token}":
            self._cred = None  # the next request runs the plugin again

    async def _run(self) -> ExecCredential:
        spec, name = self.spec, os.path.basename(self.spec.command)
        env = os.environ.copy()
        env.update(dict(spec.env))
        info: dict[str, Any] = {"interactive": False}
        if spec.cluster_info is not None:
            info["cluster"] = spec.cluster_info
        env["KUBERNETES_EXEC_INFO"] = json.dumps(
            {"apiVersion": spec.api_version, "kind": "ExecCredential", "spec": info}
        )
        self.runs += 1
        try:
            proc = await asyncio.create_subprocess_exec(
                spec.command,
                *spec.args,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # its own process group, killed as one
            )
        except OSError as exc:
            raise ExecFailed(f"exec plugin {spec.command}: cannot run it: {exc.strerror}") from None
        try:
            async with asyncio.timeout(self.timeout):
                out, err = await proc.communicate()
        except TimeoutError:
            await _kill(proc)
            raise ExecFailed(
                f"exec plugin {name}: no answer within {self.timeout:g}s (killed)"
            ) from None
        except BaseException:  # cancelled: the plugin does not outlive its request
            await _kill(proc)
            raise
        if proc.returncode != 0:
            said = tail(redact(err.decode(errors="replace")))
            raise ExecFailed(
                f"exec plugin {name} exited {proc.returncode}" + (f": {said}" if said else "")
            )
        return _parse(out, spec.api_version, name, self.clock())

    def _due(self, cred: ExecCredential) -> bool:
        return cred.renew_at is not None and self.clock() >= cred.renew_at


async def _kill(proc: asyncio.subprocess.Process) -> None:
    """Kill `proc`'s process group and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    await proc.wait()


def _parse(out: bytes, api_version: str, name: str, now: float) -> ExecCredential:
    """The ExecCredential a plugin printed (its stdout is never quoted: it holds secrets)."""
    bad = f"exec plugin {name} did not print an ExecCredential"
    try:
        answer = json.loads(out)
    except ValueError:
        raise ExecFailed(f"{bad} (not JSON)") from None
    if not isinstance(answer, dict) or not isinstance(answer.get("status"), dict):
        raise ExecFailed(f"{bad} (no status)")
    if answer.get("kind") != "ExecCredential" or answer.get("apiVersion") != api_version:
        raise ExecFailed(
            f"{bad}: got kind {str(answer.get('kind'))[:60]!r}, apiVersion "
            f"{str(answer.get('apiVersion'))[:80]!r} (want {api_version})"
        )
    status: dict[str, Any] = answer["status"]
    token = status.get("token")
    cert_data, key_data = status.get("clientCertificateData"), status.get("clientKeyData")
    for key, value in (
        ("token", token),
        ("clientCertificateData", cert_data),
        ("clientKeyData", key_data),
    ):
        if value is not None and not isinstance(value, str):
            raise ExecFailed(f"{bad}: status.{key} is not a string")
    if bool(cert_data) != bool(key_data):
        raise ExecFailed(f"{bad}: clientCertificateData and clientKeyData go together")
    if not token and not cert_data:
        raise ExecFailed(f"{bad}: it has neither a token nor a client certificate")
    expires = _expiry(status.get("expirationTimestamp"), name)
    renew_at = None
    if expires is not None:
        if expires <= now:
            raise ExecFailed(f"exec plugin {name} printed a credential that has expired")
        renew_at = expires - min(MAX_RENEW_MARGIN, (expires - now) / 10)
    cert = (cert_data.encode(), key_data.encode()) if cert_data and key_data else None
    return ExecCredential(token or None, cert, expires, renew_at)


def _expiry(value: object, name: str) -> float | None:
    if value is None or value == "":
        return None
    try:
        if not isinstance(value, str):
            raise ValueError
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise ExecFailed(
            f"exec plugin {name}: expirationTimestamp is not an RFC 3339 time"
        ) from None


def cluster_info(cluster: dict[str, Any], ca_pem: bytes | None) -> dict[str, Any]:
    """`spec.cluster` of the ExecCredential for a plugin that asks for it
    (`provideClusterInfo`), from the kubeconfig's cluster entry."""
    out: dict[str, Any] = {"server": cluster["server"]}
    for key in ("tls-server-name", "insecure-skip-tls-verify", "proxy-url", "disable-compression"):
        if cluster.get(key) is not None:
            out[key] = cluster[key]
    if ca_pem:
        out["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    for ext in cluster.get("extensions") or []:
        if isinstance(ext, dict) and ext.get("name") == "client.authentication.k8s.io/exec":
            out["config"] = ext.get("extension")
    return out
