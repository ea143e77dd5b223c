"""Type stubs for the Rust extension `cliques._core` (checked by mypy.stubtest).

The canonical pod-template form and hash (docs/hashing.md), FNV-1a, buckets, label
selectors and index planning. An invalid template raises `TemplateError`, a `ValueError`
whose message starts with the JSON path of the offending value (also given apart, as
`.path` and `.message`); other invalid input raises `ValueError`; arguments of the wrong
Python type raise `TypeError`.
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Self, final

__all__ = [
    "HASH_ALGORITHM_VERSION",
    "Selector",
    "TemplateError",
    "bucket_of",
    "canonical_json",
    "fnv1a_32",
    "fnv1a_64",
    "in_place",
    "plan_indices",
    "resize_path",
    "safe_encode",
    "template_diff",
    "template_hash",
]

HASH_ALGORITHM_VERSION: Final[int]
"""Version of the canonical form and hash; bumped on any change to either."""

class TemplateError(ValueError):
    """An invalid template: `str()` is `"<path>: <message>"` (just the message when the
    document as a whole is wrong)."""

    path: str
    """The JSON path of the offending value (`spec.containers[1]`), or "" for the document."""
    message: str
    """What is wrong there (`duplicate key name="main"`)."""

def canonical_json(doc: bytes | str | Mapping[str, Any], kind: str = "PodTemplateSpec") -> bytes:
    """The canonical JSON bytes of a template.

    `doc` is a PodTemplateSpec (or, with `kind="PodSpec"`, a PodSpec) as UTF-8 JSON bytes, a
    JSON str, or a mapping built from dict, list, str, int, float, bool and None. `kind` is
    "PodTemplateSpec" or "PodSpec". Raises TemplateError naming the path of an invalid value
    (`spec.containers[1]: duplicate key name="main"`).
    """

def template_hash(doc: bytes | str | Mapping[str, Any], kind: str = "PodTemplateSpec") -> str:
    """The template hash: FNV-1a 64 of `canonical_json(doc, kind)`, in decimal, encoded
    with Kubernetes' SafeEncodeString alphabet (at most 20 label-safe characters)."""

def template_diff(
    old: bytes | str | Mapping[str, Any],
    new: bytes | str | Mapping[str, Any],
    kind: str = "PodTemplateSpec",
) -> list[str]:
    """The paths at which two templates differ in meaning, compared in their canonical
    forms (`spec.containers[name=main].image`); empty when they mean the same."""

def in_place(paths: list[str], resize: bool = False) -> bool:
    """Whether a change at exactly `paths` can be made to a running pod in place (each a
    container's or init container's image, or with `resize` a container's CPU or memory
    request or limit)."""

def resize_path(path: str) -> bool:
    """Whether a path of `template_diff` is a container's CPU or memory request or limit."""

def safe_encode(value: int) -> str:
    """The decimal digits of `value` (0 <= value < 2**64) in Kubernetes' SafeEncodeString
    alphabet, as a hash is spelled in labels."""

def fnv1a_32(data: bytes) -> int:
    """FNV-1a, 32 bit."""

def fnv1a_64(data: bytes) -> int:
    """FNV-1a, 64 bit."""

def bucket_of(namespace: str, name: str, buckets: int = 256) -> int:
    """`fnv1a_32(f"{namespace}/{name}".encode()) % buckets`; `buckets` must be positive."""

def plan_indices(
    in_use: Iterable[int], desired: int, *, seed: int | None = None
) -> tuple[list[int], list[int]]:
    """Plan member indices for `desired` members: `(create, remove)`.

    `create` is every index in `range(desired)` that is not in use, lowest first, or (with a
    `seed`) in a random order fixed by the seed. `remove` is every index in use that is
    `>= desired`, highest first. Raises ValueError for a negative `desired` or index.
    """

@final
class Selector:
    """A Kubernetes label selector with apimachinery semantics, compiled once.

    Built from a LabelSelector mapping (`{"matchLabels": {...}, "matchExpressions":
    [{"key": ..., "operator": "In" | "NotIn" | "Exists" | "DoesNotExist", "values":
    [...]}]}`), from the string form (`"app=web,tier in (a,b),!canary"`), or from None,
    `{}` or `""`, which match everything. Invalid keys, values or operators raise
    ValueError. `str()` gives the canonical string form, usable as a `labelSelector` query
    parameter.
    """

    def __new__(cls, spec: Mapping[str, Any] | str | None = None) -> Self: ...
    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether a label set (None: no labels) satisfies every requirement."""

    def filter(self, label_sets: Sequence[Mapping[str, str] | None]) -> list[int]:
        """The positions of the label sets that match, in order."""

    def is_empty(self) -> bool:
        """Whether the selector has no requirement (it matches everything)."""

    def __str__(self) -> str:
        """The canonical string form (requirements sorted by key)."""

    def __repr__(self) -> str: ...
