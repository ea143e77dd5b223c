"""How the API types declare their CRD schema: bounds, CEL rules, list types, descriptions.

The msgspec Structs of `cliqueset`, `clique` and `scalinggroup` are the one source of the
CRDs: `crdgen` builds them from the Structs. A field's JSON name, type, optionality and
default come from the Struct itself; what only the API server checks is declared next to
the field, with `crd(...)` inside `Annotated`::

    replicas: Annotated[int, crd(minimum=0, maximum=MAX_GANGS, description="...")] = 1

and what belongs to a Struct wherever it is used (the CEL rules that tie its fields
together, `x-kubernetes-preserve-unknown-fields`) in its `__crd__` class variable::

    __crd__: ClassVar = crd(rules=[Rule(rule="self.a <= self.b", message="...")])

`crd` returns a `msgspec.Meta` that carries only JSON-schema annotations
(`extra_json_schema`), never msgspec constraints: the operator's decoders do not enforce
them. The API server is the validator, and an object stored before a rule was tightened
still decodes. `Resource` declares the rest of a CRD (names, printer columns, the scale
subresource) next to the root Struct.

This module imports nothing from the rest of `cliques`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Final, Literal

import msgspec

#: The reason of a rule whose message describes a bad value (the API server's default).
INVALID: Final = "FieldValueInvalid"

#: `extra` keys of a `crd` Meta that are not JSON-schema keywords.
REQUIRED: Final = "crd-required"
SHAPE: Final = "crd-shape"
PROPERTIES: Final = "crd-properties"


class Rule(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True, rename="camel"):
    """One `x-kubernetes-validations` entry: a CEL rule and what the API server says when
    it is false (`message`, or `message_expression` computed from the object), on the
    field `field_path` (relative to the node the rule sits on)."""

    rule: str
    message: str
    message_expression: str | None = None
    field_path: str | None = None
    reason: Literal["FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired"] | None = None


def immutable(path: str) -> Rule:
    """The rule that keeps a field as it was created (`path` names it in the message)."""
    return Rule(rule="self == oldSelf", message=f"{path} is immutable")


def crd(
    *,
    description: str | None = None,
    format: Literal["int32", "int64", "date-time"] | None = None,
    enum: Sequence[str] = (),
    minimum: int | None = None,
    maximum: int | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    pattern: str | None = None,
    min_items: int | None = None,
    max_items: int | None = None,
    max_properties: int | None = None,
    list_type: Literal["atomic", "set", "map"] | None = None,
    list_map_keys: Sequence[str] = (),
    preserve_unknown_fields: bool = False,
    rules: Sequence[Rule] = (),
    required: bool = False,
    shape: type[msgspec.Struct] | None = None,
    properties: Mapping[str, msgspec.Meta] | None = None,
) -> msgspec.Meta:
    """The schema of a field (in `Annotated`) or of a Struct (its `__crd__`) beyond what
    its type says.

    `required` makes the CRD require a field the Struct defaults (one it always encodes);
    `shape` gives the schema of an opaque `dict[str, Any]` field as a Struct that is never
    decoded, only read by `crdgen` (the parts of a pod template the CRD checks);
    `properties` adds to the schema of some fields of a Struct-typed field where it is used
    (its bounds and descriptions there), keyed by their JSON names.
    """
    keywords: dict[str, Any] = {
        "format": format,
        "enum": list(enum) or None,
        "minimum": minimum,
        "maximum": maximum,
        "minLength": min_length,
        "maxLength": max_length,
        "pattern": pattern,
        "minItems": min_items,
        "maxItems": max_items,
        "maxProperties": max_properties,
        "x-kubernetes-list-type": list_type,
        "x-kubernetes-list-map-keys": list(list_map_keys) or None,
        "x-kubernetes-preserve-unknown-fields": preserve_unknown_fields or None,
        "x-kubernetes-validations": list(rules) or None,
    }
    extra: dict[str, Any] = {
        REQUIRED: required or None,
        SHAPE: shape,
        PROPERTIES: dict(properties) if properties else None,
    }
    return msgspec.Meta(
        description=description,
        extra_json_schema={k: v for k, v in keywords.items() if v is not None} or None,
        extra={k: v for k, v in extra.items() if v is not None} or None,
    )


#: A DNS-1123 label (Clique and group names, claim names).
DNS1123_LABEL: Final = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
#: A qualified name, as label keys and condition types are: an optional DNS subdomain prefix
#: and `/`, then a name of letters, digits, `-`, `_` and `.`.
QUALIFIED_NAME: Final = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
#: The longest qualified name: a 253-character prefix, `/`, a 63-character name.
MAX_QUALIFIED_NAME_LENGTH: Final = 316

#: A count: an int32 that is never negative.
Count = Annotated[int, crd(minimum=0)]
#: A count that may outgrow an int32 (generations, restarts in total).
Count64 = Annotated[int, crd(format="int64", minimum=0)]


class Column(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True, rename="camel"):
    """One `additionalPrinterColumns` entry: what `kubectl get` shows (`priority` 1: only
    with `-o wide`)."""

    name: str
    type: Literal["integer", "string", "date", "boolean", "number"]
    priority: int | None = None
    description: str | None = None
    json_path: str


#: The column every resource ends with.
AGE: Final = Column(name="Age", type="date", json_path=".metadata.creationTimestamp")


class Resource(msgspec.Struct, kw_only=True, frozen=True):
    """What a CRD says beyond the schema of its root Struct: its names, the description of
    the object, the columns `kubectl get` prints. Every resource here is namespaced, has a
    status subresource and a scale subresource on `.spec.replicas`, `.status.replicas` and
    `.status.selector`."""

    root: type[msgspec.Struct]
    kind: str
    plural: str
    short_names: tuple[str, ...]
    categories: tuple[str, ...] = ("cliques",)
    description: str
    columns: tuple[Column, ...]
