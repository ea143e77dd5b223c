"""Loading the cluster configuration (files only, no API server): what loads, and the one
line a user reads when it does not."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

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


def load(path: str | None, context: str | None = None) -> object:
    return asyncio.run(kubeconfig.load(path, context))


def test_a_kubeconfig_loads_with_its_server_and_token(tmp_path: Path) -> None:
    kc = tmp_path / "kc.yaml"
    kc.write_text(GOOD)
    cfg = load(str(kc))
    assert cfg.host == "https://127.0.0.1:6443"  # type: ignore[attr-defined]
    assert cfg.api_key["BearerToken"] == "Bearer abc"  # type: ignore[attr-defined]
    assert load(str(kc), "other").host == "https://127.0.0.1:6443"  # type: ignore[attr-defined]


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
    assert load(None).host == "https://127.0.0.1:6443"  # type: ignore[attr-defined]
