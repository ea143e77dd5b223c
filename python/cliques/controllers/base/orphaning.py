"""An owner deleted with `--cascade=orphan`: its objects let go at once, by the operator.

Propagation Orphan leaves the deleted owner (a CliqueSet, a Clique) with the `orphan`
finalizer; the garbage collector then removes the owner from the owner references of every
dependent its graph knows, and the finalizer last. A dependent its graph does not know yet
keeps its owner reference: a Clique or pod made a moment before the delete, or any Clique
while the collector's monitor of cliques.dev is still starting (after a controller-manager
restart, or at its first discovery after the CRDs were installed). Once the owner is gone,
the collector finds that dependent's owner missing and deletes it (a Clique with its pods):
the very objects the user asked to keep.

The operator knows the owner's objects from its own caches, so it orphans them itself as
soon as it sees the finalizer: one JSON patch per object that removes the owner's
reference, guarded by a `test` that the reference at that index is still the owner's (not
by the resourceVersion, which the objects' own status writes move all the time, so that a
cache a moment old still gets its patch through). A test that fails (the reference moved
or is gone: the collector was first) answers 422 and counts as done. An object already
being deleted is left alone. The objects the operator has not observed yet
stay the collector's, as before; the executor does not adopt into an owner being deleted
(`executor._may_adopt`), so nothing is handed back to the dying owner.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Final

from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.controllers.base.actions import Patch, Plan
from cliques.controllers.base.executor import Executor
from cliques.controllers.base.plan_runner import ref_of
from cliques.kube.resources import Resource

log = logging.getLogger(__name__)

#: The finalizer the API server puts on an object deleted with propagation Orphan.
ORPHAN_FINALIZER: Final = "orphan"


def orphaning(owner: Clique | CliqueSet) -> bool:
    """Whether `owner` is being deleted with its objects to be orphaned."""
    meta = owner.metadata
    return meta.deletion_timestamp is not None and ORPHAN_FINALIZER in meta.finalizers


def plan(owner: Clique | CliqueSet, dependents: Iterable[tuple[Resource, Any]]) -> Plan:
    """The patches that remove `owner` from the owner references of `dependents` (each
    with the resource it is written through); none for one already free of it or being
    deleted."""
    uid = owner.metadata.uid
    why = f"orphaned: {owner.kind} {owner.metadata.name} deleted with propagation Orphan"
    patches: list[Patch] = []
    for resource, obj in dependents:
        meta = obj.metadata
        if meta.deletion_timestamp is not None:
            continue
        at = [i for i, ref in enumerate(meta.owner_references) if ref.uid == uid]
        ops: list[dict[str, Any]] = []
        for i in reversed(at):  # the last first: the indexes before it stay valid
            ops.append({"op": "test", "path": f"/metadata/ownerReferences/{i}/uid", "value": uid})
            ops.append({"op": "remove", "path": f"/metadata/ownerReferences/{i}"})
        if ops:
            patches.append(
                Patch(
                    resource,
                    meta.name,
                    ops,
                    patch_type="json",
                    reason=why,
                    owner_uid=uid,
                    moot_if_stale=True,
                )
            )
    return Plan(patches=patches)


async def orphan(
    executor: Executor, owner: Clique | CliqueSet, dependents: Iterable[tuple[Resource, Any]]
) -> None:
    """Carry out `plan` for `owner` and `dependents`, logged; a conflict raises, and the
    retry plans from the fresher cache."""
    done = plan(owner, dependents)
    if not done.patches:
        return
    meta = owner.metadata
    log.info(
        "%s %s/%s deleted with propagation Orphan: orphaning %d object(s) (%s)",
        owner.kind,
        meta.namespace,
        meta.name,
        len(done.patches),
        ", ".join(sorted({p.resource.kind for p in done.patches})),
    )
    await executor.execute(done, ref_of(owner))
