"""The CRDs, generated from the API types: one source for what the operator reads and what
the API server checks.

`generate()` renders the CustomResourceDefinitions of the resources in `RESOURCES`
(CliqueSet, Clique, CliqueScalingGroup) as YAML, from their root Structs and what
`cliques.api.schema` declares on them. The walk over the types is `msgspec.inspect`'s; a
Struct becomes a structural schema as follows:

- property names are the Struct's encoded (camelCase) field names;
- `int` is an int32 `integer` (unless declared `int64`), `str` a `string`, `bool` a
  `boolean`, `int | str` an int-or-string (`x-kubernetes-int-or-string`, as Kubernetes'
  IntOrString), a `StrEnum` (or a `Literal`) a `string` with its values as `enum` in the
  order declared, `list[T]` an `array`,
  `dict[str, str]` an `object` of strings, `dict[str, Any]` an `object` whose fields are
  kept as written (`x-kubernetes-preserve-unknown-fields`), a Struct an `object` with
  `properties`, and `ObjectMeta` an `object` the API server checks itself;
- `required` lists the Struct's required fields and those declared `required`;
- `default` is the Struct's default on a Struct that leaves defaults out when it encodes
  (the API server fills them back in), unless it reads the same as absent (None, an empty
  string, list or map); a Struct default is `{}`, whose fields the API server defaults in
  turn. A status Struct encodes every field and has no defaults;
- `nullable` marks a field that may be None in a Struct that encodes None;
- the rest (bounds, patterns, CEL rules, list types, descriptions) is declared with
  `schema.crd`, on the field or in the Struct's `__crd__`. msgspec's own constraints
  (`Meta(ge=..., max_length=...)`, which the decoders enforce too) become bounds as well;
  one the schema cannot carry is an error, never dropped.

`python -m cliques.api.crdgen DIR...` writes the files into each DIR; with `--check` it
writes nothing and exits 1 when a file there differs or is missing. `make crds` runs it on
the three directories that hold copies (docs/install.md).
"""

from __future__ import annotations

import argparse
import enum
import sys
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Literal

import msgspec
import msgspec.inspect as mi
import yaml

from cliques.api import clique, cliqueset, labels, scalinggroup, schema
from cliques.api.meta import ObjectMeta

RESOURCES: Final = (cliqueset.RESOURCE, clique.RESOURCE, scalinggroup.RESOURCE)

Schema = dict[str, Any]

# The order of the keywords in a schema node: what a node is, then its bounds, then its
# rules, then what lies below it.
_ORDER: Final = (
    "type",
    "format",
    "nullable",
    "enum",
    "default",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "maxProperties",
    "description",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-preserve-unknown-fields",
    "required",
    "x-kubernetes-validations",
    "additionalProperties",
    "items",
    "properties",
)


class SchemaError(TypeError):
    """A type the CRD generator cannot express as a structural schema."""


def _unwrap(t: mi.Type) -> tuple[mi.Type, Schema, dict[str, Any], bool]:
    """The type below its `Annotated` metadata and `| None`: (type, JSON-schema keywords,
    `extra`, whether None is allowed). Outer declarations win over inner ones."""
    keywords: Schema = {}
    extra: dict[str, Any] = {}
    optional = False
    while True:
        if isinstance(t, mi.Metadata):
            keywords = {**(t.extra_json_schema or {}), **keywords}
            extra = {**(t.extra or {}), **extra}
            t = t.type
        elif isinstance(t, mi.UnionType):
            rest = [u for u in t.types if not isinstance(u, mi.NoneType)]
            if _int_or_string(rest):
                return t, keywords, extra, len(rest) != len(t.types)
            if len(rest) != 1 or len(rest) == len(t.types):
                raise SchemaError(f"only `T | None` unions have a schema, not {t}")
            optional = True
            t = rest[0]
        else:
            return t, keywords, extra, optional


def _int_or_string(types: Sequence[mi.Type]) -> bool:
    """Whether `types` (a union without None) are a plain `int | str`."""
    kinds = sorted(type(u).__name__ for u in types)
    plain = all(
        getattr(u, "ge", None) is None and getattr(u, "pattern", None) is None for u in types
    )
    return kinds == ["IntType", "StrType"] and plain


def _type_schema(t: mi.Type) -> Schema:
    """The schema a type gives by itself, msgspec constraints (`Meta(ge=...)`) included."""
    if isinstance(t, mi.UnionType):  # `int | str` only (`_unwrap`)
        return {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": True,
        }
    if isinstance(t, mi.IntType):
        return _bounds({"type": "integer", "format": "int32"}, t, minimum="ge", maximum="le")
    if isinstance(t, mi.StrType):
        out = _bounds({"type": "string"}, t, minLength="min_length", maxLength="max_length")
        if t.pattern is not None:
            out["pattern"] = t.pattern
        return out
    if isinstance(t, mi.BoolType):
        return {"type": "boolean"}
    if isinstance(t, mi.LiteralType):
        if not all(isinstance(v, str) for v in t.values):
            raise SchemaError(f"only string Literals have a schema, not {t}")
        return {"type": "string", "enum": list(t.values)}
    if isinstance(t, mi.EnumType):
        if not issubclass(t.cls, enum.StrEnum):
            raise SchemaError(f"only StrEnums have a schema, not {t}")
        return {"type": "string", "enum": [member.value for member in t.cls]}
    if isinstance(t, mi.ListType):
        out = {"type": "array", "items": _value_schema(t.item_type)}
        return _bounds(out, t, minItems="min_length", maxItems="max_length")
    if isinstance(t, mi.DictType):
        if not isinstance(t.key_type, mi.StrType):
            raise SchemaError(f"only maps with string keys have a schema, not {t}")
        if isinstance(t.value_type, mi.AnyType):
            out = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        else:
            out = {"type": "object", "additionalProperties": _value_schema(t.value_type)}
        return _bounds(out, t, minProperties="min_length", maxProperties="max_length")
    if isinstance(t, mi.StructType):
        if t.cls is ObjectMeta:
            return {"type": "object"}
        return _struct_schema(t)
    raise SchemaError(f"no schema for {t}")


def _bounds(out: Schema, t: mi.Type, **keywords: str) -> Schema:
    """`out` with the msgspec constraints of `t` named in `keywords` (JSON-schema keyword
    -> constraint); a constraint of `t` the schema would not carry is an error, never
    dropped."""
    for keyword, constraint in keywords.items():
        if (value := getattr(t, constraint)) is not None:
            out[keyword] = value
    for constraint in ("gt", "lt", "multiple_of"):
        if getattr(t, constraint, None) is not None:
            raise SchemaError(f"{constraint} has no CRD schema here (use ge and le): {t}")
    return out


def _value_schema(t: mi.Type, nullable: bool = False) -> Schema:
    """The schema of a value of type `t` with its declarations (a field, a list item)."""
    inner, keywords, extra, optional = _unwrap(t)
    shape = extra.get(schema.SHAPE)
    out = _type_schema(mi.type_info(shape) if shape is not None else inner)
    out.update(keywords)
    for name, meta in (extra.get(schema.PROPERTIES) or {}).items():
        if name not in out.get("properties", {}):
            raise SchemaError(f"properties: {name!r} is not a field of {inner}")
        prop = out["properties"][name]
        if meta.description is not None:
            prop["description"] = meta.description
        prop.update(msgspec.to_builtins(meta.extra_json_schema or {}))
    if optional and nullable:
        out["nullable"] = True
    return out


def _default(field: mi.Field) -> Any:
    """The CRD default of a field of a Struct that omits defaults, or NODEFAULT."""
    if field.default is not msgspec.NODEFAULT:
        value = field.default
    elif field.default_factory is not msgspec.NODEFAULT:
        value = field.default_factory()
    else:
        return msgspec.NODEFAULT
    if value is None or (isinstance(value, str | list | dict) and not value):
        return msgspec.NODEFAULT  # reads the same as absent: no default to store
    if isinstance(value, ObjectMeta):
        return msgspec.NODEFAULT  # the API server's own
    if isinstance(value, enum.StrEnum):
        return value.value
    if isinstance(value, msgspec.Struct):
        return {}
    return value


def _declared_order(values: list[Any], hint: Any) -> list[Any]:
    """`values` (of a Literal, which msgspec.inspect sorts) in the order the `Literal` in
    the annotation `hint` lists them."""
    if typing.get_origin(hint) is Literal and set(typing.get_args(hint)) == set(values):
        return list(typing.get_args(hint))
    for arg in typing.get_args(hint):
        if (found := _declared_order(values, arg)) is not values:
            return found
    return values


def _struct_schema(info: mi.StructType) -> Schema:
    omit_defaults = info.cls.__struct_config__.omit_defaults
    out: Schema = {"type": "object"}
    own = getattr(info.cls, "__crd__", None)
    if isinstance(own, msgspec.Meta):
        if own.description is not None:
            out["description"] = own.description
        out.update(msgspec.to_builtins(own.extra_json_schema or {}))
    properties: dict[str, Schema] = {}
    required: list[str] = []
    hints = typing.get_type_hints(info.cls, include_extras=True)
    for field in info.fields:
        prop = _value_schema(field.type, nullable=not omit_defaults)
        if "enum" in prop:
            prop["enum"] = _declared_order(prop["enum"], hints[field.name])
        if omit_defaults and (default := _default(field)) is not msgspec.NODEFAULT:
            prop["default"] = default
        if field.required or _unwrap(field.type)[2].get(schema.REQUIRED):
            required.append(field.encode_name)
        properties[field.encode_name] = prop
    if required:
        out["required"] = required
    if properties:
        out["properties"] = properties
    return out


def _ordered(node: Any) -> Any:
    """`node` with its keywords in `_ORDER`, all the way down (rules encoded as data)."""
    if isinstance(node, list):
        return [_ordered(v) for v in node]
    if isinstance(node, msgspec.Struct):
        return msgspec.to_builtins(node)
    if not isinstance(node, dict):
        return node
    keys = [k for k in _ORDER if k in node] + [k for k in node if k not in _ORDER]
    out: dict[str, Any] = {}
    for key in keys:
        value = node[key]
        if key == "properties":
            out[key] = {name: _ordered(prop) for name, prop in value.items()}
        else:
            out[key] = _ordered(value)
    return out


def build(resource: schema.Resource) -> dict[str, Any]:
    """The CustomResourceDefinition of `resource`, as data."""
    root = _type_schema(mi.type_info(resource.root))
    root["description"] = resource.description
    names = {
        "kind": resource.kind,
        "listKind": f"{resource.kind}List",
        "plural": resource.plural,
        "singular": resource.kind.lower(),
        "shortNames": list(resource.short_names),
        "categories": list(resource.categories),
    }
    version = {
        "name": labels.VERSION,
        "served": True,
        "storage": True,
        "subresources": {
            "status": {},
            "scale": {
                "specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.selector",
            },
        },
        "additionalPrinterColumns": [msgspec.to_builtins(c) for c in resource.columns],
        "schema": {"openAPIV3Schema": _ordered(root)},
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": file_name(resource).removesuffix(".yaml")},
        "spec": {
            "group": labels.GROUP,
            "scope": "Namespaced",
            "names": names,
            "versions": [version],
        },
    }


def file_name(resource: schema.Resource) -> str:
    """`cliquesets.cliques.dev.yaml`: the CRD's name, as a file."""
    return f"{resource.plural}.{labels.GROUP}.yaml"


class _Dumper(yaml.SafeDumper):
    """Block style with indented lists, but lists of scalars in flow style and long
    strings folded."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    foldable = " " in value and "\n" not in value and value.strip() == value
    style = ">" if foldable and len(value) > 60 else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def _represent_list(dumper: yaml.SafeDumper, value: list[Any]) -> yaml.Node:
    flow = all(isinstance(v, str | int | bool) for v in value)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=flow)


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(list, _represent_list)


def render(resource: schema.Resource) -> str:
    """The YAML file of `resource`'s CRD, with a header that says where it comes from."""
    module = resource.root.__module__
    header = (
        f"# The {resource.kind} CRD, generated by `make crds` (python -m cliques.api.crdgen)\n"
        f"# from {module}.{resource.root.__name__} and the types it uses\n"
        f"# (python/{module.replace('.', '/')}.py). Edit the types, not this file.\n"
    )
    body = yaml.dump(build(resource), Dumper=_Dumper, sort_keys=False, width=80)
    return header + body


def generate() -> dict[str, str]:
    """Every CRD file: name -> YAML text."""
    return {file_name(r): render(r) for r in RESOURCES}


def sync(directories: Sequence[Path], check: bool) -> list[str]:
    """Write the CRDs into each directory, or with `check` only compare them; the files
    that differed (or were missing)."""
    stale = []
    for directory in directories:
        if not check:
            directory.mkdir(parents=True, exist_ok=True)
        for name, text in generate().items():
            path = directory / name
            if path.exists() and path.read_text(encoding="utf-8") == text:
                continue
            stale.append(str(path))
            if not check:
                path.write_text(text, encoding="utf-8")
    return stale


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cliques.api.crdgen",
        description="Write the cliques CRDs, generated from the API types, into directories.",
    )
    parser.add_argument("directories", nargs="+", type=Path, metavar="DIR")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when a file differs"
    )
    args = parser.parse_args(argv)
    stale = sync(args.directories, args.check)
    for path in stale:
        verb = "differs from the generated CRD" if args.check else "written"
        print(f"{path}: {verb}", file=sys.stderr)
    if args.check and stale:
        print("run `make crds` and commit the result", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
