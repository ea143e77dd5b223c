"""The structural view of an API object that the kube layer needs: name, UID, version,
labels and owners. Any msgspec Struct of `cliques.api` with a `metadata` satisfies it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol


class OwnerRef(Protocol):
    @property
    def uid(self) -> str: ...

    @property
    def controller(self) -> bool | None: ...


class Meta(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def namespace(self) -> str | None: ...

    @property
    def uid(self) -> str: ...

    @property
    def resource_version(self) -> str: ...

    @property
    def labels(self) -> Mapping[str, str] | None: ...

    @property
    def owner_references(self) -> Sequence[OwnerRef] | None: ...


class KubeObject(Protocol):
    @property
    def metadata(self) -> Meta: ...


def key_of(obj: KubeObject) -> str:
    """`namespace/name` (or `name` for cluster-scoped objects): the work-queue key."""
    meta = obj.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


def split_key(key: str) -> tuple[str | None, str]:
    ns, sep, name = key.partition("/")
    return (ns, name) if sep else (None, ns)


def controller_uid(obj: KubeObject) -> str | None:
    """UID of the controlling owner, if any."""
    for ref in obj.metadata.owner_references or ():
        if ref.controller:
            return ref.uid
    return None
