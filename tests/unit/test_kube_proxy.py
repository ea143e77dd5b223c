"""The proxy of the API server's requests, chosen as client-go chooses it (Go's httpproxy):
the kubeconfig's proxy-url, else HTTPS_PROXY/HTTP_PROXY with NO_PROXY's IPs, CIDRs,
domains and ports."""

from __future__ import annotations

import pytest

from cliques.kube import proxy
from cliques.kube.credentials import ConfigError

ENV = {"HTTPS_PROXY": "http://env-proxy:3128"}


def test_no_proxy_configured() -> None:
    assert proxy.choose("https://10.0.0.1:6443", None, {}) is None


def test_the_kubeconfig_proxy_wins_over_the_environment() -> None:
    env = {**ENV, "NO_PROXY": "*"}
    assert proxy.choose("https://api:6443", "http://cfg-proxy:8080", env) == "http://cfg-proxy:8080"


def test_the_proxy_of_the_servers_scheme_only() -> None:
    assert proxy.choose("https://api.example:6443", None, ENV) == "http://env-proxy:3128"
    assert proxy.choose("http://api.example:8080", None, ENV) is None  # no HTTPS_PROXY fallback
    env = {"HTTP_PROXY": "http://plain:3128"}
    assert proxy.choose("http://api.example:8080", None, env) == "http://plain:3128"
    assert proxy.choose("https://api.example:6443", None, env) is None


def test_upper_case_first_and_a_scheme_less_proxy_is_http() -> None:
    env = {"https_proxy": "lower:1", "HTTPS_PROXY": "upper:2"}
    assert proxy.choose("https://api:6443", None, env) == "http://upper:2"
    assert proxy.choose("https://api:6443", None, {"https_proxy": "lower:1"}) == "http://lower:1"
    env = {**ENV, "no_proxy": "api"}
    assert proxy.choose("https://api:6443", None, env) is None


@pytest.mark.parametrize(
    ("server", "no_proxy", "direct"),
    [
        # loopback and localhost never go through a proxy
        ("https://localhost:6443", "", True),
        ("https://127.0.0.1:6443", "", True),
        ("https://[::1]:6443", "", True),
        # *
        ("https://api.example:6443", "*", True),
        ("https://api.example:6443", "other, *", True),
        # CIDRs: the service IP of a pod's API server
        ("https://10.96.0.1:443", "10.96.0.0/12", True),
        ("https://10.112.0.1:443", "10.96.0.0/12", False),
        ("https://[fd00:10:96::1]:443", "fd00:10:96::/112", True),
        ("https://api.example:443", "10.96.0.0/12", False),
        # IPs, with or without a port
        ("https://10.0.0.5:6443", "10.0.0.5", True),
        ("https://10.0.0.5:6443", "10.0.0.5:6443", True),
        ("https://10.0.0.5:6443", "10.0.0.5:443", False),
        ("https://10.0.0.5", "10.0.0.5:443", True),  # the scheme's default port
        ("https://[fd00::5]:6443", "[fd00::5]:6443", True),
        ("https://[fd00::5]:6443", "fd00::5", True),
        # domains: the name and its subdomains; a leading dot or *. only subdomains
        ("https://example.com:6443", "example.com", True),
        ("https://api.example.com:6443", "example.com", True),
        ("https://notexample.com:6443", "example.com", False),
        ("https://api.example.com:6443", ".example.com", True),
        ("https://example.com:6443", ".example.com", False),
        ("https://api.example.com:6443", "*.example.com", True),
        ("https://API.Example.COM:6443", " EXAMPLE.com ", True),
        ("https://api.example.com:6443", "example.com:6443", True),
        ("https://api.example.com:6443", "example.com:443", False),
        ("https://kubernetes.default.svc:443", "foo,.svc,bar", True),
        ("https://api.example.com:6443", ",,", False),
    ],
)
def test_no_proxy_is_read_as_client_go_reads_it(server: str, no_proxy: str, direct: bool) -> None:
    chosen = proxy.choose(server, None, {**ENV, "NO_PROXY": no_proxy})
    assert (chosen is None) == direct


@pytest.mark.parametrize(
    ("proxy_url", "env", "message"),
    [
        ("socks5://p:1080", {}, "proxy-url: a socks5 proxy is not supported"),
        (None, {"HTTPS_PROXY": "socks5://p:1080"}, "$HTTPS_PROXY: a socks5 proxy"),
        ("http://p:notaport", {}, "proxy-url: not a proxy URL"),
    ],
)
def test_a_proxy_that_cannot_be_used_is_refused(
    proxy_url: str | None, env: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError) as err:
        proxy.choose("https://api:6443", proxy_url, env)
    assert str(err.value).startswith(message)
