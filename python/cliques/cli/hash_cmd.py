"""`cliques hash`: the canonical hash of the pod templates in manifests, and their diff.

    cliques hash FILE...            one line per pod template found (`-` reads stdin)
    cliques hash --json FILE...     the same as one JSON document
    cliques hash --diff A B         same desired state (exit 0) or the first difference,
                                    every path that differs and whether a running pod
                                    takes the change in place (1)

FILE holds YAML (any number of documents, `kind: List` included) or JSON. Templates are
found in CliqueSets (`spec.template.cliques[*].template`), Cliques and the workload kinds
(`spec.template`), CronJobs (`spec.jobTemplate.spec.template`), PodTemplates (`template`)
and Pods (their `spec` with their labels and annotations). A document with no `kind` is
taken as a bare PodTemplateSpec (it has `spec`) or PodSpec (it has `containers`). For
`--diff`, `FILE#NAME` picks one template of a file by clique name, object name or
`Kind/name`.

Errors (unreadable file, bad YAML or JSON, an invalid template, no template) are printed
with the file and the JSON path and give exit code 2. Only `cliques.hashing` and PyYAML
are imported, so this works with the base install.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cliques import hashing, resize

# Kinds whose pod template is at spec.template.
_WORKLOADS = frozenset(
    {
        "Clique",
        "Deployment",
        "StatefulSet",
        "DaemonSet",
        "ReplicaSet",
        "Job",
        "ReplicationController",
    }
)


class InputError(Exception):
    """A problem with the input, reported as `FILE: message` with exit code 2."""


@dataclass(frozen=True, slots=True)
class Found:
    """One pod template found in a manifest."""

    file: str
    document: int  # 0-based index of the YAML document (or JSON list item)
    kind: str  # the object's kind ("" for a bare template)
    name: str  # the object's metadata.name
    clique: str | None  # the clique name, for a CliqueSet
    path: str  # where the template is inside the object ("" for a bare template)
    template: Mapping[str, Any]
    template_kind: str  # "PodTemplateSpec" or "PodSpec"

    @property
    def object(self) -> str:
        if not self.kind:
            return self.template_kind
        return f"{self.kind}/{self.name}" if self.name else self.kind

    def matches(self, selector: str) -> bool:
        return selector in {self.clique, self.name, f"{self.kind}/{self.name}"}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "hash",
        help="canonical hash of the pod templates in manifests",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog="Exit codes: 0 ok (or same desired state), 1 different, 2 error.",
    )
    parser.add_argument("files", nargs="*", metavar="FILE", help="YAML/JSON manifests; - is stdin")
    parser.add_argument(
        "--diff",
        nargs=2,
        metavar=("A", "B"),
        help="compare two templates (FILE or FILE#NAME); exit 0 if same, 1 if different",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.diff is not None:
        if args.files:
            return _fail("--diff takes exactly two templates, A and B, and no other files")
        return _run_diff(args.diff[0], args.diff[1], as_json=args.json)
    if not args.files:
        return _fail("no FILE given (use - for standard input)")
    return _run_hash(args.files, as_json=args.json)


# --- cliques hash FILE... -----------------------------------------------------------------


def _run_hash(files: Sequence[str], *, as_json: bool) -> int:
    rows: list[dict[str, Any]] = []
    status = 0
    for file in files:
        try:
            found = find_templates(_label(file), read_source(file))
            file_rows = [_row(t, _checked(t, t.template, t.template_kind)) for t in found]
        except InputError as exc:
            print(f"cliques hash: {exc}", file=sys.stderr)
            status = 2
            continue
        rows.extend(file_rows)
        if not as_json:
            _print_rows(file_rows)
    if as_json:
        doc = {"algorithm": hashing.HASH_ALGORITHM_VERSION, "templates": rows}
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    return status


def _row(found: Found, digest: str) -> dict[str, Any]:
    return {
        "file": found.file,
        "document": found.document,
        "kind": found.kind or found.template_kind,
        "name": found.name,
        "clique": found.clique,
        "path": found.path,
        "template_kind": found.template_kind,
        "hash": digest,
    }


def _print_rows(rows: Sequence[dict[str, Any]]) -> None:
    cells = []
    for row in rows:
        obj = f"{row['kind']}/{row['name']}" if row["name"] else row["kind"]
        cells.append((row["file"], obj, row["path"] or "-", row["hash"]))
    widths = [max((len(c[i]) for c in cells), default=0) for i in range(3)]
    for c in cells:
        print("  ".join(c[i].ljust(widths[i]) for i in range(3)) + "  " + c[3])


# --- cliques hash --diff A B ---------------------------------------------------------------


def _run_diff(a: str, b: str, *, as_json: bool) -> int:
    try:
        left, right = pick_template(a), pick_template(b)
        kind = left.template_kind
        left_doc, right_doc = left.template, right.template
        if left.template_kind != right.template_kind:
            # A bare PodSpec against a template: compare it as a template's spec.
            kind = "PodTemplateSpec"
            left_doc, right_doc = _as_template(left), _as_template(right)
        left_hash = _checked(left, left_doc, kind)
        right_hash = _checked(right, right_doc, kind)
        difference = hashing.diff(left_doc, right_doc, kind)
        paths = hashing.changed_paths(left_doc, right_doc, kind)
    except InputError as exc:
        return _fail(str(exc))
    in_place = hashing.in_place(paths)
    with_resize = (
        not in_place
        and hashing.in_place(paths, resize=True)
        and resize.allowed(
            left_doc if kind == "PodTemplateSpec" else {"spec": left_doc},
            right_doc if kind == "PodTemplateSpec" else {"spec": right_doc},
        )
    )
    if as_json:
        doc: dict[str, Any] = {
            "algorithm": hashing.HASH_ALGORITHM_VERSION,
            "same": difference is None,
            "a": {"source": a, "hash": left_hash},
            "b": {"source": b, "hash": right_hash},
            "difference": None,
            "paths": paths,
            "inPlace": in_place,
            "inPlaceWithResize": in_place or with_resize,
        }
        if difference is not None:
            doc["difference"] = {
                "path": difference.path,
                "a": _json_value(difference.left),
                "b": _json_value(difference.right),
            }
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    elif difference is None:
        print(f"same desired state (hash {left_hash})")
    else:
        width = max(len(a), len(b))
        print("different")
        print(f"  at {difference.path or '(the top)'}")
        print(f"  {a.ljust(width)}  {hashing.format_value(difference.left)}")
        print(f"  {b.ljust(width)}  {hashing.format_value(difference.right)}")
        print(f"  hashes: {left_hash} (A)  {right_hash} (B)")
        shown = paths[:20] + ([f"... and {len(paths) - 20} more"] if len(paths) > 20 else [])
        print(f"  {len(paths)} path(s) differ: {', '.join(shown)}")
        if in_place:
            print(
                "  in place: yes (only container images differ: updateStrategy.inPlace "
                "IfPossible keeps the pods)"
            )
        elif with_resize:
            print(
                "  in place: yes, with a resize (container images, CPU and memory differ: "
                "updateStrategy.inPlace IfPossible keeps the pods where the API server "
                "serves pods/resize)"
            )
        else:
            print("  in place: no (a roll replaces the pods)")
    return 0 if difference is None else 1


def _json_value(value: Any) -> Any:
    return "absent" if value is hashing.ABSENT else value


def _as_template(found: Found) -> Mapping[str, Any]:
    return found.template if found.template_kind == "PodTemplateSpec" else {"spec": found.template}


def _checked(found: Found, template: Mapping[str, Any], kind: str) -> str:
    """The template's hash, or InputError naming the file, object and JSON path."""
    try:
        return hashing.template_hash(template, kind)
    except hashing.TemplateError as exc:
        path = ".".join(p for p in (found.path, exc.path) if p)
        message = f"{path}: {exc.message}" if path else exc.message
    except ValueError as exc:  # not about the template's content (a str that is not UTF-8)
        message = f"{found.path}: {exc}" if found.path else str(exc)
    obj = f"{found.file}: {found.object}"
    raise InputError(f"{obj}: invalid template: {message}") from None


def pick_template(source: str) -> Found:
    """The one template named by `FILE` or `FILE#NAME`."""
    file, selector = source, None
    if "#" in source and not (source != "-" and Path(source).exists()):
        file, selector = source.rsplit("#", 1)
    found = find_templates(_label(file), read_source(file))
    if selector is not None:
        chosen = [t for t in found if t.matches(selector)]
        if not chosen:
            names = ", ".join(sorted({t.clique or t.name or t.object for t in found}))
            raise InputError(f"{file}: no template named {selector!r} (found: {names})")
        found = chosen
    if len(found) > 1:
        names = ", ".join(t.clique or t.name or t.object for t in found)
        raise InputError(
            f"{file}: holds {len(found)} templates ({names}); pick one with {file}#NAME"
        )
    return found[0]


# --- reading manifests ----------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """SafeLoader that leaves timestamps as strings, as they are in JSON."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


STDIN = "<stdin>"


def read_source(file: str) -> bytes:
    try:
        if file in ("-", STDIN):
            return sys.stdin.buffer.read()
        return Path(file).read_bytes()
    except OSError as exc:
        raise InputError(f"{file}: cannot read: {exc.strerror or exc}") from None


def _label(file: str) -> str:
    return STDIN if file == "-" else file


def load_documents(file: str, data: bytes) -> list[Any]:
    """The documents of a YAML or JSON source (a JSON list or `kind: List` is unrolled)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{file}: not UTF-8 text: {exc}") from None
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            docs: list[Any] = [json.loads(text)]
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{file}: bad JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
            ) from None
    else:
        try:
            docs = list(yaml.load_all(text, Loader=_Loader))  # _Loader is a SafeLoader
        except yaml.YAMLError as exc:
            raise InputError(f"{file}: bad YAML: {_yaml_message(exc)}") from None
    out: list[Any] = []
    for doc in docs:
        if isinstance(doc, list):
            out.extend(doc)
        elif isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") and "items" in doc:
            out.extend(doc.get("items") or [])
        elif doc is not None:
            out.append(doc)
    return out


def _yaml_message(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        what = "; ".join(x for x in (exc.context, exc.problem) if x)
        return f"line {mark.line + 1} column {mark.column + 1}: {what}"
    return str(exc)


def find_templates(file: str, data: bytes) -> list[Found]:
    """Every pod template in the source; InputError if there is none."""
    found: list[Found] = []
    for index, doc in enumerate(load_documents(file, data)):
        if isinstance(doc, Mapping):
            found.extend(_templates_of(file, index, doc))
    if not found:
        raise InputError(f"{file}: no pod template found")
    return found


def _get(doc: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(doc, Mapping):
            return None
        doc = doc.get(key)
    return doc


def _templates_of(file: str, index: int, doc: Mapping[str, Any]) -> Iterator[Found]:
    kind = doc.get("kind")
    name = _get(doc, "metadata", "name")
    name = name if isinstance(name, str) else ""

    def found(
        path: str, template: Any, clique: str | None = None, tk: str = "PodTemplateSpec"
    ) -> Found:
        if not isinstance(template, Mapping):
            obj = f"{kind}/{name}" if name else str(kind)
            got = "null" if template is None else type(template).__name__
            raise InputError(f"{file}: {obj}: {path}: expected a pod template (object), got {got}")
        return Found(file, index, kind or "", name, clique, path, template, tk)

    if kind == "CliqueSet":
        cliques = _get(doc, "spec", "template", "cliques")
        if not isinstance(cliques, list):
            return
        for i, clique in enumerate(cliques):
            cname = _get(clique, "name")
            label = f"name={cname}" if isinstance(cname, str) and cname else str(i)
            path = f"spec.template.cliques[{label}].template"
            yield found(path, _get(clique, "template"), cname if isinstance(cname, str) else None)
    elif kind in _WORKLOADS:
        if _get(doc, "spec", "template") is not None:
            yield found("spec.template", _get(doc, "spec", "template"))
    elif kind == "CronJob":
        if _get(doc, "spec", "jobTemplate", "spec", "template") is not None:
            yield found(
                "spec.jobTemplate.spec.template",
                _get(doc, "spec", "jobTemplate", "spec", "template"),
            )
    elif kind == "PodTemplate":
        if doc.get("template") is not None:
            yield found("template", doc.get("template"))
    elif kind == "Pod":
        yield found("", _pod_template(doc))
    elif kind is None:
        if "spec" in doc:
            yield found("", doc)
        elif "containers" in doc:
            yield found("", doc, tk="PodSpec")


def _pod_template(pod: Mapping[str, Any]) -> dict[str, Any]:
    """A Pod as the template that would have made it: labels, annotations and spec."""
    template: dict[str, Any] = {"spec": pod.get("spec")}
    meta = pod.get("metadata")
    if isinstance(meta, Mapping):
        kept = {k: meta[k] for k in ("labels", "annotations") if meta.get(k) is not None}
        if kept:
            template["metadata"] = kept
    return template


def _fail(message: str) -> int:
    print(f"cliques hash: {message}", file=sys.stderr)
    return 2
