"""Loading the cluster configuration (files only, no API server): what loads, what is
refused (fail closed, as client-go refuses it), in which order the places are looked at,
and the one line a user reads when it does not load, with no secret in it."""

from __future__ import annotations

import asyncio
import base64
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from cliques.kube import exec_credentials, kubeconfig
from cliques.kube.credentials import Static, TokenFile
from tests.support import tls_files

GOOD = """apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: me
  user: {token: abc}
contexts:
- name: dev
  context: {cluster: dev, user: me}
- name: other
  context: {cluster: dev, user: me, namespace: x}
"""


@pytest.fixture(autouse=True)
def _no_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


@pytest.fixture(scope="module")
def pems(tmp_path_factory: pytest.TempPathFactory) -> tls_files.Pems:
    return tls_files.make(tmp_path_factory.mktemp("pki"))


def load(path: str | None, context: str | None = None) -> kubeconfig.Cluster:
    return asyncio.run(kubeconfig.load(path, context))


def header(cluster: kubeconfig.Cluster) -> str | None:
    return asyncio.run(cluster.auth.header())


def _doc(name: str, user: dict[str, Any], **cluster: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": name,
        "clusters": [{"name": name, "cluster": {"server": f"https://{name}:6443", **cluster}}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
    }


def _write(path: Path, doc: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_a_kubeconfig_loads_with_its_server_and_token(tmp_path: Path) -> None:
    kc = tmp_path / "kc.yaml"
    kc.write_text(GOOD)
    cfg = load(str(kc))
    assert cfg.host == "https://127.0.0.1:6443"
    assert header(cfg) == "Bearer abc"
    assert not cfg.verify
    assert load(str(kc), "other").host == "https://127.0.0.1:6443"


@pytest.mark.parametrize(
    ("content", "context", "message"),
    [
        (None, None, "kubeconfig {path}: no such readable file"),
        ("just a string\n", None, "cannot load {path}: not a kubeconfig"),
        ("clusters: [\n  token: s3cret-value\n", None, "cannot load {path}: not YAML ("),
        (b"\xff\xfe", None, "cannot load {path}: {path}: not UTF-8 text"),
        (GOOD, "nope", "cannot load {path} (context 'nope'): no context named 'nope'"),
        (GOOD.replace("current-context: dev\n", ""), None, "cannot load {path}: no current-"),
        ("clusters: {a: b}\n", None, "cannot load {path}: top level: clusters must be a list"),
        (
            GOOD.replace("{token: abc}", "{token: 12345}"),
            None,
            'cannot load {path}: user "me": token must be a string, not a number',
        ),
        (
            GOOD.replace("server: ", "server: ftp://").replace('"https://', '"'),
            None,
            'cannot load {path}: cluster "dev": server must be an https:// (or http://) URL',
        ),
    ],
)
def test_what_cannot_be_loaded_is_said_in_one_line(
    tmp_path: Path, content: str | bytes | None, context: str | None, message: str
) -> None:
    kc = tmp_path / "kc.yaml"
    if isinstance(content, bytes):
        kc.write_bytes(content)
    elif content is not None:
        kc.write_text(content)
    with pytest.raises(kubeconfig.ConfigError) as err:
        load(str(kc), context)
    text = str(err.value)
    assert text.startswith(message.format(path=kc)), text
    assert "\n" not in text and "s3cret" not in text


def test_a_quoted_false_is_refused_naming_the_file_entry_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """client-go refuses a string where a boolean goes; Python's truthiness would have
    turned TLS verification off for "false"."""
    doc = _doc("dev", {"token": "t"}, **{"insecure-skip-tls-verify": "false"})
    path = _write(tmp_path / "kc.yaml", doc)
    with pytest.raises(kubeconfig.ConfigError) as err:
        load(path)
    assert str(err.value) == (
        f'cannot load {path}: cluster "dev": insecure-skip-tls-verify must be true or false, '
        "not the string 'false'"
    )
    # In a merged set, the file is named with the entry; an unused entry is checked too.
    good = _write(tmp_path / "good.yaml", _doc("ok", {"token": "t"}))
    bad = _doc("other", {"token": "t"}, **{"insecure-skip-tls-verify": 0})
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([good, _write(tmp_path / "bad.yaml", bad)]))
    with pytest.raises(kubeconfig.ConfigError, match=r'cluster "other" \(in .*bad.yaml\): '):
        load(None)
    doc["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    doc["users"][0]["user"]["exec"] = {"command": "x", "provideClusterInfo": "yes"}
    with pytest.raises(kubeconfig.ConfigError, match="exec: provideClusterInfo must be"):
        load(_write(tmp_path / "kc.yaml", doc))


@pytest.mark.parametrize(
    ("user", "cluster", "message"),
    [
        ({"token": "t"}, {"insecure-skip-tls-verify": True, "certificate-authority": "x"},
         "insecure-skip-tls-verify with a certificate-authority is not allowed"),
        ({"token": "t"}, {"certificate-authority": "x", "certificate-authority-data": "eA=="},
         "both certificate-authority and -data are set"),
        ({"token": "t", "username": "u", "password": "p"}, {},
         "more than one way to authenticate (token, username/password)"),
        ({"token": "t", "as": "admin"}, {}, "impersonation (as) is not supported"),
        ({"client-certificate-data": "eA=="}, {}, "client-key (or its -data) is missing"),
        ({"auth-provider": {"name": "gcp"}}, {}, "auth-provider 'gcp' is not supported"),
        ({"exec": {"command": "no-such-plugin-here", "apiVersion": exec_credentials.API_VERSIONS[0],
                   "installHint": "install it\nfrom somewhere"}}, {},
         "exec: command 'no-such-plugin-here' not found (install it)"),
        ({"exec": {"command": "true", "apiVersion": "client.authentication.k8s.io/v1alpha1"}},
         {}, "exec: apiVersion must be one of"),
        ({"exec": {"command": "true", "apiVersion": exec_credentials.API_VERSIONS[0],
                   "interactiveMode": "Always"}}, {}, "interactiveMode Always needs a terminal"),
        ({"token": "t"}, {"certificate-authority-data": "not base64!"},
         "certificate-authority-data: not base64"),
        ({"token": "t"}, {"proxy-url": "socks5://proxy:1080"},
         "proxy-url: a socks5 proxy is not supported"),
    ],
)  # fmt: skip
def test_what_client_go_refuses_is_refused(
    tmp_path: Path, user: dict[str, Any], cluster: dict[str, Any], message: str
) -> None:
    path = _write(tmp_path / "kc.yaml", _doc("a", user, **cluster))
    with pytest.raises(kubeconfig.ConfigError) as err:
        load(path)
    assert message in str(err.value)


@pytest.mark.parametrize(
    "ca",
    [
        b"",
        b"not a certificate\n",
        b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    ],
)
def test_a_ca_that_cannot_be_used_fails_the_load(tmp_path: Path, ca: bytes) -> None:
    (tmp_path / "ca.crt").write_bytes(ca)
    path = _write(
        tmp_path / "kc.yaml", _doc("a", {"token": "t"}, **{"certificate-authority": "ca.crt"})
    )
    with pytest.raises(kubeconfig.ConfigError) as err:
        load(path)
    text = str(err.value)
    assert text.startswith(f'cannot load {path}: cluster "a": certificate-authority ')
    assert str(tmp_path / "ca.crt") in text and "\n" not in text
    (tmp_path / "ca.crt").unlink()
    with pytest.raises(kubeconfig.ConfigError, match=r"ca\.crt: cannot be read"):
        load(path)


def test_a_ca_and_client_certificate_load_from_files_relative_to_their_kubeconfig(
    tmp_path: Path, pems: tls_files.Pems
) -> None:
    user = {"client-certificate": str(pems.cert), "client-key": os.path.relpath(pems.key, tmp_path)}
    cluster = {"certificate-authority-data": base64.b64encode(pems.ca.read_bytes()).decode()}
    path = _write(tmp_path / "kc.yaml", _doc("a", user, **cluster))
    cfg = load(path)
    assert (cfg.cert_pem, cfg.key_pem) == (pems.cert.read_bytes(), pems.key.read_bytes())
    assert cfg.ca_pem == pems.ca.read_text() and cfg.verify
    ctx = cfg.ssl_context()
    assert ctx is not None and ctx.check_hostname and len(ctx.get_ca_certs()) == 1
    assert cfg.ssl_context() is ctx  # built once
    # A key that is not the certificate's is refused when loaded.
    other = tls_files.make(tmp_path / "other")
    user["client-key"] = str(other.key)
    with pytest.raises(kubeconfig.ConfigError, match='user "a": client certificate and key'):
        load(_write(tmp_path / "kc.yaml", _doc("a", user, **cluster)))


def test_the_lookup_order_is_controller_runtimes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pems: tls_files.Pems
) -> None:
    """--kubeconfig, then $KUBECONFIG (before the in-cluster account), then in-cluster, then
    ~/.kube/config."""
    account = tmp_path / "sa"
    account.mkdir()
    (account / "token").write_text("sa-token")
    (account / "ca.crt").write_bytes(pems.ca.read_bytes())
    monkeypatch.setattr(kubeconfig, "SERVICE_ACCOUNT", account)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    home = tmp_path / "home" / ".kube"
    home.mkdir(parents=True)
    _write(home / "config", _doc("home", {"token": "t"}))
    env = _write(tmp_path / "env.yaml", _doc("env", {"token": "t"}))
    flag = _write(tmp_path / "flag.yaml", _doc("flag", {"token": "t"}))

    monkeypatch.setenv("KUBECONFIG", env)
    assert load(flag).host == "https://flag:6443"
    assert load(None).host == "https://env:6443"
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing.yaml"))
    with pytest.raises(kubeconfig.ConfigError, match=r"\$KUBECONFIG .* names no file"):
        load(None)  # not the in-cluster account: $KUBECONFIG is set
    monkeypatch.delenv("KUBECONFIG")
    assert load(None).host == "https://10.0.0.1:443"
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    assert load(None).host == "https://home:6443"
    (home / "config").unlink()
    with pytest.raises(kubeconfig.ConfigError, match="no cluster configuration: not running in"):
        load(None)


def test_kubeconfig_files_merge_as_client_go_merges_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    _write(first, _doc("a", {"token": "ta"}))
    other = _doc("b", {"token": "tb"})
    other["users"] = [{"name": "a", "user": {"token": "shadowed"}}, *other["users"]]
    _write(second, other)
    monkeypatch.setenv(
        "KUBECONFIG", os.pathsep.join([str(first), str(tmp_path / "no"), str(second)])
    )
    cfg = load(None)
    assert cfg.host == "https://a:6443"  # the first file's current-context
    assert header(cfg) == "Bearer ta"  # the first file's user "a"
    assert header(load(None, "b")) == "Bearer tb"


def test_a_token_file_relative_to_its_kubeconfig_is_read_again(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    token = tmp_path / "sub" / "token"
    token.write_text("one\n")
    cfg = load(_write(tmp_path / "kc.yaml", _doc("a", {"tokenFile": "sub/token"})))
    auth = cfg.auth
    assert isinstance(auth, TokenFile)
    assert header(cfg) == "Bearer one"
    token.write_text("two")
    assert header(cfg) == "Bearer one"  # within the period
    auth.refused("Bearer one")  # a 401: read again at once
    assert header(cfg) == "Bearer two"
    token.unlink()
    auth.period = 0.0
    assert header(cfg) == "Bearer two"  # a file gone keeps the last token


def test_client_certificate_data_and_basic_credentials(
    tmp_path: Path, pems: tls_files.Pems
) -> None:
    user = {
        "client-certificate-data": base64.b64encode(pems.cert.read_bytes()).decode(),
        "client-key": str(pems.key),
        "username": "u",
        "password": "p",
    }
    path = _write(tmp_path / "kc.yaml", _doc("a", user, **{"tls-server-name": "api.local"}))
    cfg = load(path)
    assert (cfg.cert_pem, cfg.key_pem) == (pems.cert.read_bytes(), pems.key.read_bytes())
    assert cfg.server_hostname == "api.local" and cfg.verify
    assert header(cfg) == "Basic " + base64.b64encode(b"u:p").decode()


def test_no_secret_in_repr_or_errors(tmp_path: Path, pems: tls_files.Pems) -> None:
    user = {
        "token": "tok-SECRET",
        "client-certificate": str(pems.cert),
        "client-key": str(pems.key),
    }
    cluster = {"proxy-url": "http://user:pw-SECRET@proxy:3128"}
    cfg = load(_write(tmp_path / "kc.yaml", _doc("a", user, **cluster)))
    text = repr(cfg)
    assert "SECRET" not in text and "PRIVATE KEY" not in text
    assert "<redacted>" in text and "https://a:6443" in text
    assert "SECRET" not in repr(Static("Basic " + base64.b64encode(b"u:SECRET").decode()))
    # A YAML error names the line, never quotes it.
    (tmp_path / "bad.yaml").write_text("users:\n- name: a\n  user: {token: tok-SECRET\n")
    with pytest.raises(kubeconfig.ConfigError) as err:
        load(str(tmp_path / "bad.yaml"))
    assert "SECRET" not in str(err.value) and "line" in str(err.value)


def test_in_a_pod_the_service_account_is_used(
    tmp_path: Path, pems: tls_files.Pems, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "ca.crt").write_bytes(pems.ca.read_bytes())
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    cluster = kubeconfig.in_cluster(env, tmp_path)
    assert cluster is not None and cluster.host == "https://[fd00::1]:443"
    assert cluster.ca_pem == pems.ca.read_text() and cluster.proxy is None
    assert header(cluster) == "Bearer sa-token"
    assert kubeconfig.in_cluster({}, tmp_path) is None
    assert kubeconfig.in_cluster(env, tmp_path / "nothing") is None
    # Behind a proxy, the service IP in NO_PROXY's CIDR goes direct.
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443",
           "HTTPS_PROXY": "proxy:3128", "NO_PROXY": "10.96.0.0/12,.svc"}  # fmt: skip
    cluster = kubeconfig.in_cluster(env, tmp_path)
    assert cluster is not None and cluster.proxy is None
    env["NO_PROXY"] = ".svc"
    cluster = kubeconfig.in_cluster(env, tmp_path)
    assert cluster is not None and cluster.proxy == "http://proxy:3128"
    (tmp_path / "ca.crt").write_text("ca")
    with pytest.raises(kubeconfig.ConfigError, match=r"in-cluster configuration: .*not a PEM"):
        kubeconfig.in_cluster(env, tmp_path)
