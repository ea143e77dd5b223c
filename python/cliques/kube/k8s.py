"""kubernetes-asyncio's kubeconfig loading, authentication and connection pool, without its
generated API classes and models.

cliques uses kubernetes-asyncio for what it is best at: reading a kubeconfig or the
in-cluster service account (exec plugins, OIDC, token files, client certificates),
refreshing credentials, and the TLS connection pool. Its package `__init__` modules import
every generated API class and model besides (~800 modules, ~36 MB of a worker's memory)
that cliques never uses: it decodes objects with msgspec. So, when nothing in the process
has imported kubernetes-asyncio yet, this module registers empty stand-ins for the packages
`kubernetes_asyncio`, `kubernetes_asyncio.client` and `kubernetes_asyncio.client.models`
(with the real directories as their search path) and imports the real submodules it needs
through them: `client.configuration`, `client.api_client`, `client.rest` and `config`. If
kubernetes-asyncio was imported in full before, its real modules are used as they are.

Anything else asked of a stand-in fails with an error that says why, never silently.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

_PACKAGES = ("kubernetes_asyncio", "kubernetes_asyncio.client", "kubernetes_asyncio.client.models")


class _StandIn(types.ModuleType):
    """A package whose `__init__` is not run: only the submodules imported through it."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(
            f"{self.__name__}.{name}: cliques loads kubernetes-asyncio without its generated "
            "API classes and models (cliques.kube.k8s); import kubernetes_asyncio before "
            "cliques to have them"
        )


def _install_stand_ins() -> None:
    spec = importlib.util.find_spec("kubernetes_asyncio")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("kubernetes-asyncio is not installed")
    root = next(iter(spec.submodule_search_locations))
    for name in _PACKAGES:
        module = _StandIn(name)
        module.__path__ = [root + name.removeprefix("kubernetes_asyncio").replace(".", "/")]
        module.__package__ = name
        sys.modules[name] = module


if "kubernetes_asyncio" not in sys.modules:
    _install_stand_ins()
    _configuration = importlib.import_module("kubernetes_asyncio.client.configuration")
    _api_client = importlib.import_module("kubernetes_asyncio.client.api_client")
    _client = sys.modules["kubernetes_asyncio.client"]
    # What kubernetes_asyncio.config imports from the client package.
    _client.Configuration = _configuration.Configuration  # type: ignore[attr-defined]
    _client.ApiClient = _api_client.ApiClient  # type: ignore[attr-defined]
    sys.modules["kubernetes_asyncio"].client = _client  # type: ignore[attr-defined]

from kubernetes_asyncio import config  # noqa: E402
from kubernetes_asyncio.client.api_client import ApiClient  # noqa: E402
from kubernetes_asyncio.client.configuration import Configuration  # noqa: E402

__all__ = ["ApiClient", "Configuration", "config"]
