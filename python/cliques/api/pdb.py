"""A slim, read-only view of a policy/v1 PodDisruptionBudget: the one the operator keeps per
CliqueSet to hold off piecemeal evictions while it moves gangs off drained nodes
(`controllers.features.drain`). Only what the operator compares with the budget it wants
is decoded: its identity and owner, `maxUnavailable`, the selector's labels and the
unhealthy pod eviction policy.
"""

from __future__ import annotations

from typing import Final

import msgspec

from cliques.api.meta import ListMeta, ObjectMeta

API_VERSION: Final = "policy/v1"
KIND: Final = "PodDisruptionBudget"


class LabelSelector(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    match_labels: dict[str, str] = msgspec.field(default_factory=dict)


class PodDisruptionBudgetSpec(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    max_unavailable: int | str | None = None
    min_available: int | str | None = None
    selector: LabelSelector | None = None
    unhealthy_pod_eviction_policy: str = ""


class PodDisruptionBudget(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = msgspec.field(default_factory=PodDisruptionBudgetSpec)


class PodDisruptionBudgetList(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[PodDisruptionBudget] = msgspec.field(default_factory=list)
