"""Loading the cluster configuration (files only, no API server): what loads, and the one
line a user reads when it does not."""

from __future__ import annotations

import asyncio
import base64
import os
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from cliques.kube import kubeconfig

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


def load(path: str | None, context: str | None = None) -> kubeconfig.Cluster:
    return asyncio.run(kubeconfig.load(path, context))


def test_a_kubeconfig_loads_with_its_server_and_token(tmp_path: Path) -> None:
    kc = tmp_path / "kc.yaml"
    kc.write_text(GOOD)
    cfg = load(str(kc))
    assert cfg.host == "https://127.0.0.1:6443"
    assert asyncio.run(cfg.auth.header()) == "Bearer abc"
    assert not cfg.verify
    assert load(str(kc), "other").host == "https://127.0.0.1:6443"


@pytest.mark.parametrize(
    ("content", "context", "message"),
    [
        (None, None, "kubeconfig {path}: no such readable file"),
        ("just a string\n", None, "cannot load {path}: not a kubeconfig"),
        (GOOD, "nope", "cannot load {path} (context 'nope'): "),
        (GOOD.replace("current-context: dev\n", ""), None, "cannot load {path}: "),
    ],
)
def test_what_cannot_be_loaded_is_said_in_one_line(
    tmp_path: Path, content: str | None, context: str | None, message: str
) -> None:
    kc = tmp_path / "kc.yaml"
    if content is not None:
        kc.write_text(content)
    with pytest.raises(kubeconfig.ConfigError) as err:
        load(str(kc), context)
    text = str(err.value)
    assert text.startswith(message.format(path=kc)) and "\n" not in text


def test_without_a_path_the_default_locations_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "a.yaml"))
    with pytest.raises(kubeconfig.ConfigError, match="no cluster configuration: not running in"):
        load(None)
    (tmp_path / "a.yaml").write_text(GOOD)
    assert load(None).host == "https://127.0.0.1:6443"


def _doc(name: str, user: dict[str, object], **cluster: object) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": name,
        "clusters": [{"name": name, "cluster": {"server": f"https://{name}:6443", **cluster}}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
    }


def test_kubeconfig_files_merge_as_kubectl_merges_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(yaml.safe_dump(_doc("a", {"token": "ta"})))
    other = _doc("b", {"token": "tb"})
    other["users"] = [{"name": "a", "user": {"token": "shadowed"}}, *other["users"]]  # type: ignore[misc]
    second.write_text(yaml.safe_dump(other))
    monkeypatch.setenv(
        "KUBECONFIG", os.pathsep.join([str(first), str(tmp_path / "no"), str(second)])
    )
    cfg = load(None)
    assert cfg.host == "https://a:6443"  # the first file's current-context
    assert asyncio.run(cfg.auth.header()) == "Bearer ta"  # the first file's user "a"
    assert asyncio.run(load(None, "b").auth.header()) == "Bearer tb"


def test_a_token_file_relative_to_its_kubeconfig_is_read_again(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    token = tmp_path / "sub" / "token"
    token.write_text("one\n")
    kc = tmp_path / "kc.yaml"
    kc.write_text(yaml.safe_dump(_doc("a", {"tokenFile": "sub/token"})))
    cfg = load(str(kc))
    auth = cfg.auth
    assert isinstance(auth, kubeconfig.TokenFile)
    assert asyncio.run(auth.header()) == "Bearer one"
    token.write_text("two")
    assert asyncio.run(auth.header()) == "Bearer one"  # within the period
    auth.period = 0.0
    assert asyncio.run(auth.header()) == "Bearer two"


def _plugin(tmp_path: Path, status: dict[str, object]) -> dict[str, object]:
    """An exec plugin that prints an ExecCredential with `status` and counts its runs."""
    script = tmp_path / "plugin.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import json, os, sys
            info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
            with open({str(tmp_path / "runs")!r}, "a") as f:
                f.write(os.environ.get("EXTRA", "") + "\\n")
            print(json.dumps({{"apiVersion": info["apiVersion"], "kind": "ExecCredential",
                              "status": {status!r}}}))
            """
        )
    )
    return {
        "command": sys.executable,
        "args": [str(script)],
        "apiVersion": "client.authentication.k8s.io/v1",
        "env": [{"name": "EXTRA", "value": "x"}],
    }


def test_an_exec_plugin_token_is_renewed_when_it_expires(tmp_path: Path) -> None:
    soon = "2000-01-01T00:00:00Z"  # long expired: every request runs it again
    kc = tmp_path / "kc.yaml"
    exec_ = _plugin(tmp_path, {"token": "from-plugin", "expirationTimestamp": soon})
    kc.write_text(yaml.safe_dump(_doc("a", {"exec": exec_})))
    cfg = load(str(kc))
    assert asyncio.run(cfg.auth.header()) == "Bearer from-plugin"
    assert (tmp_path / "runs").read_text() == "x\nx\n"
    later = _plugin(tmp_path, {"token": "t"})  # no expiry: run once, kept
    kc.write_text(yaml.safe_dump(_doc("a", {"exec": later})))
    (tmp_path / "runs").unlink()
    cfg = load(str(kc))
    asyncio.run(cfg.auth.header())
    assert (tmp_path / "runs").read_text() == "x\n"


def test_a_failing_exec_plugin_is_a_config_error(tmp_path: Path) -> None:
    kc = tmp_path / "kc.yaml"
    exec_ = {"command": "false", "apiVersion": "client.authentication.k8s.io/v1"}
    kc.write_text(yaml.safe_dump(_doc("a", {"exec": exec_})))
    with pytest.raises(kubeconfig.ConfigError, match="exec: false exited 1"):
        load(str(kc))


def test_client_certificate_data_and_basic_credentials(tmp_path: Path) -> None:
    kc = tmp_path / "kc.yaml"
    pem = b"-----BEGIN CERTIFICATE-----\n"
    user = {
        "client-certificate-data": base64.b64encode(pem).decode(),
        "client-key": "key.pem",
        "username": "u",
        "password": "p",
    }
    (tmp_path / "key.pem").write_bytes(b"key")
    kc.write_text(yaml.safe_dump(_doc("a", user, **{"tls-server-name": "api.local"})))
    cfg = load(str(kc))
    assert (cfg.cert_pem, cfg.key_pem) == (pem, b"key")
    assert cfg.server_hostname == "api.local" and cfg.verify
    assert asyncio.run(cfg.auth.header()) == "Basic " + base64.b64encode(b"u:p").decode()


def test_in_a_pod_the_service_account_is_used(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "ca.crt").write_text("ca")
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    cluster = kubeconfig.in_cluster(env, tmp_path)
    assert cluster is not None and cluster.host == "https://[fd00::1]:443"
    assert cluster.ca_file == str(tmp_path / "ca.crt")
    assert asyncio.run(cluster.auth.header()) == "Bearer sa-token"
    assert kubeconfig.in_cluster({}, tmp_path) is None
    assert kubeconfig.in_cluster(env, tmp_path / "nothing") is None
