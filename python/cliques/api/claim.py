"""A slim resource.k8s.io/v1 ResourceClaim or ResourceClaimTemplate, as the CliqueSet
controller keeps the ones it made (`controllers.claims`): their metadata is all it reads."""

from __future__ import annotations

import msgspec

from cliques.api.meta import ObjectMeta


class ClaimObject(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A ResourceClaim or ResourceClaimTemplate the operator made: its metadata."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
