"""A slim `apps/v1` ControllerRevision: one recorded revision of a CliqueSet's gang
template (`controllers.features.revisions`).

`ControllerRevision` is what the operator's cache keeps: the metadata and the revision
number, not `data` (a copy of the set's templates the planner never reads, and the biggest
part of the object). `ControllerRevisionData` decodes `data` too, for the tools that read
a revision back (`cliques.rollout`)."""

from __future__ import annotations

from typing import Any

import msgspec

from cliques.api.meta import ListMeta, ObjectMeta

API_VERSION = "apps/v1"
KIND = "ControllerRevision"


class ControllerRevision(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A ControllerRevision without its `data`."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    revision: int = 0


class ControllerRevisionData(ControllerRevision, kw_only=True, omit_defaults=True, rename="camel"):
    """A ControllerRevision with its `data` (what the revision recorded)."""

    data: dict[str, Any] = msgspec.field(default_factory=dict)


class ControllerRevisionList(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A page of a list of ControllerRevisions, with their `data`."""

    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[ControllerRevisionData] = msgspec.field(default_factory=list)
