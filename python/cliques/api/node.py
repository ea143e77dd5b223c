"""A slim, read-only view of a core/v1 Node: its name and what says it is being drained.

The operator watches every Node of the cluster (gang-aware drain,
`controllers.features.drain`), so this view decodes only the node's name, UID and
resourceVersion, `spec.unschedulable` (a cordon) and `spec.taints`; msgspec skips the rest
(labels, annotations, status, images), which is most of a node's bytes, without building
it. The operator never writes a Node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import msgspec

from cliques.api.meta import ListMeta, OwnerReference

#: The taint effect that evicts running pods that do not tolerate it.
NO_EXECUTE: Final = "NoExecute"


class NodeMeta(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """The node's identity; no labels or annotations are decoded (they read as empty)."""

    name: str = ""
    uid: str = ""
    resource_version: str = ""

    @property
    def namespace(self) -> str:
        return ""

    @property
    def labels(self) -> Mapping[str, str]:
        return {}

    @property
    def owner_references(self) -> Sequence[OwnerReference]:
        return ()

    @property
    def deletion_timestamp(self) -> str | None:
        return None


class Taint(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """`corev1.Taint`; `time_added` (RFC 3339) is set on NoExecute taints, when the node
    lifecycle controller found the node not ready or unreachable among them."""

    key: str = ""
    value: str = ""
    effect: str = ""
    time_added: str = ""


class NodeSpec(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    unschedulable: bool = False
    taints: list[Taint] = msgspec.field(default_factory=list)


class Node(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A Node, slim: its name, its cordon and its taints."""

    metadata: NodeMeta = msgspec.field(default_factory=NodeMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)


class NodeList(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[Node] = msgspec.field(default_factory=list)
