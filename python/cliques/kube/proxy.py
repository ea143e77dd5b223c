"""Which proxy requests to the API server go through, decided as client-go decides it.

The kubeconfig cluster's `proxy-url` wins. Otherwise the environment is read as Go's
`golang.org/x/net/http/httpproxy` reads it: `HTTPS_PROXY` (or `https_proxy`) for an https
server, `HTTP_PROXY` (or `http_proxy`) for an http one, a proxy without a scheme taken as
http; no proxy for `localhost` or a loopback address; and `NO_PROXY` (or `no_proxy`), a
comma-separated list of `*` (no proxy at all), IP addresses, CIDR ranges (`10.96.0.0/12`:
the service IP of a pod's API server), and domain names, which match the name and its
subdomains with or without a leading dot (`.example.com`, `*.example.com`), each
optionally with a `:port` that must then match too.

Only http and https proxies are supported: any other scheme (socks5) is a `ConfigError`,
not a silent direct connection.
"""

from __future__ import annotations

import ipaddress
import os
import urllib.parse
from collections.abc import Mapping

from cliques.kube.credentials import ConfigError

_DEFAULT_PORTS = {"https": 443, "http": 80}


def choose(
    server: str, proxy_url: str | None, environ: Mapping[str, str] = os.environ
) -> str | None:
    """The proxy of requests to `server` (None: connect directly); `proxy_url` is the
    kubeconfig's."""
    if proxy_url:
        return _checked(proxy_url, "proxy-url")
    url = urllib.parse.urlsplit(server)
    if url.scheme == "https":
        proxy, source = _env(environ, "HTTPS_PROXY", "https_proxy")
    elif url.scheme == "http":
        proxy, source = _env(environ, "HTTP_PROXY", "http_proxy")
    else:
        return None
    if not proxy:
        return None
    port = url.port or _DEFAULT_PORTS[url.scheme]
    no_proxy = _env(environ, "NO_PROXY", "no_proxy")[0]
    if not uses_proxy(url.hostname or "", port, no_proxy):
        return None
    return _checked(_with_scheme(proxy), f"${source}")


def uses_proxy(host: str, port: int, no_proxy: str) -> bool:
    """Whether a request to `host`:`port` goes through the proxy, `no_proxy` being the
    value of NO_PROXY (httpproxy's `useProxy`)."""
    host = host.strip().lower()
    if not host:
        return True
    if host == "localhost":
        return False
    ip = _ip(host)
    if ip is not None and ip.is_loopback:
        return False
    for entry in no_proxy.split(","):
        p = entry.strip().lower()
        if not p:
            continue
        if p == "*":
            return False
        if "/" in p:
            try:
                network = ipaddress.ip_network(p, strict=False)
            except ValueError:
                pass
            else:
                if ip is not None and ip in network:
                    return False
                continue
        split = _split_host_port(p)
        if split is None:
            phost, pport = p, ""
        else:
            phost, pport = split
            if not phost:
                continue
        port_ok = pport in ("", str(port))
        pip = _ip(phost)
        if pip is not None:
            if ip is not None and ip == pip and port_ok:
                return False
            continue
        if phost.startswith("*."):
            phost = phost[1:]
        whole = not phost.startswith(".")
        if whole:
            phost = "." + phost
        if (host.endswith(phost) or (whole and host == phost[1:])) and port_ok:
            return False
    return True


def _env(environ: Mapping[str, str], *names: str) -> tuple[str, str]:
    """The first of `names` set to a non-empty value, and its name."""
    for name in names:
        value = environ.get(name, "")
        if value:
            return value, name
    return "", names[0]


def _with_scheme(proxy: str) -> str:
    """A proxy from the environment: `host:port` without a scheme is an http proxy."""
    url = urllib.parse.urlsplit(proxy)
    if not url.scheme or not url.netloc:
        return "http://" + proxy
    return proxy


def _checked(proxy: str, source: str) -> str:
    try:
        url = urllib.parse.urlsplit(proxy)
        ok = bool(url.hostname)
        url.port  # noqa: B018 (raises ValueError on a bad port)
    except ValueError:
        ok = False
    if not ok:
        raise ConfigError(f"{source}: not a proxy URL (scheme://host[:port])")
    if url.scheme not in ("http", "https"):
        raise ConfigError(
            f"{source}: a {url.scheme or 'scheme-less'} proxy is not supported (only http "
            "and https proxies are)"
        )
    return proxy


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _split_host_port(p: str) -> tuple[str, str] | None:
    """Go's `net.SplitHostPort`: None when `p` is not `host:port` or `[host]:port`."""
    if p.startswith("["):
        end = p.find("]")
        if end < 0 or p[end + 1 : end + 2] != ":":
            return None
        return p[1:end], p[end + 2 :]
    if p.count(":") != 1:
        return None
    host, _, port = p.partition(":")
    return host, port
