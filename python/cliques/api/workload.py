"""A slim scheduling.k8s.io/v1alpha1 Workload: the operator only needs to know which of a
CliqueSet's Workloads exist (it creates them and deletes the unused ones, never updates)."""

from __future__ import annotations

import msgspec

from cliques.api.meta import ObjectMeta


class Workload(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A Workload, metadata only."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
