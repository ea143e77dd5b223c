"""A slim `autoscaling/v2` HorizontalPodAutoscaler: what the operator compares with the
autoscaling a CliqueSet asks for (`controllers.autoscaling`). `metrics` and `behavior` stay
plain JSON, compared as the operator wrote them."""

from __future__ import annotations

from typing import Any

import msgspec

from cliques.api.meta import ObjectMeta


class ScaleTargetRef(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    api_version: str = ""
    kind: str = ""
    name: str = ""


class HPASpec(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    scale_target_ref: ScaleTargetRef = msgspec.field(default_factory=ScaleTargetRef)
    min_replicas: int | None = None
    max_replicas: int = 0
    metrics: list[dict[str, Any]] = msgspec.field(default_factory=list)
    behavior: dict[str, Any] | None = None


class HPAStatus(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    current_replicas: int = 0
    desired_replicas: int = 0


class HorizontalPodAutoscaler(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: HPASpec = msgspec.field(default_factory=HPASpec)
    status: HPAStatus | None = None
