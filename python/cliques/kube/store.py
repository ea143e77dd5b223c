"""An informer's cache: objects by key plus secondary indexes (by owner, by CliqueSet).

Lookups by index are dictionary hits, never label scans over every object. The store is only
written by its informer; readers take snapshots (lists) and never mutate what they get.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from cliques.kube.objects import KubeObject, controller_uid, key_of

T = TypeVar("T", bound=KubeObject)
IndexFunc = Callable[[T], Iterable[str]]


def owner_key(namespace: str, uid: str) -> str:
    """The `by_controller` index value of the children of owner `uid` in `namespace`."""
    return f"{namespace}/{uid}"


def by_controller(obj: KubeObject) -> Iterable[str]:
    """Index function: the namespace and UID of the controlling owner (`ns/uid`).

    Owners and their children share a namespace, and an owner reference is only a UID that
    anyone who may create an object can write: with the namespace in the key, an object
    made in another namespace with a forged owner reference is never counted as a child.
    """
    uid = controller_uid(obj)
    return (owner_key(obj.metadata.namespace or "", uid),) if uid else ()


#: The index every informer of owned objects keeps: by the UID of the owner that controls
#: them (`by_controller`).
BY_CONTROLLER: Mapping[str, IndexFunc[Any]] = {"controller": by_controller}


def by_label(label: str) -> Callable[[KubeObject], Iterable[str]]:
    """Index function factory: the value of one label, with the namespace (`ns/value`)."""

    def index(obj: KubeObject) -> Iterable[str]:
        value = (obj.metadata.labels or {}).get(label)
        return (f"{obj.metadata.namespace}/{value}",) if value is not None else ()

    return index


class Store(Generic[T]):
    def __init__(self, indexers: dict[str, IndexFunc[T]] | None = None) -> None:
        self._items: dict[str, T] = {}
        self._indexers = dict(indexers or {})
        self._indexes: dict[str, dict[str, _Bucket[T]]] = {n: {} for n in self._indexers}

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: str) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._items))

    def get(self, key: str) -> T | None:
        return self._items.get(key)

    def objects(self) -> list[T]:
        return list(self._items.values())

    def keys(self) -> list[str]:
        return list(self._items)

    def indexed_by(self, index: str) -> bool:
        """Whether the store keeps the index `index`."""
        return index in self._indexes

    def by_index(self, index: str, value: str) -> list[T]:
        bucket = self._indexes[index].get(value)
        if bucket is None:
            return []
        if isinstance(bucket, tuple):
            return [bucket[1]]
        return list(bucket.values())

    def index_values(self, index: str) -> list[str]:
        return list(self._indexes[index])

    # -- written by the informer only -------------------------------------------------------

    def upsert(self, obj: T) -> T | None:
        key = key_of(obj)
        old = self._items.get(key)
        self._items[key] = obj
        for name, fn in self._indexers.items():
            idx = self._indexes[name]
            after = fn(obj)
            if old is not None:
                # An update rarely moves an object between index values (its owner and
                # labels stay): then it only replaces the object where it already is.
                before = fn(old)
                if before != after:
                    _drop(idx, before, key)
            _put(idx, after, key, obj)
        return old

    def remove(self, key: str) -> T | None:
        old = self._items.pop(key, None)
        if old is not None:
            for name, fn in self._indexers.items():
                _drop(self._indexes[name], fn(old), key)
        return old


#: The objects under one index value: one (key, object) pair while there is one, as most
#: owners of pods have (a 2-tuple is 56 bytes, a dict of one 184), else a dict by key.
_Bucket = tuple[str, T] | dict[str, T]


def _put(idx: dict[str, _Bucket[T]], values: Iterable[str], key: str, obj: T) -> None:
    for value in values:
        bucket = idx.get(value)
        if bucket is None:
            idx[value] = (key, obj)
        elif isinstance(bucket, tuple):
            idx[value] = (key, obj) if bucket[0] == key else {bucket[0]: bucket[1], key: obj}
        else:
            bucket[key] = obj


def _drop(idx: dict[str, _Bucket[T]], values: Iterable[str], key: str) -> None:
    for value in values:
        bucket = idx.get(value)
        if bucket is None:
            continue
        if isinstance(bucket, tuple):
            if bucket[0] == key:
                del idx[value]
            continue
        bucket.pop(key, None)
        if len(bucket) == 1:
            ((left, obj),) = bucket.items()
            idx[value] = (left, obj)
        elif not bucket:
            del idx[value]
