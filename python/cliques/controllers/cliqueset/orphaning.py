"""A CliqueSet deleted with `--cascade=orphan`: its objects let go at once, by the operator.

Propagation Orphan leaves the deleted set with the `orphan` finalizer; the garbage
collector then removes the set from the owner references of every dependent its graph
knows, and the finalizer last. A dependent its graph does not know yet keeps its owner
reference: a Clique made a moment before the delete, or any Clique while the collector's
monitor of cliques.dev is still starting (after a controller-manager restart, or at its
first discovery after the CRDs were installed). Once the set is gone, the collector finds
that Clique's owner missing and deletes it, its pods with it: the very objects the user
asked to keep.

The operator knows the set's objects from its own caches, so it orphans them itself as soon
as it sees the finalizer: one merge patch per object that removes the set from its owner
references, guarded by the resourceVersion the cache shows (a conflict is planned again
from the fresher cache; the collector's own patch finds nothing left to do). An object
already being deleted is left alone. The objects the operator has not observed yet stay
the collector's, as before; the executor does not adopt into a set being deleted
(`executor._may_adopt`), so nothing is handed back to the dying set.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import msgspec

from cliques.api.cliqueset import CliqueSet
from cliques.controllers.base.actions import Patch, Plan
from cliques.kube.resources import Resource

#: The finalizer the API server puts on an object deleted with propagation Orphan.
ORPHAN_FINALIZER: Final = "orphan"


def orphaning(cqs: CliqueSet) -> bool:
    """Whether `cqs` is being deleted with its objects to be orphaned."""
    meta = cqs.metadata
    return meta.deletion_timestamp is not None and ORPHAN_FINALIZER in meta.finalizers


def plan(cqs: CliqueSet, dependents: Iterable[tuple[Resource, Any]]) -> Plan:
    """The patches that remove `cqs` from the owner references of `dependents` (each with
    the resource it is written through); none for one already free of it or being
    deleted."""
    uid = cqs.metadata.uid
    patches: list[Patch] = []
    for resource, obj in dependents:
        meta = obj.metadata
        if meta.deletion_timestamp is not None:
            continue
        kept = [r for r in meta.owner_references if r.uid != uid]
        if len(kept) == len(meta.owner_references):
            continue
        body = {
            "metadata": {
                "resourceVersion": meta.resource_version,
                "ownerReferences": [msgspec.to_builtins(r) for r in kept],
            }
        }
        patches.append(
            Patch(
                resource,
                meta.name,
                body,
                reason=f"orphaned: CliqueSet {cqs.metadata.name} deleted with propagation Orphan",
                owner_uid=uid,
                moot_if_stale=True,
            )
        )
    return Plan(patches=patches)
