"""What a controller watches, declared as data where the controller is defined.

A `Watch` names one informer a controller is handed (its keyword argument), the kind it
decodes to, the resource (or how to pick it from what the cluster serves for gang
scheduling, `gangapi.GangAPI`: None where it is not served), whether it is selected by the
label of the process's buckets, the indexes the controller looks objects up by, and
whether test-only cache faults (`informer.WatchFaults`) apply to it.

`merge` gathers the watches of several controllers into one per name: two controllers that
watch the same informer share it, with the union of their indexes (an index name means
one function). Building, running and handing over the informers is the caller's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from cliques.kube.gangapi import GangAPI
from cliques.kube.resources import Resource
from cliques.kube.store import IndexFunc

#: Picks the resource of a watch from what the cluster serves (None: not served).
Served = Callable[[GangAPI], Resource | None]


@dataclass(frozen=True)
class Watch:
    """One informer a controller needs."""

    #: the keyword the controller takes the informer by (one informer per name)
    name: str
    #: the type its objects decode to
    kind: type[Any]
    #: the resource, or what picks it from what the cluster serves
    resource: Resource | Served
    #: only objects labelled with one of the process's buckets (else all of the namespace)
    owned: bool = True
    #: the label selector of a watch that is not `owned` ("": every object)
    selector: str = ""
    #: index name -> index function
    indexers: Mapping[str, IndexFunc[Any]] = field(default_factory=dict)
    #: test-only cache faults (`informer.WatchFaults`) apply to it
    faults: bool = False
    #: makes the function applied to every object decoded for its cache
    transform: Callable[[], Callable[[Any], Any]] | None = None

    def served(self, api: GangAPI) -> Resource | None:
        """Its resource on a cluster that serves `api` (None: the watch is left out)."""
        return self.resource if isinstance(self.resource, Resource) else self.resource(api)


def merge(watches: Iterable[Watch]) -> list[Watch]:
    """One watch per name, in the order first declared, with the union of the indexes
    declared for it (and its faults and transform, where one declares them)."""
    out: dict[str, Watch] = {}
    for watch in watches:
        seen = out.get(watch.name)
        if seen is None:
            out[watch.name] = watch
            continue
        if seen.kind is not watch.kind or seen.resource != watch.resource:
            raise ValueError(f"watch {watch.name!r} is declared for two kinds or resources")
        if seen.owned != watch.owned:
            raise ValueError(f"watch {watch.name!r} is declared both owned and not")
        if seen.selector != watch.selector:
            raise ValueError(f"watch {watch.name!r} is declared with two selectors")
        indexers = dict(seen.indexers)
        for index, func in watch.indexers.items():
            if indexers.setdefault(index, func) is not func:
                raise ValueError(f"index {index!r} of watch {watch.name!r} declared twice")
        if seen.transform and watch.transform and seen.transform is not watch.transform:
            raise ValueError(f"watch {watch.name!r} is declared with two transforms")
        out[watch.name] = replace(
            seen,
            indexers=indexers,
            faults=seen.faults or watch.faults,
            transform=seen.transform or watch.transform,
        )
    return list(out.values())
