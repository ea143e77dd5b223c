"""Generate the pod schema table from the upstream Kubernetes OpenAPI v3 document.

The canonical pod-template form (docs/hashing.md) needs to know, for every field reachable
from `PodTemplateSpec` and `PodSpec`, what the Kubernetes API says it is: a struct, a map, a
list of some list-type, a quantity or a plain scalar. This script reads
`api/openapi-spec/v3/api__v1_openapi.json` from the `k8s.io/kubernetes` Go module at the
version pinned in lab/cliques_lab/devcluster/gomod/kube-1.35/go.mod and writes:

- testdata/pod-schema.json, read by the pure-Python reference (tests/reference_canonical.py);
- rust/core/src/schema_gen.rs, static tables compiled into the Rust core.

Both are generated, never edited by hand. `--check` regenerates both in memory from the
upstream document (which needs Go, to find the module) and exits 1 when the committed files
differ. `--check-committed` needs no Go: it renders the Rust table from the committed JSON
and exits 1 when rust/core/src/schema_gen.rs (or the JSON's own layout) differs; `make lint`
runs it. Python 3.11 standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GO_MOD = ROOT / "lab/cliques_lab/devcluster/gomod/kube-1.35/go.mod"
JSON_OUT = ROOT / "testdata/pod-schema.json"
RUST_OUT = ROOT / "rust/core/src/schema_gen.rs"
SPEC_PATH = "api/openapi-spec/v3/api__v1_openapi.json"
MODULE = "k8s.io/kubernetes"
ALGORITHM = 1

ROOTS = {
    "PodTemplateSpec": "io.k8s.api.core.v1.PodTemplateSpec",
    "PodSpec": "io.k8s.api.core.v1.PodSpec",
}
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"

# Lists the API calls `map` but whose order carries meaning: marked `ordered`, never sorted.
ORDERED = {
    # Init containers run one after the other.
    ("io.k8s.api.core.v1.PodSpec", "initContainers"),
    # `$(VAR)` in a value refers to variables defined earlier in the list.
    ("io.k8s.api.core.v1.Container", "env"),
    ("io.k8s.api.core.v1.EphemeralContainer", "env"),
}

Descriptor = dict[str, Any]
Schemas = dict[str, dict[str, Any]]

MAX_WIDTH = 100  # rustfmt's default max_width
ARRAY_WIDTH = 60  # rustfmt's default array_width (60% of max_width)
FN_CALL_WIDTH = 60  # rustfmt's default fn_call_width, which also governs tuples


class SchemaError(Exception):
    """The OpenAPI document does not look the way this generator expects."""


# --------------------------------------------------------------------------- locate the spec


def pinned_version() -> str:
    text = GO_MOD.read_text()
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(MODULE)}\s+(v\S+)", text, re.MULTILINE)
    if match is None:
        raise SchemaError(f"{GO_MOD}: no requirement on {MODULE}")
    return match.group(1)


def module_dir(version: str) -> Path:
    """The module's directory in the Go module cache (downloading it if needed)."""
    cmd = ["go", "mod", "download", "-json", f"{MODULE}@{version}"]
    try:
        out = subprocess.run(
            cmd, check=True, capture_output=True, text=True, cwd=GO_MOD.parent
        ).stdout
        return Path(json.loads(out)["Dir"])
    except (OSError, subprocess.CalledProcessError, KeyError, json.JSONDecodeError) as err:
        modcache = os.environ.get("GOMODCACHE") or str(Path.home() / "go/pkg/mod")
        fallback = Path(modcache) / f"{MODULE}@{version}"
        if fallback.is_dir():
            return fallback
        raise SchemaError(f"cannot locate {MODULE}@{version}: {err}") from err


# --------------------------------------------------------------------------- walk the types


def ref_of(prop: dict[str, Any]) -> str | None:
    """The schema name a property refers to, through a `$ref` or a one-element `allOf`."""
    if "$ref" in prop:
        return str(prop["$ref"]).rsplit("/", 1)[-1]
    if "allOf" in prop:
        refs = prop["allOf"]
        if len(refs) != 1 or "$ref" not in refs[0]:
            raise SchemaError(f"unexpected allOf: {refs}")
        return str(refs[0]["$ref"]).rsplit("/", 1)[-1]
    return None


def is_struct(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "object" and "additionalProperties" not in schema


class Walker:
    """Builds the table: one entry per struct type reachable from the roots."""

    def __init__(self, schemas: Schemas) -> None:
        self.schemas = schemas
        self.types: dict[str, dict[str, Descriptor]] = {}
        self.key_defaults: dict[str, dict[str, Any]] = {}
        self.ordered_seen: set[tuple[str, str]] = set()

    def walk(self, name: str) -> None:
        if name in self.types:
            return
        schema = self.schemas.get(name)
        if schema is None or not is_struct(schema):
            raise SchemaError(f"{name} is not a struct type")
        fields: dict[str, Descriptor] = {}
        self.types[name] = fields
        for field, prop in sorted(schema.get("properties", {}).items()):
            fields[field] = self.descriptor(prop, name, field)

    def descriptor(self, prop: dict[str, Any], owner: str, field: str) -> Descriptor:
        ref = ref_of(prop)
        if ref is not None:
            if ref == QUANTITY:
                return {"kind": "quantity"}
            target = self.schemas.get(ref)
            if target is None:
                raise SchemaError(f"{owner}.{field}: unknown $ref {ref}")
            if is_struct(target):
                self.walk(ref)
                return {"kind": "object", "ref": ref}
            return {"kind": "scalar"}
        kind = prop.get("type")
        if kind == "array":
            return self.list_descriptor(prop, owner, field)
        if kind == "object" and "additionalProperties" in prop:
            value = self.descriptor(prop["additionalProperties"], owner, field)
            return {"kind": "map", "value": value}
        return {"kind": "scalar"}

    def list_descriptor(self, prop: dict[str, Any], owner: str, field: str) -> Descriptor:
        item = self.descriptor(prop["items"], owner, field)
        list_type = prop.get("x-kubernetes-list-type", "atomic")
        if list_type not in ("atomic", "set", "map"):
            raise SchemaError(f"{owner}.{field}: unknown list type {list_type!r}")
        if (owner, field) in ORDERED:
            if list_type != "map":
                raise SchemaError(f"{owner}.{field}: ordered policy on a {list_type} list")
            self.ordered_seen.add((owner, field))
            list_type = "ordered"
        desc: Descriptor = {"kind": "list", "list": list_type}
        if list_type in ("map", "ordered"):
            keys = [str(k) for k in prop.get("x-kubernetes-list-map-keys", [])]
            if not keys or item.get("kind") != "object":
                raise SchemaError(f"{owner}.{field}: map list without keys or object items")
            desc["keys"] = keys
            self.record_key_defaults(item["ref"], keys)
        desc["item"] = item
        return desc

    def record_key_defaults(self, item_type: str, keys: list[str]) -> None:
        props = self.schemas[item_type].get("properties", {})
        for key in keys:
            if key in props and "default" in props[key]:
                default = props[key]["default"]
                if not isinstance(default, str | int) or isinstance(default, bool):
                    raise SchemaError(f"{item_type}.{key}: unsupported default {default!r}")
                self.key_defaults.setdefault(item_type, {})[key] = default


def build_table(spec: dict[str, Any], source: str) -> dict[str, Any]:
    walker = Walker(spec["components"]["schemas"])
    for root in ROOTS.values():
        walker.walk(root)
    missing = ORDERED - walker.ordered_seen
    if missing:
        raise SchemaError(f"ordered policy names lists that were not found: {sorted(missing)}")
    return {
        "algorithm": ALGORITHM,
        "source": source,
        "roots": dict(ROOTS),
        "types": {name: walker.types[name] for name in sorted(walker.types)},
        "key_defaults": {
            name: dict(sorted(walker.key_defaults[name].items()))
            for name in sorted(walker.key_defaults)
        },
    }


# --------------------------------------------------------------------------- JSON output


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def render_json(table: dict[str, Any]) -> str:
    """The table as JSON with one field descriptor per line, for readable diffs."""
    lines = ["{"]
    lines.append(f'  "algorithm": {table["algorithm"]},')
    lines.append(f'  "source": {dumps(table["source"])},')
    lines.append(f'  "roots": {dumps(table["roots"])},')
    lines.append('  "types": {')
    types = list(table["types"].items())
    for i, (name, fields) in enumerate(types):
        close = "}" if i == len(types) - 1 else "},"
        if not fields:
            lines.append(f"    {dumps(name)}: {{{close}")
            continue
        lines.append(f"    {dumps(name)}: {{")
        items = list(fields.items())
        for j, (field, desc) in enumerate(items):
            comma = "" if j == len(items) - 1 else ","
            lines.append(f"      {dumps(field)}: {dumps(desc)}{comma}")
        lines.append(f"    {close}")
    lines.append("  },")
    lines.append('  "key_defaults": {')
    defaults = list(table["key_defaults"].items())
    for i, (name, keys) in enumerate(defaults):
        comma = "" if i == len(defaults) - 1 else ","
        lines.append(f"    {dumps(name)}: {dumps(keys)}{comma}")
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- Rust output


def const_name(type_name: str) -> str:
    """`io.k8s.api.core.v1.PodAffinityTerm` -> `POD_AFFINITY_TERM`."""
    short = type_name.rsplit(".", 1)[-1]
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", short).upper()


def rust_str(value: str) -> str:
    return json.dumps(value)  # the names are ASCII: JSON and Rust quoting agree


class RustWriter:
    """Renders the table as Rust source laid out the way rustfmt lays it out."""

    def __init__(self, table: dict[str, Any]) -> None:
        self.table = table
        self.ids = {name: i for i, name in enumerate(table["types"])}
        self.consts = {name: const_name(name) for name in table["types"]}
        if len(set(self.consts.values())) != len(self.consts):
            raise SchemaError("two types share a short name")
        self.lists: dict[str, str] = {}  # rendered ListDesc body -> static name
        self.list_names: set[str] = set()

    def desc(self, desc: Descriptor) -> str:
        kind = desc["kind"]
        if kind == "scalar":
            return "S"
        if kind == "quantity":
            return "Q"
        if kind == "object":
            return f"Desc::Object({self.consts[desc['ref']]})"
        if kind == "map":
            return f"Desc::Map(&{self.desc(desc['value'])})"
        if kind == "list":
            return f"Desc::List(&{self.list_static(desc)})"
        raise SchemaError(f"unknown descriptor kind {kind!r}")

    def list_static(self, desc: Descriptor) -> str:
        item = self.desc(desc["item"])
        keys = ", ".join(rust_str(k) for k in desc.get("keys", []))
        body = (
            f"    kind: ListKind::{desc['list'].capitalize()},\n"
            f"    keys: &[{keys}],\n"
            f"    item: {item},\n"
        )
        if body not in self.lists:
            item_desc = desc["item"]
            if item_desc["kind"] == "object":
                what = self.consts[item_desc["ref"]]
            elif item_desc["kind"] in ("scalar", "quantity"):
                what = item_desc["kind"].upper()
            else:
                what = f"{item_desc['kind'].upper()}{len(self.lists)}"
            name = f"{desc['list'].upper()}_{what}"
            while name in self.list_names:
                name += "_"
            self.list_names.add(name)
            self.lists[body] = name
        return self.lists[body]

    @staticmethod
    def pairs(indent: int, prefix: str, items: list[tuple[str, str]], suffix: str) -> list[str]:
        """An array of 2-tuples `prefix[(a, b), …]suffix`, broken the way rustfmt breaks it.

        rustfmt keeps a tuple on one line when its contents fit `fn_call_width` (60), and an
        array of several items on one line when they fit `array_width` (60); a lone item
        "overflows": it stays on the array's line, broken inside if need be.
        """
        pad, inner = " " * indent, " " * (indent + 4)
        flat = [f"({a}, {b})" for a, b in items]
        fits = [len(a) + 2 + len(b) <= FN_CALL_WIDTH for a, b in items]
        if not items:
            return [f"{pad}{prefix}[]{suffix}"]
        if len(items) == 1:
            if fits[0]:
                return [f"{pad}{prefix}[{flat[0]}]{suffix}"]
            a, b = items[0]
            return [f"{pad}{prefix}[(", f"{inner}{a},", f"{inner}{b},", f"{pad})]{suffix}"]
        one_line = ", ".join(flat)
        line = f"{pad}{prefix}[{one_line}]{suffix}"
        if all(fits) and len(one_line) <= ARRAY_WIDTH and len(line) <= MAX_WIDTH:
            return [line]
        out = [f"{pad}{prefix}["]
        for (a, b), item, ok in zip(items, flat, fits, strict=True):
            if ok:
                out.append(f"{inner}{item},")
            else:
                out += [f"{inner}(", f"{inner}    {a},", f"{inner}    {b},", f"{inner}),"]
        out.append(f"{pad}]{suffix}")
        return out

    @staticmethod
    def assign(lhs: str, rhs: str) -> list[str]:
        line = f"{lhs} = {rhs};"
        return [line] if len(line) <= MAX_WIDTH else [f"{lhs} =", f"    {rhs};"]

    def type_def(self, name: str, fields: dict[str, Descriptor]) -> list[str]:
        items = [(rust_str(f), self.desc(d)) for f, d in fields.items()]
        defaults = []
        for key, value in self.table["key_defaults"].get(name, {}).items():
            if isinstance(value, str):
                lit = f"KeyDefault::Str({rust_str(value)})"
            else:
                lit = f"KeyDefault::Int({value})"
            defaults.append((rust_str(key), lit))
        lines = ["    TypeDef {", f"        name: {rust_str(name)},"]
        lines += self.pairs(8, "fields: &", items, ",")
        lines += self.pairs(8, "key_defaults: &", defaults, ",")
        lines.append("    },")
        return lines

    def render(self) -> str:
        types: dict[str, dict[str, Descriptor]] = self.table["types"]
        body: list[str] = []
        for name, fields in types.items():
            body += self.type_def(name, fields)
        out = [
            "//! GENERATED by scripts/gen_schema_table.py: do not edit by hand.",
            "//!",
            f"//! Source: {self.table['source']}.",
            "//! Regenerate: `python3 scripts/gen_schema_table.py` (`--check` tells when stale).",
            "",
            "use crate::schema::{Desc, KeyDefault, ListDesc, ListKind, TypeDef, TypeId};",
            "",
            "/// Where the table comes from.",
            *self.assign("pub(crate) const SOURCE: &str", rust_str(self.table["source"])),
            "",
        ]
        for root, type_name in self.table["roots"].items():
            out.append(f"/// The root type `{root}`.")
            ident = "ROOT_" + const_name(root)
            out.append(f"pub(crate) const {ident}: TypeId = {self.consts[type_name]};")
        out.append("")
        for name, ident in self.consts.items():
            out.append(f"const {ident}: TypeId = TypeId({self.ids[name]});")
        out += ["", "const S: Desc = Desc::Scalar;", "const Q: Desc = Desc::Quantity;", ""]
        for list_body, ident in sorted(self.lists.items(), key=lambda kv: kv[1]):
            out.append(f"static {ident}: ListDesc = ListDesc {{")
            out.append(list_body.rstrip("\n"))
            out.append("};")
            out.append("")
        out.append(f"pub(crate) static TYPES: [TypeDef; {len(types)}] = [")
        out += body
        out.append("];")
        return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- main


def generate(spec_file: Path | None) -> dict[Path, str]:
    version = pinned_version()
    path = spec_file if spec_file is not None else module_dir(version) / SPEC_PATH
    spec = json.loads(path.read_text())
    table = build_table(spec, f"{MODULE} {version} {SPEC_PATH}")
    return {JSON_OUT: render_json(table), RUST_OUT: RustWriter(table).render()}


def from_committed() -> dict[Path, str]:
    """Both outputs rendered from the committed JSON table (no Go, no upstream document)."""
    table = json.loads(JSON_OUT.read_text())
    return {JSON_OUT: render_json(table), RUST_OUT: RustWriter(table).render()}


def stale(outputs: dict[Path, str]) -> Iterator[Path]:
    for path, text in outputs.items():
        if not path.is_file() or path.read_text() != text:
            yield path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the outputs are stale")
    parser.add_argument(
        "--check-committed",
        action="store_true",
        help="fail if the Rust table does not match the committed JSON table (no Go needed)",
    )
    parser.add_argument("--spec", type=Path, help="read this OpenAPI file instead")
    args = parser.parse_args(argv)
    try:
        outputs = from_committed() if args.check_committed else generate(args.spec)
    except SchemaError as err:
        print(f"gen_schema_table: {err}", file=sys.stderr)
        return 2
    if args.check or args.check_committed:
        bad = [str(p.relative_to(ROOT)) for p in stale(outputs)]
        if bad:
            print(f"gen_schema_table: stale, regenerate: {', '.join(bad)}", file=sys.stderr)
            return 1
        return 0
    for path, text in outputs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
