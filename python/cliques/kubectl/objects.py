"""What `kubectl cliques` reads beyond the operator's own slim types: a ResourceClaim with
its allocation, and a ControllerRevision with its revision number and data.

The operator never reads either (it makes claims and never looks at their allocation; it
records no ControllerRevisions), so `cliques.api` has no type for them; the plugin decodes
them with these, and reads everything else with the operator's types.
"""

from __future__ import annotations

from typing import Any

import msgspec

from cliques.api.meta import ListMeta, ObjectMeta


class ClaimStatus(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """`resource.k8s.io` ResourceClaimStatus: only whether it is allocated, and to whom."""

    allocation: dict[str, Any] | None = None
    reserved_for: list[dict[str, Any]] = msgspec.field(default_factory=list)


class ResourceClaim(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A ResourceClaim: its metadata (its owner: a pod, a PodGroup) and its allocation."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    status: ClaimStatus = msgspec.field(default_factory=ClaimStatus)

    @property
    def allocated(self) -> bool:
        return self.status.allocation is not None


class ResourceClaimList(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[ResourceClaim] = msgspec.field(default_factory=list)


class ControllerRevision(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """An `apps/v1` ControllerRevision: a snapshot of a template (`data`) and its number."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    revision: int = 0
    data: Any = None


class ControllerRevisionList(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[ControllerRevision] = msgspec.field(default_factory=list)
