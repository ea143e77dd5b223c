"""The Kubernetes object plumbing that every cliques type shares: metadata and conditions.

Slim msgspec Structs for `metav1.ObjectMeta`, `metav1.OwnerReference`, `metav1.ListMeta` and
`metav1.Condition`, holding only the fields the operator reads or writes. Decoding ignores
every other field, so a full object from the API server decodes cheaply; encoding with
`omit_defaults` leaves out empty fields, so an object built here (no `uid`, no
`resourceVersion`) is valid in a create or a server-side apply.

The Structs that informers cache by the hundred thousand (metadata here, and `pod` and
`clique`) are declared `gc=False`: they hold decoded data only and never take part in a
reference cycle, so the garbage collector need not track them (16 bytes less each, and
fewer objects for each full collection to walk).

Timestamps stay RFC 3339 strings as the API server sends them: the hot path (an informer
decoding thousands of pods) never parses a date, and `format_time` writes one.

Neighbours: `cliqueset`, `clique` and `pod` build on these; `cliques.kube` decodes lists
and watch events with them.
"""

import datetime
import sys
import time
from typing import Annotated, Any, Final, Literal, TypeVar

import msgspec

from cliques.api.schema import MAX_QUALIFIED_NAME_LENGTH, QUALIFIED_NAME, Count64, crd

_V = TypeVar("_V")

ConditionStatus = Literal["True", "False", "Unknown"]

CONDITION_TRUE: Final = "True"
CONDITION_FALSE: Final = "False"
CONDITION_UNKNOWN: Final = "Unknown"
#: Present (True) on a Clique or CliqueSet while the API server refuses its writes for a
#: reason a person must fix; reason FailedCreate, FailedDelete or FailedUpdate (as on a
#: ReplicaSet), message the API server's. Absent otherwise.
CONDITION_REPLICA_FAILURE: Final = "ReplicaFailure"


class OwnerReference(msgspec.Struct, kw_only=True, gc=False, omit_defaults=True, rename="camel"):
    """`metav1.OwnerReference`: who owns (and garbage-collects) an object."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(msgspec.Struct, kw_only=True, gc=False, omit_defaults=True, rename="camel"):
    """`metav1.ObjectMeta`, the fields the operator uses; the rest are ignored on decode."""

    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    labels: dict[str, str] = msgspec.field(default_factory=dict)
    annotations: dict[str, str] = msgspec.field(default_factory=dict)
    owner_references: list[OwnerReference] = msgspec.field(default_factory=list)
    finalizers: list[str] = msgspec.field(default_factory=list)
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None

    def controller_ref(self) -> OwnerReference | None:
        """The owner reference with `controller: true`, if any."""
        for ref in self.owner_references:
            if ref.controller:
                return ref
        return None


class EqualValues:
    """One copy of each distinct value, found by its JSON (after a prefix that keeps the
    values of different fields apart), for caches of decoded objects that are read-only
    to the operator. At most `limit` values are remembered; past it the table starts over,
    which costs sharing, never correctness."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._by_json: dict[bytes, Any] = {}
        self._encode = msgspec.json.Encoder().encode

    def shared(self, value: _V, prefix: bytes = b"") -> _V:
        """An equal value seen before (under the same prefix), or `value`, remembered."""
        key = prefix + self._encode(value)
        seen: _V | None = self._by_json.get(key)
        if seen is not None:
            return seen
        if len(self._by_json) >= self.limit:
            self._by_json.clear()
        self._by_json[key] = value
        return value

    def __len__(self) -> int:
        return len(self._by_json)


def intern_strings(meta: ObjectMeta, *, annotations: bool = False) -> None:
    """Swaps the namespace, the creation time, the label values (and the annotation
    values, if asked) and the owners' kinds and API versions of a freshly decoded object
    for interned equal strings, so objects in a cache share one copy of each: a set's
    name, a gang index, a clique's role, a template hash, a namespace and the seconds in
    which objects were made repeat across thousands of cached objects, each decoded as a
    string of its own. Only for an object no one else holds yet (it changes `meta` and its
    maps in place)."""
    intern = sys.intern
    meta.namespace = intern(meta.namespace)
    if meta.creation_timestamp is not None:
        meta.creation_timestamp = intern(meta.creation_timestamp)
    labels = meta.labels
    for key, value in labels.items():
        labels[key] = intern(value)
    if annotations:
        notes = meta.annotations
        for key, value in notes.items():
            notes[key] = intern(value)
    for ref in meta.owner_references:
        ref.api_version = intern(ref.api_version)
        ref.kind = intern(ref.kind)


class ListMeta(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """`metav1.ListMeta`: where a list was read, and how to fetch its next page."""

    resource_version: str = ""
    continue_: str = msgspec.field(default="", name="continue")
    remaining_item_count: int | None = None


class Condition(msgspec.Struct, kw_only=True, gc=False, rename="camel"):
    """`metav1.Condition`, as in the status of a CliqueSet or a Clique.

    Every field is always encoded (no `omit_defaults`): the CRD, like upstream, requires
    `type`, `status`, `reason`, `message` and `lastTransitionTime`, and `reason` must be a
    non-empty CamelCase word.
    """

    type: Annotated[str, crd(max_length=MAX_QUALIFIED_NAME_LENGTH, pattern=QUALIFIED_NAME)]
    status: ConditionStatus
    reason: Annotated[
        str, crd(min_length=1, max_length=1024, pattern="^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
    ]
    message: Annotated[str, crd(max_length=32768, required=True)] = ""
    last_transition_time: Annotated[str, crd(format="date-time")]
    observed_generation: Count64 = 0


#: The schema of a status's `conditions`: at most 16, one per type.
CONDITIONS: Final = crd(max_items=16, list_type="map", list_map_keys=["type"])


def same_marks(a: ObjectMeta, b: ObjectMeta) -> bool:
    """The same object (UID) with the same labels, annotations, owners, finalizers and
    deletion timestamp: what two versions of it share when only their contents moved."""
    return bool(
        a.uid == b.uid
        and a.labels == b.labels
        and a.annotations == b.annotations
        and a.owner_references == b.owner_references
        and a.finalizers == b.finalizers
        and a.deletion_timestamp == b.deletion_timestamp
    )


def only_status_changed(old: Any, new: Any) -> bool:
    """`new` differs from `old` in its status (and resourceVersion) alone.

    For a resource with a status subresource the generation moves with every spec change,
    so the same generation and `same_marks` leave only the status (and fields the operator
    does not read) to have changed.
    """
    a, b = old.metadata, new.metadata
    return a.generation == b.generation and same_marks(a, b)


def find_condition(conditions: list[Condition], type_: str) -> Condition | None:
    """The condition of type `type_` in `conditions`, or None."""
    for condition in conditions:
        if condition.type == type_:
            return condition
    return None


_NOW: list[Any] = [None, ""]  # (whole second, its formatted time): one strftime per second


def format_now() -> str:
    """`format_time` of the current time (whole seconds, so formatted once per second)."""
    second = int(time.time())
    if _NOW[0] != second:
        _NOW[1] = format_time(datetime.datetime.fromtimestamp(second, datetime.UTC))
        _NOW[0] = second
    return str(_NOW[1])


def format_time(when: datetime.datetime) -> str:
    """An aware datetime as Kubernetes writes a `metav1.Time`: UTC, whole seconds, `Z`."""
    if when.tzinfo is None:
        raise ValueError("format_time needs an aware datetime (with tzinfo)")
    return when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str) -> datetime.datetime | None:
    """A `metav1.Time` as `format_time` writes it, back to an aware datetime; None if it is
    not one."""
    try:
        stamp = datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return None
    return stamp.replace(tzinfo=datetime.UTC)
