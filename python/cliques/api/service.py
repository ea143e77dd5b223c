"""A slim core/v1 Service: the operator only needs to know which gang Services exist."""

from __future__ import annotations

import msgspec

from cliques.api.meta import ObjectMeta


class Service(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A Service, metadata only (the operator creates gang Services and deletes them)."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
