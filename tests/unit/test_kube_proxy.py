"""The client's proxy decision, made once per client instead of once per request."""

from __future__ import annotations

import pytest

from cliques.kube.client import proxy_settings


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)


def test_no_proxy_configured() -> None:
    assert proxy_settings("https://10.0.0.1:6443", None, None) == {}


def test_kubeconfig_proxy_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://env-proxy:3128")
    got = proxy_settings("https://api:6443", "http://cfg-proxy:8080", {"X-A": "1"})
    assert got == {"proxy": "http://cfg-proxy:8080", "proxy_headers": {"X-A": "1"}}


def test_environment_proxy_by_scheme(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://env-proxy:3128")
    assert proxy_settings("https://api.example:6443", None, None) == {
        "proxy": "http://env-proxy:3128"
    }
    assert proxy_settings("http://api.example:8080", None, None) == {}


def test_no_proxy_bypasses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://env-proxy:3128")
    monkeypatch.setenv("NO_PROXY", "api.example,127.0.0.1")
    assert proxy_settings("https://api.example:6443", None, None) == {}
    assert proxy_settings("https://127.0.0.1:6443", None, None) == {}
    assert proxy_settings("https://other.example:6443", None, None) == {
        "proxy": "http://env-proxy:3128"
    }
