"""A slim core/v1 Service: which gang Services exist, and the ports they publish."""

from __future__ import annotations

import msgspec

from cliques.api.meta import ObjectMeta


class ServicePort(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """One port of a Service, as the API server stores it (protocol defaulted)."""

    name: str = ""
    port: int = 0
    protocol: str = "TCP"
    target_port: int | str | None = None


class ServiceSpec(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """The part of a Service's spec the operator keeps in line: its ports."""

    ports: list[ServicePort] = msgspec.field(default_factory=list)


class Service(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A Service: its metadata and ports (the operator creates gang Services, keeps their
    ports those of the pod templates, and deletes them)."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ServiceSpec = msgspec.field(default_factory=ServiceSpec)
