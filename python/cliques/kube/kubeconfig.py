"""Where the cluster is and how to authenticate, found as controller-runtime finds it, and
refused in one line when it cannot be used.

The lookup order is controller-runtime's: the `--kubeconfig` path; else `$KUBECONFIG`
(files separated by `:`, merged as client-go merges them: the first file to name a
cluster, user or context wins, and the first `current-context` set; files that do not
exist are skipped); else, with `$KUBECONFIG` unset, the in-cluster service account; else
`~/.kube/config`.

What is read: the context's cluster (`server`, `certificate-authority` or its `-data`,
`insecure-skip-tls-verify`, `tls-server-name`, `proxy-url`) and user: `token` or
`tokenFile` (read again every minute), `client-certificate` and `client-key` (or their
`-data`), `username` and `password`, an exec plugin (`cliques.kube.exec_credentials`), or
an `oidc` auth-provider's `id-token`. Relative paths are relative to the file that names
them. In a pod, the service account's token is read again every minute (it is rotated)
and its CA is trusted. The proxy is chosen as client-go chooses it (`cliques.kube.proxy`).

It fails closed, as client-go does: every field must have its type (a boolean is `true` or
`false`, not the string `"false"`), and the error names the file, the entry and the key;
a CA together with `insecure-skip-tls-verify`, a field set both as a file and as `-data`,
two authentication methods, a certificate without its key are refused; impersonation
(`as`) is refused rather than ignored. The CA and client certificate are loaded here, so
that one that cannot be used fails the load, not every request. Messages and `repr`s hold
no secret (YAML errors are reported by line and column, without the line).

This module imports no metrics and no Kubernetes client, so the operator's command line
can check the configuration before the supervisor sets up multiprocess metrics and starts
workers (which would otherwise crash-loop on it).
"""

from __future__ import annotations

import base64
import binascii
import os
import shutil
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cliques.kube import proxy
from cliques.kube.cluster import Cluster, context
from cliques.kube.credentials import Auth, ConfigError, Static, TokenFile
from cliques.kube.exec_credentials import (
    API_VERSIONS,
    INTERACTIVE_MODES,
    ExecPlugin,
    ExecSpec,
    cluster_info,
)

__all__ = ["Cluster", "ConfigError", "find", "from_files", "in_cluster", "load"]

SERVICE_HOST_ENV = "KUBERNETES_SERVICE_HOST"
SERVICE_PORT_ENV = "KUBERNETES_SERVICE_PORT"
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")

#: The fields read, by entry kind, and their types (anything else is ignored, as by client-go).
_FIELDS: dict[str, dict[str, type]] = {
    "cluster": {
        "server": str,
        "certificate-authority": str,
        "certificate-authority-data": str,
        "insecure-skip-tls-verify": bool,
        "tls-server-name": str,
        "proxy-url": str,
        "disable-compression": bool,
        "extensions": list,
    },
    "user": {
        "client-certificate": str,
        "client-certificate-data": str,
        "client-key": str,
        "client-key-data": str,
        "token": str,
        "tokenFile": str,
        "as": str,
        "as-uid": str,
        "as-groups": list,
        "as-user-extra": dict,
        "username": str,
        "password": str,
        "auth-provider": dict,
        "exec": dict,
        "extensions": list,
    },
    "context": {"cluster": str, "user": str, "namespace": str, "extensions": list},
    "exec": {
        "command": str,
        "args": list,
        "env": list,
        "apiVersion": str,
        "installHint": str,
        "provideClusterInfo": bool,
        "interactiveMode": str,
    },
}
_TOP: dict[str, type] = {
    "clusters": list,
    "users": list,
    "contexts": list,
    "current-context": str,
    "preferences": dict,
    "apiVersion": str,
    "kind": str,
    "extensions": list,
}
_IMPERSONATION = ("as", "as-uid", "as-groups", "as-user-extra")


@dataclass(frozen=True)
class Entry:
    """A named cluster, user or context: its fields, and the file that names it."""

    body: dict[str, Any]
    label: str  # 'cluster "dev"' (and the file, when several are merged)
    file: str

    @property
    def base(self) -> str:
        """Where its relative paths start."""
        return os.path.dirname(os.path.abspath(self.file))


#: kind ("clusters", "users", "contexts") -> name -> entry
Merged = dict[str, dict[str, Entry]]


async def load(kubeconfig: str | None = None, context: str | None = None) -> Cluster:
    """The cluster of `kubeconfig` (a path) and `context`, or, without a path, of
    $KUBECONFIG, the in-cluster service account or ~/.kube/config (in that order). Reads
    files; runs nothing (an exec plugin runs when a request needs it) and sends nothing.
    Raises `ConfigError`, one line."""
    return find(kubeconfig, context)


def find(kubeconfig: str | None = None, context: str | None = None) -> Cluster:
    """`load`, for a caller without an event loop (the files are small)."""
    where = f" (context {context!r})" if context else ""
    if kubeconfig:
        if not _readable(kubeconfig):
            raise ConfigError(f"kubeconfig {kubeconfig}: no such readable file")
        return _load_files([kubeconfig], context, f"cannot load {kubeconfig}{where}")
    env = os.environ.get("KUBECONFIG", "")
    if env:
        paths = [p for p in env.split(os.pathsep) if p]
        if not any(os.path.exists(p) for p in paths):
            raise ConfigError(
                f"no cluster configuration: $KUBECONFIG ({env}) names no file that exists"
            )
        return _load_files(paths, context, f"cannot load $KUBECONFIG ({env}){where}")
    cluster = in_cluster()
    if cluster is not None:
        return cluster
    home = os.path.expanduser("~/.kube/config")
    if not os.path.exists(home):
        raise ConfigError(
            "no cluster configuration: not running in a pod, $KUBECONFIG is not set and "
            f"there is no {home} (pass --kubeconfig)"
        )
    return _load_files([home], context, f"cannot load {home}{where}")


def _load_files(paths: list[str], context: str | None, prefix: str) -> Cluster:
    try:
        return from_files(paths, context)
    except ConfigError as exc:
        raise ConfigError(f"{prefix}: {exc}") from None


def in_cluster(
    environ: Mapping[str, str] = os.environ, account: Path | None = None
) -> Cluster | None:
    """The cluster of the pod this process runs in (None when it runs in none); raises
    `ConfigError` when the service account's token or CA cannot be used. `account`: the
    service account's directory (default `SERVICE_ACCOUNT`)."""
    account = account or SERVICE_ACCOUNT
    host, port = environ.get(SERVICE_HOST_ENV), environ.get(SERVICE_PORT_ENV)
    token, ca = account / "token", account / "ca.crt"
    if not host or not port or not token.is_file() or not ca.is_file():
        return None
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    server = f"https://{host}:{port}"
    auth = TokenFile(str(token))
    try:
        auth.read()
        ca_pem = _text(_read(str(ca)), str(ca))
        context(ca_pem, None)
        chosen = proxy.choose(server, None, environ)
    except ConfigError as exc:
        raise ConfigError(f"in-cluster configuration: {exc}") from None
    return Cluster(server, auth=auth, ca_pem=ca_pem, ca_source=str(ca), proxy=chosen)


def from_files(paths: list[str], context: str | None = None) -> Cluster:
    """The cluster of `context` (default: the current one) in the kubeconfig files
    `paths`, merged as client-go merges them."""
    merged, current = _merge(paths)
    name = context or current
    if not name:
        raise ConfigError("no current-context, and no context given")
    ctx = _entry(merged, "contexts", name)
    cluster_name = ctx.body.get("cluster")
    if not cluster_name:
        raise ConfigError(f"{ctx.label}: names no cluster")
    cluster = _entry(merged, "clusters", cluster_name)
    user_name = ctx.body.get("user")
    user = _entry(merged, "users", user_name) if user_name else None
    return _cluster(cluster, user)


def _merge(paths: list[str]) -> tuple[Merged, str]:
    """The entries of the files `paths` (the first file to name one wins; files that do
    not exist are skipped) and the first current-context set."""
    merged: Merged = {"clusters": {}, "users": {}, "contexts": {}}
    current = ""
    several = len(paths) > 1
    for path in paths:
        if not os.path.exists(path):
            continue
        doc = _document(path, several)
        current = current or doc.get("current-context") or ""
        for kind, entries in merged.items():
            for entry in _entries(doc, kind, path, several):
                entries.setdefault(entry[0], entry[1])
    return merged, current


def _document(path: str, several: bool) -> dict[str, Any]:
    """The kubeconfig file `path`, parsed and its fields' types checked."""
    where = f"{path}: " if several else ""
    text = _text(_read(path), path)
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}not YAML ({_yaml_problem(exc)})") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(
            f"{where}not a kubeconfig (a YAML mapping of clusters, users and contexts)"
        )
    _check_types(doc, _TOP, where.rstrip(": ") or "top level")
    return doc


def _entries(doc: dict[str, Any], kind: str, path: str, several: bool) -> list[tuple[str, Entry]]:
    """The named entries of `kind` in `doc`, each checked."""
    singular = kind[:-1]
    out = []
    for i, item in enumerate(doc.get(kind) or []):
        name = item.get("name") if isinstance(item, dict) else None
        label = f'{singular} "{name}"' if isinstance(name, str) else f"{kind}[{i}]"
        if several:
            label += f" (in {path})"
        if not isinstance(item, dict) or not isinstance(name, str):
            raise ConfigError(f"{label}: not a mapping with a name")
        body = item.get(singular)
        if body is None:
            body = {}
        if not isinstance(body, dict):
            raise ConfigError(f"{label}: {singular} is {_kind_of(body)}, not a mapping")
        _check_types(body, _FIELDS[singular], label)
        if singular == "user" and isinstance(body.get("exec"), dict):
            _check_types(body["exec"], _FIELDS["exec"], f"{label}: exec")
        out.append((name, Entry(body, label, path)))
    return out


def _check_types(obj: dict[str, Any], fields: dict[str, type], label: str) -> None:
    for key, want in fields.items():
        value = obj.get(key)
        if value is None or type(value) is want:
            continue
        if want is bool:
            shown = f"the string {value[:20]!r}" if isinstance(value, str) else _kind_of(value)
            raise ConfigError(f"{label}: {key} must be true or false, not {shown}")
        raise ConfigError(f"{label}: {key} must be {_KIND_NAMES[want]}, not {_kind_of(value)}")


_KIND_NAMES: dict[type, str] = {
    str: "a string",
    bool: "true or false",
    list: "a list",
    dict: "a mapping",
}


def _kind_of(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    for kind, name in _KIND_NAMES.items():
        if isinstance(value, kind):
            return name
    return f"a {type(value).__name__}"


def _entry(merged: Merged, kind: str, name: str) -> Entry:
    found = merged[kind].get(name)
    if found is None:
        raise ConfigError(f"no {kind[:-1]} named {name!r}")
    return found


def _cluster(cluster: Entry, user: Entry | None) -> Cluster:
    """The cluster entry as `user` reaches it."""
    c, where = cluster.body, cluster.label
    server = c.get("server")
    if not server:
        raise ConfigError(f"{where}: no server")
    url = urllib.parse.urlsplit(server)
    if url.scheme not in ("https", "http") or not url.hostname:
        raise ConfigError(f"{where}: server must be an https:// (or http://) URL")
    insecure = c.get("insecure-skip-tls-verify") is True
    ca_file, ca_data = c.get("certificate-authority"), c.get("certificate-authority-data")
    if ca_file and ca_data:
        raise ConfigError(f"{where}: both certificate-authority and -data are set: keep one")
    if insecure and (ca_file or ca_data):
        raise ConfigError(
            f"{where}: insecure-skip-tls-verify with a certificate-authority is not allowed"
        )
    ca_pem, ca_source = None, ""
    if ca_data:
        ca_source = "certificate-authority-data"
        ca_pem = _text(_base64(ca_data, f"{where}: {ca_source}"), f"{where}: {ca_source}")
    elif ca_file:
        path = _path(ca_file, cluster.base)
        ca_source = f"certificate-authority {path}"
        ca_pem = _text(_read(path, f"{where}: {ca_source}"), f"{where}: {ca_source}")
    if ca_pem is not None:
        if not ca_pem.strip():
            raise ConfigError(f"{where}: {ca_source}: empty")
        try:
            context(ca_pem, None)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {ca_source}: {exc}") from None
    u = user.body if user is not None else {}
    uwhere = user.label if user is not None else "the context's user"
    cert, auth = _user(u, uwhere, user.base if user is not None else "", c, ca_pem)
    out = Cluster(
        server.rstrip("/"),
        auth=auth,
        ca_pem=ca_pem,
        ca_source=ca_source.split(" ", 1)[-1] if ca_source else "",
        cert_pem=cert[0] if cert else None,
        key_pem=cert[1] if cert else None,
        verify=not insecure,
        server_hostname=c.get("tls-server-name") or None,
        proxy=proxy.choose(server, c.get("proxy-url")),
    )
    if cert is not None and url.scheme == "https":
        try:
            context(None, cert)
        except ConfigError as exc:
            raise ConfigError(f"{uwhere}: {exc}") from None
    out.ssl_context()
    return out


def _user(
    u: dict[str, Any], where: str, base: str, cluster: dict[str, Any], ca_pem: str | None
) -> tuple[tuple[bytes, bytes] | None, Auth]:
    """The user's client certificate and key, and how its requests authenticate (in
    client-go's order: a token or token file, basic credentials, an auth-provider, else an
    exec plugin when no client certificate is set)."""
    for key in _IMPERSONATION:
        if u.get(key):
            raise ConfigError(f"{where}: impersonation ({key}) is not supported")
    token, token_file = u.get("token"), u.get("tokenFile")
    username, password = u.get("username"), u.get("password")
    methods = [
        name
        for name, used in (
            ("token", token or token_file),
            ("username/password", username or password),
            ("auth-provider", u.get("auth-provider")),
        )
        if used
    ]
    if len(methods) > 1:
        raise ConfigError(f"{where}: more than one way to authenticate ({', '.join(methods)})")
    if u.get("exec") and u.get("auth-provider"):
        raise ConfigError(f"{where}: exec and auth-provider cannot be used together")
    cert_pem = _file_or_data(u, "client-certificate", base, where)
    key_pem = _file_or_data(u, "client-key", base, where)
    if (cert_pem is None) != (key_pem is None):
        missing = "client-key" if key_pem is None else "client-certificate"
        raise ConfigError(f"{where}: {missing} (or its -data) is missing")
    cert = (cert_pem, key_pem) if cert_pem is not None and key_pem is not None else None
    auth: Auth = Static()
    if token_file:
        auth = TokenFile(_path(token_file, base), fallback=token)
        try:
            auth.read()
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    elif token:
        auth = Static(f"Bearer {token}")
    elif username or password:
        basic = base64.b64encode(f"{username or ''}:{password or ''}".encode()).decode()
        auth = Static(f"Basic {basic}")
    elif u.get("auth-provider"):
        auth = _provider(u["auth-provider"], where)
    elif u.get("exec") and cert is None:
        auth = ExecPlugin(_exec_spec(u["exec"], f"{where}: exec", base, cluster, ca_pem))
    return cert, auth


def _exec_spec(
    e: dict[str, Any], where: str, base: str, cluster: dict[str, Any], ca_pem: str | None
) -> ExecSpec:
    command = e.get("command")
    if not command:
        raise ConfigError(f"{where}: no command")
    if e.get("apiVersion") not in API_VERSIONS:
        raise ConfigError(f"{where}: apiVersion must be one of {', '.join(API_VERSIONS)}")
    mode = e.get("interactiveMode") or "IfAvailable"
    if mode not in INTERACTIVE_MODES:
        raise ConfigError(f"{where}: interactiveMode must be one of {', '.join(INTERACTIVE_MODES)}")
    if mode == "Always":
        raise ConfigError(
            f"{where}: interactiveMode Always needs a terminal, and the operator has none"
        )
    args = e.get("args") or []
    if not all(isinstance(a, str) for a in args):
        raise ConfigError(f"{where}: args must be strings")
    env: list[tuple[str, str]] = []
    for item in e.get("env") or []:
        if not (
            isinstance(item, dict)
            and isinstance(item.get("name"), str)
            and isinstance(item.get("value"), str)
        ):
            raise ConfigError(f"{where}: env entries must have a string name and value")
        env.append((item["name"], item["value"]))
    resolved = _command(command, base)
    if resolved is None:
        hint = str(e.get("installHint") or "").strip().splitlines()
        raise ConfigError(
            f"{where}: command {command!r} not found" + (f" ({hint[0][:200]})" if hint else "")
        )
    info = cluster_info(cluster, ca_pem.encode() if ca_pem else None)
    return ExecSpec(
        resolved,
        tuple(args),
        tuple(env),
        e["apiVersion"],
        info if e.get("provideClusterInfo") else None,
    )


def _provider(provider: dict[str, Any], where: str) -> Auth:
    """An auth-provider: only `oidc` with an `id-token` (kubectl itself dropped the others;
    a token to refresh first is refused: refresh it with kubectl, or use an exec plugin)."""
    name = provider.get("name")
    config = provider.get("config") or {}
    token = config.get("id-token") if isinstance(config, dict) else None
    if name != "oidc":
        raise ConfigError(f"{where}: auth-provider {str(name)[:40]!r} is not supported (use exec)")
    if not isinstance(token, str) or not token:
        raise ConfigError(f"{where}: auth-provider oidc has no id-token (refresh it with kubectl)")
    return Static(f"Bearer {token}")


def _command(command: str, base: str) -> str | None:
    """An exec plugin's command, found: a relative path with a directory in it is relative
    to its kubeconfig, as kubectl has it; a bare name is looked up on $PATH (None: not
    found, or not executable)."""
    if os.sep in command:
        path = command if os.path.isabs(command) else os.path.normpath(os.path.join(base, command))
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which(command)


def _path(value: str, base: str) -> str:
    """A path of the kubeconfig, relative to its file's directory (as client-go: no `~`)."""
    return os.path.normpath(os.path.join(base, value))


def _file_or_data(obj: dict[str, Any], key: str, base: str, where: str) -> bytes | None:
    """`key`-data (base64) or the content of the file `key` names (not both)."""
    data, path = obj.get(f"{key}-data"), obj.get(key)
    if data and path:
        raise ConfigError(f"{where}: both {key} and {key}-data are set: keep one")
    if data:
        return _base64(data, f"{where}: {key}-data")
    if path:
        full = _path(path, base)
        return _read(full, f"{where}: {key} {full}")
    return None


def _base64(data: str, where: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(f"{where}: not base64") from None


def _read(path: str, where: str | None = None) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{where or path}: cannot be read ({exc.strerror})") from None


def _text(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: not UTF-8 text") from None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """What a YAML error says, by line and column, without quoting the line (it may hold
    a secret)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or "cannot be parsed"
    if mark is not None:
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    return str(problem)


def _readable(path: str) -> bool:
    try:
        with open(path, "rb"):
            return True
    except OSError:
        return False
