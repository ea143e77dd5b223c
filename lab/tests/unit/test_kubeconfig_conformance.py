"""The operator's kubeconfig loader (`cliques.kube.kubeconfig`) against kubernetes-asyncio's
(`kubernetes_asyncio.config`, the client users write their own tooling with), on one corpus
of kubeconfig files: merged files through a $KUBECONFIG list, contexts, paths relative to
their file, exec plugins (small Python scripts), token files and proxies.

Each case is loaded by both. Where they agree, the test asserts that they do: the server,
the CA, the client certificate and key, the Authorization header, TLS verification, the
TLS server name and the proxy. Where they differ on purpose, it asserts what the
operator's loader does, and the comment says why (client-go's behaviour, or failing
closed where kubernetes-asyncio fails open).
"""

from __future__ import annotations

import asyncio
import base64
import os
import stat
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp.helpers
import pytest
import yaml
from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config import kube_config
from kubernetes_asyncio.config.config_exception import ConfigException
from tests.support import tls_files
from yarl import URL

from cliques.kube import kubeconfig
from cliques.kube.credentials import CredentialsUnavailable

V1 = "client.authentication.k8s.io/v1"
PROXY_ENV = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy")


@dataclass(frozen=True)
class View:
    """What a loader made of a kubeconfig, in terms both share."""

    server: str
    ca: bytes | None
    cert: bytes | None
    key: bytes | None
    authorization: str | None
    verify: bool
    server_name: str | None
    proxy: str | None


async def theirs(config_file: str, context: str | None) -> View:
    """kubernetes-asyncio's view: its Configuration, the files it names read, and the
    proxy its aiohttp session (trust_env) would take from the environment."""
    cfg = Configuration()
    await kube_config.load_kube_config(
        config_file=config_file, context=context, client_configuration=cfg, persist_config=False
    )
    proxy = cfg.proxy
    if proxy is None:
        try:
            proxy = str(aiohttp.helpers.get_env_proxy_for_url(URL(cfg.host))[0])
        except LookupError:
            proxy = None
    return View(
        server=cfg.host,
        ca=_read(cfg.ssl_ca_cert),
        cert=_read(cfg.cert_file),
        key=_read(cfg.key_file),
        authorization=cfg.api_key.get("BearerToken"),
        verify=bool(cfg.verify_ssl),
        server_name=cfg.tls_server_name,
        proxy=proxy,
    )


async def ours(config_file: str, context: str | None) -> View:
    """The operator's view: its Cluster, after the credentials of a first request."""
    paths = config_file.split(os.pathsep)
    cluster = kubeconfig.from_files(paths, context)
    authorization = await cluster.auth.header()
    cert = cluster.auth.client_cert() or (cluster.cert_pem, cluster.key_pem)
    return View(
        server=cluster.host,
        ca=cluster.ca_pem.encode() if cluster.ca_pem is not None else None,
        cert=cert[0],
        key=cert[1],
        authorization=authorization,
        verify=cluster.verify,
        server_name=cluster.server_hostname,
        proxy=cluster.proxy,
    )


def _read(path: str | None) -> bytes | None:
    return Path(path).read_bytes() if path else None


def load_both(config_file: str, context: str | None = None) -> tuple[View, View]:
    async def both() -> tuple[View, View]:
        return await theirs(config_file, context), await ours(config_file, context)

    return asyncio.run(both())


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in (*PROXY_ENV, "KUBECONFIG"):
        # setenv first records the variable's value, or its absence, for the undo: a case
        # that then sets the proxy environment itself leaves nothing behind for the tests
        # after it (a delenv of a variable that is not set records nothing).
        monkeypatch.setenv(var, "")
        monkeypatch.delenv(var)
    # Both loaders run plugins and read files from where the test says, not from here.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)


@pytest.fixture(scope="module")
def pems(tmp_path_factory: pytest.TempPathFactory) -> tls_files.Pems:
    return tls_files.make(tmp_path_factory.mktemp("pki"))


def config(
    name: str,
    user: dict[str, Any],
    cluster: dict[str, Any] | None = None,
    *,
    server: str = "https://api.example:6443",
    extra_contexts: tuple[str, ...] = (),
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": name,
        "clusters": [{"name": name, "cluster": {"server": server, **(cluster or {})}}],
        "users": [{"name": name, "user": user}],
        "contexts": [
            {"name": ctx, "context": {"cluster": name, "user": name}}
            for ctx in (name, *extra_contexts)
        ],
    }


def write(path: Path, doc: dict[str, Any]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def plugin(directory: Path, status: str, name: str = "plugin.py") -> Path:
    """An executable exec plugin (a Python script) printing an ExecCredential whose status
    is the Python expression `status`."""
    script = directory / name
    script.write_text(
        f"#!{sys.executable}\n"
        + textwrap.dedent(
            f"""
            import json
            print(json.dumps({{"apiVersion": {V1!r}, "kind": "ExecCredential",
                              "status": {status}}}))
            """
        )
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# -- where they agree ----------------------------------------------------------------------

AGREE: dict[str, Callable[[Path, tls_files.Pems], tuple[str, str | None]]] = {}


def agree(fn: Callable[[Path, tls_files.Pems], tuple[str, str | None]]) -> Any:
    AGREE[fn.__name__] = fn
    return fn


@agree
def token_and_ca_file_relative_to_the_kubeconfig(
    tmp: Path, pems: tls_files.Pems
) -> tuple[str, str | None]:
    (tmp / "pki").mkdir()
    (tmp / "pki" / "ca.crt").write_bytes(pems.ca.read_bytes())
    doc = config("a", {"token": "tok"}, {"certificate-authority": "pki/ca.crt"})
    return write(tmp / "kc.yaml", doc), None


@agree
def ca_data_and_client_certificate_data(tmp: Path, pems: tls_files.Pems) -> tuple[str, str | None]:
    user = {
        "client-certificate-data": b64(pems.cert.read_bytes()),
        "client-key-data": b64(pems.key.read_bytes()),
    }
    doc = config("a", user, {"certificate-authority-data": b64(pems.ca.read_bytes())})
    return write(tmp / "kc.yaml", doc), None


@agree
def client_certificate_files_relative_to_the_kubeconfig(
    tmp: Path, pems: tls_files.Pems
) -> tuple[str, str | None]:
    (tmp / "certs").mkdir()
    (tmp / "certs" / "me.crt").write_bytes(pems.cert.read_bytes())
    (tmp / "certs" / "me.key").write_bytes(pems.key.read_bytes())
    user = {"client-certificate": "certs/me.crt", "client-key": "certs/me.key"}
    return write(tmp / "kc.yaml", config("a", user, {"insecure-skip-tls-verify": True})), None


@agree
def basic_credentials_and_a_tls_server_name(
    tmp: Path, pems: tls_files.Pems
) -> tuple[str, str | None]:
    doc = config("a", {"username": "u", "password": "p"}, {"tls-server-name": "api.internal"})
    return write(tmp / "kc.yaml", doc), None


@agree
def token_file_relative_to_the_kubeconfig(
    tmp: Path, pems: tls_files.Pems
) -> tuple[str, str | None]:
    (tmp / "tokens").mkdir()
    (tmp / "tokens" / "t").write_text("from-file")
    return write(tmp / "kc.yaml", config("a", {"tokenFile": "tokens/t"})), None


@agree
def proxy_url_of_the_cluster(tmp: Path, pems: tls_files.Pems) -> tuple[str, str | None]:
    doc = config("a", {"token": "t"}, {"proxy-url": "http://proxy.example:3128"})
    return write(tmp / "kc.yaml", doc), None


@agree
def a_context_other_than_the_current_one(tmp: Path, pems: tls_files.Pems) -> tuple[str, str | None]:
    doc = config("a", {"token": "t"}, extra_contexts=("b",))
    doc["clusters"].append({"name": "b", "cluster": {"server": "https://b.example:443"}})
    doc["users"].append({"name": "b", "user": {"token": "tb"}})
    doc["contexts"][1]["context"] = {"cluster": "b", "user": "b"}
    return write(tmp / "kc.yaml", doc), "b"


@agree
def merged_files_a_context_of_the_second(tmp: Path, pems: tls_files.Pems) -> tuple[str, str | None]:
    first = write(tmp / "one" / "config", config("a", {"token": "ta"}))
    second = write(
        tmp / "two" / "config", config("b", {"token": "tb"}, server="https://b.example:443")
    )
    return os.pathsep.join([first, second]), "b"


@agree
def merged_files_the_first_to_name_an_entry_wins(
    tmp: Path, pems: tls_files.Pems
) -> tuple[str, str | None]:
    first = write(tmp / "one" / "config", config("a", {"token": "first"}))
    second = write(tmp / "two" / "config", config("a", {"token": "second"}))
    return os.pathsep.join([first, second]), "a"


@agree
def exec_plugin_token_by_absolute_path(tmp: Path, pems: tls_files.Pems) -> tuple[str, str | None]:
    script = plugin(tmp, "{'token': 'from-plugin'}")
    user = {"exec": {"apiVersion": V1, "command": str(script), "interactiveMode": "Never"}}
    return write(tmp / "kc.yaml", config("a", user)), None


@agree
def exec_plugin_with_args_and_env(tmp: Path, pems: tls_files.Pems) -> tuple[str, str | None]:
    script = plugin(
        tmp, "{'token': __import__('os').environ['WHO'] + '-' + __import__('sys').argv[1]}"
    )
    user = {
        "exec": {
            "apiVersion": V1,
            "command": sys.executable,
            "args": [str(script), "arg"],
            "env": [{"name": "WHO", "value": "me"}],
        }
    }
    return write(tmp / "kc.yaml", config("a", user)), None


@agree
def exec_plugin_client_certificate(tmp: Path, pems: tls_files.Pems) -> tuple[str, str | None]:
    status = (
        f"{{'clientCertificateData': open({str(pems.cert)!r}).read(), "
        f"'clientKeyData': open({str(pems.key)!r}).read()}}"
    )
    user = {"exec": {"apiVersion": V1, "command": str(plugin(tmp, status))}}
    return write(tmp / "kc.yaml", config("a", user)), None


@agree
def environment_proxy_and_a_no_proxy_domain(
    tmp: Path, pems: tls_files.Pems
) -> tuple[str, str | None]:
    os.environ["HTTPS_PROXY"] = "http://env-proxy:3128"
    os.environ["NO_PROXY"] = "other.example"
    return write(tmp / "kc.yaml", config("a", {"token": "t"})), None


@agree
def environment_proxy_bypassed_for_a_no_proxy_domain(
    tmp: Path, pems: tls_files.Pems
) -> tuple[str, str | None]:
    os.environ["HTTPS_PROXY"] = "http://env-proxy:3128"
    os.environ["NO_PROXY"] = "localhost,example"
    return write(tmp / "kc.yaml", config("a", {"token": "t"})), None


@pytest.mark.parametrize("case", sorted(AGREE))
def test_both_loaders_agree(case: str, tmp_path: Path, pems: tls_files.Pems) -> None:
    # A case may set the proxy environment: the autouse fixture restores it after.
    config_file, context = AGREE[case](tmp_path, pems)
    their_view, our_view = load_both(config_file, context)
    assert our_view == their_view


def test_the_agreeing_corpus_covers_what_both_read(
    tmp_path: Path, pems: tls_files.Pems, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The corpus is not vacuous: between them, the cases set every field compared."""
    views = []
    for name, case in AGREE.items():
        for var in PROXY_ENV:
            monkeypatch.delenv(var, raising=False)
        directory = tmp_path / name
        directory.mkdir()
        views.append(load_both(*case(directory, pems))[1])
    assert any(v.ca for v in views) and any(v.cert and v.key for v in views)
    assert {v.authorization.split()[0] for v in views if v.authorization} == {"Bearer", "Basic"}
    assert any(not v.verify for v in views) and any(v.server_name for v in views)
    assert any(v.proxy for v in views) and any(v.proxy is None for v in views)


# -- where they differ on purpose ----------------------------------------------------------


def test_a_quoted_false_is_refused_where_kubernetes_asyncio_turns_verification_off(
    tmp_path: Path,
) -> None:
    """Fail closed: `insecure-skip-tls-verify: "false"` is a string, which client-go refuses;
    kubernetes-asyncio negates its truthiness and verifies nothing."""
    path = write(
        tmp_path / "kc.yaml", config("a", {"token": "t"}, {"insecure-skip-tls-verify": "false"})
    )
    cfg = Configuration()
    asyncio.run(
        kube_config.load_kube_config(
            config_file=path, client_configuration=cfg, persist_config=False
        )
    )
    assert cfg.verify_ssl is False  # theirs: TLS verification off
    with pytest.raises(
        kubeconfig.ConfigError, match="insecure-skip-tls-verify must be true or false"
    ):
        asyncio.run(ours(path, None))


def test_the_first_current_context_wins_as_in_client_go(tmp_path: Path) -> None:
    """client-go (and kubectl) take the first file's current-context; kubernetes-asyncio
    the last one's."""
    first = write(tmp_path / "one" / "config", config("a", {"token": "ta"}))
    second = write(
        tmp_path / "two" / "config", config("b", {"token": "tb"}, server="https://b.example:443")
    )
    their_view, our_view = load_both(os.pathsep.join([first, second]))
    assert their_view.server == "https://b.example:443"
    assert our_view.server == "https://api.example:6443"


def test_a_users_certificate_is_relative_to_the_users_file(
    tmp_path: Path, pems: tls_files.Pems
) -> None:
    """client-go resolves an entry's relative paths against the file that holds the entry;
    kubernetes-asyncio resolves the user's certificate against the cluster's file."""
    clusters = config("a", {})
    del clusters["users"]
    first = write(tmp_path / "clusters" / "config", clusters)
    (tmp_path / "users" / "pki").mkdir(parents=True)
    (tmp_path / "users" / "pki" / "me.crt").write_bytes(pems.cert.read_bytes())
    (tmp_path / "users" / "pki" / "me.key").write_bytes(pems.key.read_bytes())
    users = {
        "users": [
            {"name": "a", "user": {"client-certificate": "pki/me.crt", "client-key": "pki/me.key"}}
        ]
    }
    second = write(tmp_path / "users" / "config", users)
    paths = os.pathsep.join([first, second])
    with pytest.raises(ConfigException, match="File does not exists"):
        asyncio.run(theirs(paths, None))
    our_view = asyncio.run(ours(paths, None))
    assert (our_view.cert, our_view.key) == (pems.cert.read_bytes(), pems.key.read_bytes())


def test_a_relative_exec_command_is_relative_to_its_kubeconfig(tmp_path: Path) -> None:
    """As kubectl has it: a command with a directory in it is relative to the kubeconfig,
    not to the process's working directory (kubernetes-asyncio runs it from there)."""
    (tmp_path / "bin").mkdir()
    plugin(tmp_path / "bin", "{'token': 'relative'}", name="kubectl-token")
    user = {"exec": {"apiVersion": V1, "command": "./bin/kubectl-token"}}
    path = write(tmp_path / "kc.yaml", config("a", user))
    with pytest.raises((ConfigException, OSError)):
        asyncio.run(theirs(path, None))
    assert asyncio.run(ours(path, None)).authorization == "Bearer relative"


def test_a_no_proxy_cidr_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Go's httpproxy reads CIDRs in NO_PROXY (a pod's API server is reached by its service
    IP); Python's urllib, which kubernetes-asyncio's aiohttp session uses, does not."""
    monkeypatch.setenv("HTTPS_PROXY", "http://env-proxy:3128")
    monkeypatch.setenv("NO_PROXY", "10.96.0.0/12")
    path = write(tmp_path / "kc.yaml", config("a", {"token": "t"}, server="https://10.96.0.1:443"))
    their_view, our_view = load_both(path)
    assert their_view.proxy == "http://env-proxy:3128"
    assert our_view.proxy is None


def test_a_token_wins_over_an_exec_plugin_as_in_client_go(tmp_path: Path) -> None:
    """client-go uses a user's token and leaves its exec plugin unused; kubernetes-asyncio
    runs the plugin."""
    script = plugin(tmp_path, "{'token': 'from-plugin'}")
    user = {"token": "static", "exec": {"apiVersion": V1, "command": str(script)}}
    their_view, our_view = load_both(write(tmp_path / "kc.yaml", config("a", user)))
    assert their_view.authorization == "Bearer from-plugin"
    assert our_view.authorization == "Bearer static"


def test_a_token_file_wins_over_a_token_as_in_client_go(tmp_path: Path) -> None:
    """client-go reads `tokenFile` (again and again: it is rotated) and keeps `token` as
    the fallback; kubernetes-asyncio takes `token`."""
    (tmp_path / "t").write_text("from-file")
    user = {"token": "static", "tokenFile": "t"}
    their_view, our_view = load_both(write(tmp_path / "kc.yaml", config("a", user)))
    assert their_view.authorization == "Bearer static"
    assert our_view.authorization == "Bearer from-file"


def test_an_expired_exec_credential_is_refused(tmp_path: Path) -> None:
    """Fail closed: a plugin that prints a credential already expired gets a retryable
    error, not a request sent with it; kubernetes-asyncio sends it."""
    script = plugin(tmp_path, "{'token': 'old', 'expirationTimestamp': '2000-01-01T00:00:00Z'}")
    user = {"exec": {"apiVersion": V1, "command": str(script)}}
    path = write(tmp_path / "kc.yaml", config("a", user))
    assert asyncio.run(theirs(path, None)).authorization == "Bearer old"
    with pytest.raises(CredentialsUnavailable, match="has expired"):
        asyncio.run(ours(path, None))
