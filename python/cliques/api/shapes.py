"""What the CRDs check in the templates the operator keeps as plain JSON.

A pod template (a clique's, a Clique's) and a ResourceClaimTemplate stay `dict[str, Any]`
in the API Structs: the operator never interprets them beyond a few fields, and the
template hash works on exactly the JSON the user wrote. The CRD still checks a few of
their parts (container names, `restartPolicy`, the operator's own label keys) and keeps
the rest as written. The Structs here describe those parts for `crdgen` only
(`schema.crd(shape=...)` on the field); nothing is ever decoded into them.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Final, Literal

import msgspec

from cliques.api import labels
from cliques.api.schema import INVALID, Rule, crd

#: Labels and annotations in one pod template of a CliqueSet (`maxProperties`; it bounds
#: the CEL rule that refuses the operator's keys there).
MAX_TEMPLATE_LABELS: Final = 256
MAX_TEMPLATE_ANNOTATIONS: Final = 256

KEPT: Final = crd(preserve_unknown_fields=True)


def _reserved_keys(what: str, most: int) -> msgspec.Meta:
    """A map of a pod template's metadata that may not hold the operator's keys."""
    prefix, subdomain = labels.RESERVED_PREFIX, labels.RESERVED_SUBDOMAIN
    reserved = f"k.startsWith('{prefix}') || k.contains('{subdomain}')"
    return crd(
        max_properties=most,
        rules=[
            Rule(
                rule=f"self.all(k, !k.startsWith('{prefix}') && !k.contains('{subdomain}'))",
                message=(
                    f"{what} keys with the prefix {prefix} (or a subdomain of {labels.GROUP}) "
                    "are reserved for the operator and may not be set in a pod template"
                ),
                message_expression=(
                    f"'{what} keys %s are reserved for the operator (prefix {prefix} or a "
                    f"subdomain of {labels.GROUP}) and may not be set in a pod "
                    f"template'.format([self.filter(k, {reserved}).sort()])"
                ),
                reason=INVALID,
            )
        ],
    )


class Container(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A container of a pod template: only its name is checked."""

    __crd__: ClassVar[msgspec.Meta] = KEPT

    name: str


#: The `containers` of a pod template: at least one, unique by name.
CONTAINERS: Final = crd(min_items=1, list_type="map", list_map_keys=["name"])


class PodClaim(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A pod's own resource claim: only its name is checked."""

    __crd__: ClassVar[msgspec.Meta] = KEPT

    name: Annotated[str, crd(max_length=63)]


# ---- in a CliqueSet ------------------------------------------------------------------------


class PodMetadata(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A clique's pod template metadata: bounded labels and annotations, none of them the
    operator's."""

    __crd__: ClassVar[msgspec.Meta] = KEPT

    labels: Annotated[dict[str, str], _reserved_keys("label", MAX_TEMPLATE_LABELS)] = msgspec.field(
        default_factory=dict
    )
    annotations: Annotated[
        dict[str, str], _reserved_keys("annotation", MAX_TEMPLATE_ANNOTATIONS)
    ] = msgspec.field(default_factory=dict)


class PodSpec(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A clique's pod spec: restartPolicy Always, named containers, named claims."""

    __crd__: ClassVar[msgspec.Meta] = KEPT

    restart_policy: Annotated[
        Literal["Always"] | None,
        crd(
            description=(
                "Only Always (the default), as for Deployments: the pods of a gang are "
                "long-running, and a pod that finished would be recreated at its index over "
                "and over."
            )
        ),
    ] = None
    resource_claims: Annotated[
        list[PodClaim],
        crd(
            max_items=32,
            description=(
                "The pod's own claims (checked here only for names that spec.resourceClaims "
                "also uses)."
            ),
        ),
    ] = msgspec.field(default_factory=list)
    containers: Annotated[list[Container], CONTAINERS]


class PodTemplate(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A clique's PodTemplateSpec, as the CliqueSet CRD checks it."""

    metadata: PodMetadata | None = None
    spec: PodSpec


# ---- in a Clique ---------------------------------------------------------------------------


class CliquePodMetadata(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A Clique's pod template metadata (the operator writes it: the CliqueSet's checks
    are not repeated)."""

    __crd__: ClassVar[msgspec.Meta] = KEPT

    labels: dict[str, str] = msgspec.field(default_factory=dict)
    annotations: dict[str, str] = msgspec.field(default_factory=dict)


class CliquePodSpec(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A Clique's pod spec: restartPolicy Always, named containers."""

    __crd__: ClassVar[msgspec.Meta] = KEPT

    restart_policy: Annotated[
        Literal["Always"] | None,
        crd(description="Only Always (the default), as in the CliqueSet."),
    ] = None
    containers: Annotated[list[Container], CONTAINERS]


class CliquePodTemplate(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A Clique's PodTemplateSpec, as the Clique CRD checks it."""

    metadata: CliquePodMetadata | None = None
    spec: CliquePodSpec


# ---- a ResourceClaimTemplate ---------------------------------------------------------------


class ClaimTemplate(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A ResourceClaimTemplate's metadata and spec, kept as written (the API server checks
    them when the operator makes the claim objects)."""

    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    spec: dict[str, Any]
