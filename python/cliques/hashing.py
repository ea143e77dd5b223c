"""The canonical pod-template hash: the pip-installable face of cliques.

This module needs nothing beyond the base install (`pip install cliques`: the Rust
extension and PyYAML); it never imports the Kubernetes client, msgspec, uvloop or rich, so
other tools (CI checks, admission webhooks, GitOps diffing) can use it. The specification
is docs/hashing.md; the work is done by the Rust core, `cliques._core`, whose functions are
re-exported here unchanged (no Python wrapper on the hot path).

A template is a `PodTemplateSpec` (``{"metadata": …, "spec": …}``) or, with
``kind="PodSpec"``, a `PodSpec`, given as a mapping, JSON bytes or a JSON str::

    >>> from cliques import hashing
    >>> a = {"spec": {"containers": [{"name": "main", "image": "nginx:1.27",
    ...                               "resources": {"limits": {"cpu": "1000m"}}}]}}
    >>> b = (b'{"spec": {"containers": [{"name": "main", "image": "nginx:1.27",'
    ...      b' "resources": {"limits": {"cpu": 1}}}]}}')
    >>> hashing.template_hash(a) == hashing.template_hash(b)   # "1000m" and 1 are equal
    True
    >>> hashing.canonical_json(a)
    b'{"spec":{"containers":[{"image":"nginx:1.27","name":"main","resources":{"limits":{"cpu":"1"}}}]}}'
    >>> c = {"spec": {"containers": [{"name": "main", "image": "nginx:1.28"}]}}
    >>> print(hashing.diff(a, c))
    spec.containers[name=main].image: "nginx:1.27" != "nginx:1.28"

Invalid templates raise `TemplateError`, a `ValueError` whose message starts with the JSON
path of the offending value (``spec.containers[1]: duplicate key name="main"``) and whose
``.path`` and ``.message`` give the two parts; a mapping holding a Python value that is not
JSON (a set, bytes, a non-str key) raises `TypeError`.

`diff` is for people: it walks the two canonical forms and names the first place they
differ. Whether two templates differ at all is decided by their canonical bytes only;
the walk just picks a readable path (list elements named by their key, such as
``containers[name=main]`` or ``ports[containerPort=8080,protocol=TCP]``, where the
elements have one; by position otherwise, and where an ordered list was re-ordered).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from cliques import _core
from cliques._core import HASH_ALGORITHM_VERSION, TemplateError, canonical_json, template_hash

__all__ = [
    "ABSENT",
    "HASH_ALGORITHM_VERSION",
    "KINDS",
    "Difference",
    "Template",
    "TemplateError",
    "canonical_json",
    "changed_paths",
    "diff",
    "in_place",
    "template_hash",
]

#: What `canonical_json`, `template_hash` and `diff` accept.
Template = bytes | str | Mapping[str, Any]

#: The root types a template can be given as.
KINDS: Final = ("PodTemplateSpec", "PodSpec")


class _Absent:
    """The value on the side of a `Difference` where the path does not exist."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "absent"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()


@dataclass(frozen=True, slots=True)
class Difference:
    """The first place, in canonical order, where two templates' canonical forms differ.

    `left` and `right` are canonical JSON values (quantities as their canonical strings,
    objects as dicts) or `ABSENT` where the path exists on one side only. `path` is ""
    when the documents differ at the top.
    """

    path: str
    left: Any
    right: Any

    def __str__(self) -> str:
        return f"{self.path or '(root)'}: {format_value(self.left)} != {format_value(self.right)}"


def format_value(value: Any, limit: int = 200) -> str:
    """A canonical value as compact JSON (or ``absent``), cut to `limit` characters."""
    if value is ABSENT:
        return "absent"
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def diff(a: Template, b: Template, kind: str = "PodTemplateSpec") -> Difference | None:
    """None when `a` and `b` have the same canonical form, else their first difference.

    Raises `ValueError` (from the core, with the JSON path) if either is not a valid
    template of `kind`.
    """
    left = canonical_json(a, kind)
    right = canonical_json(b, kind)
    if left == right:
        return None
    lv, rv = json.loads(left), json.loads(right)
    # The walk cannot miss a difference between unequal canonical forms, but should it
    # ever, the answer is still "different", reported at the top.
    return _diff(lv, rv, "", None) or Difference("", lv, rv)


def changed_paths(a: Template, b: Template, kind: str = "PodTemplateSpec") -> list[str]:
    """Every path at which `a` and `b` differ in meaning (their canonical forms, compared by
    the core: list elements by `name` where they all have one); empty when they are the
    same. Raises `ValueError` as `diff` does."""
    return _core.template_diff(a, b, kind)


def in_place(paths: list[str], resize: bool = False) -> bool:
    """Whether a change at exactly `paths` (`changed_paths`) can be made to a running pod
    without replacing it: each is the image of a container or an init container, which the
    API server lets a pod change and the kubelet applies by restarting that container; with
    `resize`, also a container's CPU or memory request or limit, which a server that serves
    the `pods/resize` subresource lets a pod change (if its QoS class stays the same and no
    request or limit is removed: the paths alone cannot tell)."""
    return _core.in_place(paths, resize)


# --- the walk ---------------------------------------------------------------------------

# How list elements are named in paths, by list field name: the map-list keys of the
# core/v1 pod types (a presentation choice only; the hash never depends on it). Lists of
# objects not named here are named by "name" when every element has a distinct one.
_LIST_KEYS: Final[Mapping[str, tuple[str, ...]]] = {
    "ports": ("containerPort", "protocol"),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
    "hostAliases": ("ip",),
    "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
    "ownerReferences": ("uid",),
}
_KEY_DEFAULTS: Final[Mapping[str, Any]] = {"protocol": "TCP"}
_PLAIN = re.compile(r"[A-Za-z0-9_-]+")
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9_./:-]+")

_Key = tuple[tuple[str, Any], ...]


def _member(path: str, key: str) -> str:
    if _PLAIN.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _element(path: str, key: _Key) -> str:
    parts = []
    for name, value in key:
        if isinstance(value, str) and _PLAIN_VALUE.fullmatch(value):
            shown = value
        else:
            shown = json.dumps(value, ensure_ascii=False, sort_keys=True)
        parts.append(f"{name}={shown}")
    return f"{path}[{','.join(parts)}]"


def _same(a: Any, b: Any) -> bool:
    # Canonical values: no 1 vs 1.0 to worry about, but True == 1 in Python.
    return type(a) is type(b) and a == b


def _diff(a: Any, b: Any, path: str, field: str | None) -> Difference | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys(), key=lambda k: k.encode()):
            sub = _member(path, key)
            if key not in b:
                return Difference(sub, a[key], ABSENT)
            if key not in a:
                return Difference(sub, ABSENT, b[key])
            found = _diff(a[key], b[key], sub, key)
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        return _diff_list(a, b, path, field)
    return None if _same(a, b) else Difference(path, a, b)


def _identities(items: Sequence[Any], field: str | None) -> list[_Key] | None:
    """Each element's key (`_LIST_KEYS`, else "name"), or None if they have none."""
    names = _LIST_KEYS.get(field or "", ("name",))
    keys: list[_Key] = []
    for item in items:
        if not isinstance(item, dict):
            return None
        values = tuple(item.get(n, _KEY_DEFAULTS.get(n)) for n in names)
        if values[0] is None:
            return None
        keys.append(tuple((n, v) for n, v in zip(names, values, strict=True) if v is not None))
    if len({json.dumps(k, sort_keys=True) for k in keys}) != len(keys):
        return None
    return keys


def _diff_list(a: list[Any], b: list[Any], path: str, field: str | None) -> Difference | None:
    ka, kb = _identities(a, field), _identities(b, field)
    if ka is None or kb is None:
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            found = _diff(x, y, f"{path}[{i}]", None)
            if found is not None:
                return found
        if len(a) != len(b):
            i = min(len(a), len(b))
            return Difference(
                f"{path}[{i}]", a[i] if i < len(a) else ABSENT, b[i] if i < len(b) else ABSENT
            )
        return None
    # Walk both in order while the elements pair up by key.
    for i in range(min(len(a), len(b))):
        if ka[i] != kb[i]:
            if ka[i] not in kb:
                return Difference(_element(path, ka[i]), a[i], ABSENT)
            if kb[i] not in ka:
                return Difference(_element(path, kb[i]), ABSENT, b[i])
            # The same elements in another order (an ordered list): say where by position.
            return _diff(a[i], b[i], f"{path}[{i}]", None)
        found = _diff(a[i], b[i], _element(path, ka[i]), None)
        if found is not None:
            return found
    if len(a) > len(b):
        return Difference(_element(path, ka[len(b)]), a[len(b)], ABSENT)
    if len(b) > len(a):
        return Difference(_element(path, kb[len(a)]), ABSENT, b[len(a)])
    return None
