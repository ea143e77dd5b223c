"""Where the cluster is and how to authenticate, found the way kubectl finds it, with one
clear error when it cannot be.

An explicit kubeconfig path wins; without one, the in-cluster service account is tried,
then $KUBECONFIG (several files merged, the first to name an entry wins) and
~/.kube/config. What is read: the context's cluster (`server`, `certificate-authority`
and `-data`, `insecure-skip-tls-verify`, `tls-server-name`, `proxy-url`) and user: an exec
plugin (`client.authentication.k8s.io` ExecCredential, run again when its token expires),
`token` or `tokenFile`, `client-certificate` and `client-key` (or their `-data`),
`username` and `password`, or an `oidc` auth-provider's `id-token`. Relative paths are
relative to the file that names them. In a pod, the service account's token is read
again every minute (it is rotated) and its CA is trusted.

This module imports no metrics and no Kubernetes client, so the operator's command line
can check the configuration before the supervisor sets up multiprocess metrics and starts
workers (which would otherwise crash-loop on a missing file).
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import os
import ssl
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

SERVICE_HOST_ENV = "KUBERNETES_SERVICE_HOST"
SERVICE_PORT_ENV = "KUBERNETES_SERVICE_PORT"
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
#: How often a token file is read again (the kubelet rotates a pod's token).
TOKEN_FILE_PERIOD = 60.0
#: An exec plugin's token is renewed this long before it expires.
EXPIRY_SKEW = 300.0


class ConfigError(Exception):
    """The cluster configuration cannot be loaded; the message says which and why."""


class Auth(Protocol):
    """The `Authorization` header of the next request (None: send none)."""

    async def header(self) -> str | None: ...


@dataclass
class Static:
    """A header that does not change (a token, basic credentials, an OIDC id-token)."""

    value: str | None = None

    async def header(self) -> str | None:
        return self.value


@dataclass
class TokenFile:
    """A bearer token read from a file, and read again every `period` seconds."""

    path: str
    period: float = TOKEN_FILE_PERIOD
    _token: str = ""
    _read_at: float = -1.0

    def read(self) -> str:
        now = time.monotonic()
        if self._read_at < 0 or now - self._read_at >= self.period:
            with open(self.path, encoding="utf-8") as f:
                token = f.read().strip()
            if not token:
                raise ConfigError(f"token file {self.path} is empty")
            self._token, self._read_at = token, now
        return self._token

    async def header(self) -> str | None:
        return f"Bearer {self.read()}"


@dataclass
class Exec:
    """A credential plugin (`users[].user.exec`): run once when loaded, and again when the
    token it gave is about to expire. A plugin that gives a client certificate instead is
    run only once (the certificate goes into the TLS context)."""

    spec: dict[str, Any]
    base: str
    status: dict[str, Any] = field(default_factory=dict)
    _expires: float | None = None
    _lock: asyncio.Lock | None = None

    async def run(self) -> dict[str, Any]:
        spec = self.spec
        for key in ("command", "apiVersion"):
            if key not in spec:
                raise ConfigError(f"exec: missing key {key!r}")
        command = _command(str(spec["command"]), self.base)
        env = os.environ.copy()
        env.update({e["name"]: e["value"] for e in spec.get("env") or []})
        info = {
            "apiVersion": spec["apiVersion"],
            "kind": "ExecCredential",
            "spec": {"interactive": sys.stdout.isatty()},
        }
        env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
        proc = await asyncio.create_subprocess_exec(
            command,
            *[str(a) for a in spec.get("args") or []],
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate()
        if proc.returncode != 0:
            raise ConfigError(
                f"exec: {command} exited {proc.returncode}: {err.decode(errors='replace')}"
            )
        try:
            answer = json.loads(out)
            status = answer["status"]
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"exec: {command} did not print an ExecCredential") from exc
        if answer.get("apiVersion") != spec["apiVersion"]:
            raise ConfigError(
                f"exec: {command} answered {answer.get('apiVersion')}, not {spec['apiVersion']}"
            )
        if not isinstance(status, dict):
            raise ConfigError(f"exec: {command} did not print an ExecCredential")
        self.status = status
        expiry = status.get("expirationTimestamp")
        self._expires = _epoch(expiry) - EXPIRY_SKEW if expiry else None
        return status

    async def header(self) -> str | None:
        if self._expires is not None and time.time() >= self._expires:
            self._lock = self._lock or asyncio.Lock()
            async with self._lock:
                if self._expires is not None and time.time() >= self._expires:
                    await self.run()
        token = self.status.get("token")
        return f"Bearer {token}" if token else None


@dataclass
class Cluster:
    """An API server and how to talk to it."""

    host: str
    auth: Auth = field(default_factory=Static)
    ca_file: str | None = None
    ca_data: str | None = None
    #: the client certificate and key, PEM
    cert_pem: bytes | None = None
    key_pem: bytes | None = None
    verify: bool = True
    #: the name the server's certificate is checked against, if not the host's
    server_hostname: str | None = None
    proxy: str | None = None

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context of an https server (None for http)."""
        if not self.host.startswith("https"):
            return None
        ctx = ssl.create_default_context(cafile=self.ca_file, cadata=self.ca_data)
        if self.cert_pem is not None:
            # ssl loads a certificate chain from files only: a private directory, gone
            # once they are loaded.
            with tempfile.TemporaryDirectory(prefix="cliques-tls-") as tmp:
                cert, key = Path(tmp, "cert.pem"), Path(tmp, "key.pem")
                cert.write_bytes(self.cert_pem)
                key.write_bytes(self.key_pem or b"")
                ctx.load_cert_chain(cert, key if self.key_pem else None)
        if not self.verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        return ctx


async def load(kubeconfig: str | None = None, context: str | None = None) -> Cluster:
    """The cluster of `kubeconfig` (path) and `context`, or of the in-cluster service
    account / default kubeconfig when no path is given. Reads files (and runs an exec
    plugin); nothing is sent to the API server."""
    source = kubeconfig or "the default kubeconfig ($KUBECONFIG or ~/.kube/config)"
    if kubeconfig is None:
        cluster = in_cluster()
        if cluster is not None:
            return cluster
    paths = [kubeconfig] if kubeconfig else _default_paths()
    try:
        return await from_files(paths, context)
    except (ConfigError, OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        if kubeconfig is not None and not _readable(kubeconfig):
            raise ConfigError(f"kubeconfig {kubeconfig}: no such readable file") from None
        if kubeconfig is None and not any(map(_readable, paths)):
            raise ConfigError(
                "no cluster configuration: not running in a pod, and no kubeconfig at "
                f"{' or '.join(paths)} (pass --kubeconfig)"
            ) from None
        if isinstance(exc, (TypeError, AttributeError)):
            detail = "not a kubeconfig (a YAML mapping of clusters, users and contexts)"
        else:
            detail = str(exc)
        where = f" (context {context!r})" if context else ""
        raise ConfigError(f"cannot load {source}{where}: {detail}") from None


def in_cluster(
    environ: dict[str, str] | os._Environ[str] = os.environ, account: Path = SERVICE_ACCOUNT
) -> Cluster | None:
    """The cluster of the pod this process runs in (None when it runs in none)."""
    host, port = environ.get(SERVICE_HOST_ENV), environ.get(SERVICE_PORT_ENV)
    token, ca = account / "token", account / "ca.crt"
    if not host or not port or not token.is_file() or not ca.is_file():
        return None
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    auth = TokenFile(str(token))
    auth.read()
    return Cluster(f"https://{host}:{port}", auth=auth, ca_file=str(ca))


#: kind ("clusters", "users", "contexts") -> name -> (entry, the directory of its file)
Merged = dict[str, dict[str, tuple[dict[str, Any], str]]]


async def from_files(paths: list[str], context: str | None = None) -> Cluster:
    """The cluster of `context` (default: the current one) in the kubeconfig files
    `paths`, merged as kubectl merges them."""
    merged, current = _merge(paths)
    name = context or current
    if not name:
        raise ConfigError("no current-context, and no context given")
    ctx = _entry(merged, "contexts", name)[0]["context"]
    cluster, cluster_base = _entry(merged, "clusters", ctx["cluster"])
    user, user_base = _entry(merged, "users", ctx["user"]) if ctx.get("user") else ({}, "")
    return await _cluster(cluster["cluster"], cluster_base, user.get("user") or {}, user_base)


def _merge(paths: list[str]) -> tuple[Merged, str]:
    """The entries of the files `paths` (the first file to name one wins) and the first
    current-context set."""
    merged: Merged = {
        "clusters": {},
        "users": {},
        "contexts": {},
    }
    current = ""
    for path in paths:
        if not _readable(path):
            continue
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        base = os.path.dirname(os.path.abspath(path))
        current = current or doc.get("current-context") or ""
        for kind, entries in merged.items():
            for entry in doc.get(kind) or []:
                entries.setdefault(str(entry["name"]), (entry, base))
    return merged, current


def _entry(merged: Merged, kind: str, name: str) -> tuple[dict[str, Any], str]:
    found = merged[kind].get(name)
    if found is None:
        raise ConfigError(f"no {kind[:-1]} named {name!r}")
    return found


async def _cluster(c: dict[str, Any], base: str, user: dict[str, Any], user_base: str) -> Cluster:
    """The cluster `c` as `user` reaches it (`base`, `user_base`: where relative paths
    start)."""
    if "server" not in c:
        raise ConfigError("the cluster has no server")
    out = Cluster(
        str(c["server"]).rstrip("/"),
        ca_file=_path(c.get("certificate-authority"), base),
        ca_data=_pem(c.get("certificate-authority-data")),
        verify=not c.get("insecure-skip-tls-verify", False),
        server_hostname=c.get("tls-server-name"),
        proxy=c.get("proxy-url"),
    )
    out.cert_pem = _file_or_data(user, "client-certificate", user_base)
    out.key_pem = _file_or_data(user, "client-key", user_base)
    provider = user.get("auth-provider") or {}
    if provider:
        out.auth = _provider(provider)
    elif "exec" in user:
        plugin = Exec(user["exec"], user_base)
        status = await plugin.run()
        if "clientCertificateData" in status:
            if "clientKeyData" not in status:
                raise ConfigError("exec: the plugin gave a certificate without its key")
            out.cert_pem = status["clientCertificateData"].encode()
            out.key_pem = status["clientKeyData"].encode()
        out.auth = plugin
    elif user.get("token"):
        out.auth = Static(f"Bearer {user['token']}")
    elif user.get("tokenFile"):
        out.auth = TokenFile(_path(user["tokenFile"], user_base) or "")
        await out.auth.header()
    elif "username" in user and "password" in user:
        basic = base64.b64encode(f"{user['username']}:{user['password']}".encode()).decode()
        out.auth = Static(f"Basic {basic}")
    return out


def _provider(provider: dict[str, Any]) -> Auth:
    """An auth-provider: only `oidc` with an `id-token` (kubectl itself dropped the others;
    a token to refresh first is refused: refresh it with kubectl, or use an exec plugin)."""
    name = provider.get("name")
    token = (provider.get("config") or {}).get("id-token")
    if name != "oidc":
        raise ConfigError(f"auth-provider {name!r} is not supported (use an exec plugin)")
    if not token:
        raise ConfigError("auth-provider oidc has no id-token (refresh it with kubectl)")
    return Static(f"Bearer {token}")


def _command(command: str, base: str) -> str:
    """An exec plugin's command: a relative path with a directory in it is relative to its
    kubeconfig, as kubectl has it; a bare name is looked up on $PATH."""
    if os.sep in command and not os.path.isabs(command):
        return os.path.normpath(os.path.join(base, command))
    return command


def _path(value: str | None, base: str) -> str | None:
    if not value:
        return None
    return os.path.normpath(os.path.join(base, os.path.expanduser(value)))


def _pem(data: str | None) -> str | None:
    return base64.standard_b64decode(data).decode() if data else None


def _file_or_data(obj: dict[str, Any], key: str, base: str) -> bytes | None:
    """`key`-data (base64) if set, else the content of the file `key` names."""
    data = obj.get(f"{key}-data")
    if data:
        return base64.standard_b64decode(data)
    path = _path(obj.get(key), base)
    return Path(path).read_bytes() if path else None


def _epoch(timestamp: str) -> float:
    """An RFC 3339 timestamp in seconds since the epoch."""
    return datetime.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def _default_paths() -> list[str]:
    """Where kubectl looks without --kubeconfig."""
    env = os.environ.get("KUBECONFIG", "")
    return [p for p in env.split(os.pathsep) if p] or [os.path.expanduser("~/.kube/config")]


def _readable(path: str) -> bool:
    try:
        with open(path, "rb"):
            return True
    except OSError:
        return False
