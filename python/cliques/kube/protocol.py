"""What the operator's code asks of an API client, as Protocols.

The executor, and through it the plan runner's status writes, and the event recorder only
ask a `Client`: read one object, create, patch (the status subresource too), delete, and a
raw GET whose answer stays bytes. An informer only asks a `ListWatch`: pages of a list
and a watch stream. `client.KubeClient` is both; the gang simulator's `SimClient`
(tests/sim), the simulated API server, is a `Client`. mypy checks both where they are
handed to the executor (the operator's Manager; tests/sim is among mypy's files).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:  # the Protocols need not load aiohttp
    from cliques.kube.client import PatchType, WatchEvent
    from cliques.kube.resources import Resource

T = TypeVar("T")


class Client(Protocol):
    """The verbs the executor and the event recorder send."""

    async def get(self, resource: Resource, namespace: str | None, name: str, type_: type[T]) -> T:
        """The object `name`, decoded as `type_`."""
        ...

    async def create(
        self,
        resource: Resource,
        namespace: str | None,
        obj: Any,
        type_: type[T],
        *,
        sub: str = "",
        name: str | None = None,
    ) -> T:
        """Create `obj` (a body to encode); the API server's answer as `type_`."""
        ...

    async def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        patch: Any,
        type_: type[T],
        *,
        patch_type: PatchType = "merge",
        sub: str = "",
        force: bool = False,
    ) -> T:
        """Patch `name` (its `sub`resource: "status"); the answer as `type_`."""
        ...

    async def delete(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation: str = "Background",
    ) -> None:
        """Delete `name`, only while it is `uid` (and at `resource_version`) when given."""
        ...

    async def request(
        self,
        verb: str,
        resource: Resource,
        *,
        namespace: str | None = None,
        name: str | None = None,
    ) -> bytes:
        """One request; the body of its answer (the executor's re-read after a 409)."""
        ...


class ListWatch(Protocol):
    """What an informer asks of the API server."""

    async def list_page(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        label_selector: str = "",
        limit: int = 500,
        continue_token: str = "",
        resource_version: str = "",
    ) -> bytes:
        """One page of a list: the body, its `continue` token in its metadata."""
        ...

    def watch(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        resource_version: str,
        label_selector: str = "",
        timeout_seconds: int = 300,
        read_timeout: float = ...,
        on_open: Callable[[], None] | None = None,
    ) -> AsyncIterator[WatchEvent]:
        """The watch events from `resource_version` on, until the server ends the stream;
        `on_open()` once the server has answered the request (before any event)."""
        ...
