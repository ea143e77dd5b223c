"""The benchmark's load generator: the writes a user's own tooling makes to a workload (server-
side apply of a manifest, an annotation, a delete), sent through kubernetes-asyncio, the
Python client users write such tools with.

The operators under test never see which client wrote an object; what the benchmark gains
is that every write it makes is one a user's script makes, with that client's defaults
(connection pool, JSON encoding, its own field manager). The benchmark's reads (the
observer's watches, the API server's metrics) stay on the project's own client, which
decodes straight into the operator's typed objects.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

from cliques.kube.resources import Resource

#: The content type of a server-side apply (`kubectl apply --server-side`).
APPLY = "application/apply-patch+yaml"


class LoadGenerator:
    """Writes to one kind of custom object through kubernetes-asyncio."""

    def __init__(self, api: k8s.ApiClient, field_manager: str) -> None:
        self._objects = k8s.CustomObjectsApi(api)
        self.field_manager = field_manager

    @classmethod
    @asynccontextmanager
    async def connect(cls, kubeconfig: str, field_manager: str) -> AsyncIterator[LoadGenerator]:
        """A generator on the cluster of `kubeconfig` (its current context); the client's
        connections close when the block ends."""
        configuration = k8s.Configuration()
        await k8s_config.load_kube_config(
            config_file=kubeconfig, client_configuration=configuration, persist_config=False
        )
        # As many connections as concurrent writes (aiohttp's 0), as the project's client
        # allows: the default pool (100) would queue a 500-object apply behind itself and
        # count that wait in the deploy.
        configuration.connection_pool_maxsize = 0
        async with k8s.ApiClient(configuration) as api:
            yield cls(api, field_manager)

    async def apply(self, resource: Resource, namespace: str, body: dict[str, Any]) -> None:
        """Server-side apply `body` into `namespace`, taking over fields other managers hold
        (`--force-conflicts`)."""
        body = {**body, "metadata": {**body["metadata"], "namespace": namespace}}
        await self._objects.patch_namespaced_custom_object(
            resource.group,
            resource.version,
            namespace,
            resource.plural,
            body["metadata"]["name"],
            body,
            field_manager=self.field_manager,
            force=True,
            # kubernetes-asyncio's stubs leave out the `_content_type` its methods take
            _content_type=APPLY,  # type: ignore[call-arg]
        )

    async def annotate(
        self, resource: Resource, namespace: str, name: str, annotations: dict[str, str]
    ) -> None:
        """Merge `annotations` into the object's (a JSON merge patch)."""
        await self._objects.patch_namespaced_custom_object(
            resource.group,
            resource.version,
            namespace,
            resource.plural,
            name,
            {"metadata": {"annotations": annotations}},
            field_manager=self.field_manager,
            _content_type="application/merge-patch+json",  # type: ignore[call-arg]
        )

    async def delete(self, resource: Resource, namespace: str, name: str) -> None:
        """Delete the object (background propagation, the API server's default)."""
        await self._objects.delete_namespaced_custom_object(
            resource.group, resource.version, namespace, resource.plural, name
        )
