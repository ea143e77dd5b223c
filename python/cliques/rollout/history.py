"""A CliqueSet's revisions and the way back to one (`history`, `undo`), as `kubectl rollout
history|undo` gives them for a Deployment (docs/operator.md#revisions).

- `history` lists the ControllerRevisions the set controls (the operator records one per
  gang template the set rolled to, `controllers.features.revisions`), oldest first: each
  one's number, name, creation time, `kubernetes.io/change-cause`, the images of each
  clique's containers, and whether it is the set's current one (what the set's templates
  hash to now, else what `status.currentRevision` names).
- `undo` writes a revision's templates back to the set (`undo_patch`, pure), in one JSON
  patch whose first operation tests the set's resourceVersion: an edit made since the set
  was read is never overwritten (`ConcurrentEdit`, try again). Each clique gets the pod
  template it had, and the set the `spec.placement` and `spec.resourceClaims` it had; the
  rest of the spec stays as it is now (gang count, clique sizes, scaling groups, start
  order, update strategy), but for a revision whose cliques are not the set's (one was
  added or removed since): then its whole `spec.template` comes back. The set takes the
  revision's change-cause. The operator then rolls the gangs back within `maxUnavailable`
  and renumbers the revision to the highest; no revision is made.

Errors are `RevisionError`s with one-line messages: no such revision (the ones that exist
are listed), already at that revision, a concurrent edit. The API server's own (the set
not found, no permission) are `kube.errors.ApiError`s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from cliques.api import labels
from cliques.api.cliqueset import CliqueSet
from cliques.api.controllerrevision import ControllerRevisionData, ControllerRevisionList
from cliques.controllers.base.actions import pointer_key
from cliques.controllers.base.revision import Hasher
from cliques.controllers.cliqueset import template_hash
from cliques.controllers.features import kueue, revisions
from cliques.kube import errors
from cliques.kube.client import KubeClient
from cliques.kube.resources import CLIQUESETS, CONTROLLER_REVISIONS


@dataclass(frozen=True)
class RevisionInfo:
    """One revision of a set, for display."""

    #: its number (the highest is the set's latest)
    revision: int
    #: its ControllerRevision's name
    name: str
    #: when it was recorded (RFC 3339), as the API server says
    created: str
    #: its `kubernetes.io/change-cause` ("" if none)
    change_cause: str
    #: clique name -> the images of its containers, in template order
    images: Mapping[str, tuple[str, ...]]
    #: whether it is the set's current revision
    current: bool


class RevisionError(Exception):
    """An undo that cannot be done as asked (the message says why, in one line)."""


class NoSuchRevision(RevisionError):
    """The set has no revision of that number (`existing`: the numbers it has)."""

    def __init__(self, set_name: str, wanted: int | None, existing: list[int]) -> None:
        self.existing = existing
        have = ", ".join(map(str, existing)) or "none recorded yet"
        what = f"no revision {wanted}" if wanted is not None else "no previous revision"
        super().__init__(f"CliqueSet {set_name} has {what} (revisions: {have})")


class AlreadyAtRevision(RevisionError):
    """The set's templates are those of the revision asked for already."""


class ConcurrentEdit(RevisionError):
    """The set changed between its read and the undo's write (nothing was written)."""


async def history(client: KubeClient, namespace: str, set_name: str) -> list[RevisionInfo]:
    """The revisions of CliqueSet `set_name`, oldest first."""
    cqs = await client.get(CLIQUESETS, namespace, set_name, CliqueSet)
    found = await revisions_of(client, cqs)
    current = current_of(cqs, found)
    return [info(r, current) for r in found]


async def undo(
    client: KubeClient, namespace: str, set_name: str, to_revision: int | None = None
) -> RevisionInfo:
    """Write revision `to_revision` (default: the latest before the current one) back to
    CliqueSet `set_name`; the revision written back."""
    cqs = await client.get(CLIQUESETS, namespace, set_name, CliqueSet)
    found = await revisions_of(client, cqs)
    current = current_of(cqs, found)
    target = pick(set_name, found, current, to_revision)
    ops = undo_patch(cqs, target)
    try:
        await client.patch(CLIQUESETS, namespace, set_name, ops, CliqueSet, patch_type="json")
    except errors.ApiError as exc:
        # A failed `test` is a 422 (or a 409 if the write raced): tell an edit made since
        # the read from any other refusal.
        if exc.status not in (409, 422):
            raise
        now = await client.get(CLIQUESETS, namespace, set_name, CliqueSet)
        if now.metadata.resource_version == cqs.metadata.resource_version:
            raise
        raise ConcurrentEdit(
            f"CliqueSet {set_name} changed while revision {target.revision} was written back: "
            "nothing was written, try again"
        ) from exc
    return info(target, target.metadata.name)


async def revisions_of(client: KubeClient, cqs: CliqueSet) -> list[ControllerRevisionData]:
    """The ControllerRevisions `cqs` controls, by number (then name)."""
    meta = cqs.metadata
    selector = f"{labels.LABEL_CLIQUESET}={meta.name}"
    out: list[ControllerRevisionData] = []
    token = ""
    decode = msgspec.json.Decoder(ControllerRevisionList).decode
    while True:
        page = decode(
            await client.list_page(
                CONTROLLER_REVISIONS,
                meta.namespace,
                label_selector=selector,
                continue_token=token,
            )
        )
        for r in page.items:
            ref = r.metadata.controller_ref()
            if ref is not None and ref.uid == meta.uid:
                out.append(r)
        token = page.metadata.continue_
        if not token:
            break
    return sorted(out, key=lambda r: (r.revision, r.metadata.name))


def current_of(cqs: CliqueSet, found: list[ControllerRevisionData]) -> str:
    """The name of the set's current revision among `found` ("" if none is): the one its
    templates hash to now, else the one its status names for the generation it observed
    (an operator that hashes with another algorithm)."""
    names = {r.metadata.name for r in found}
    try:
        hashes, _ = template_hash.hashes(cqs, Hasher())
    except ValueError:  # a template the canonical form refuses: the operator says so
        hashes = {}
    if hashes:
        name = revisions.current_name(cqs.metadata.name, hashes)
        if name in names:
            return name
    status = cqs.status
    observed = status is not None and status.observed_generation == cqs.metadata.generation
    if observed and status is not None and status.current_revision in names:
        return status.current_revision
    return ""


def pick(
    set_name: str,
    found: list[ControllerRevisionData],
    current: str,
    to_revision: int | None,
) -> ControllerRevisionData:
    """The revision an undo writes back: number `to_revision`, or the latest that is not
    the current one."""
    existing = [r.revision for r in found]
    if to_revision is None:
        older = [r for r in found if r.metadata.name != current]
        if not older:
            raise NoSuchRevision(set_name, None, existing)
        return older[-1]
    for r in found:
        if r.revision == to_revision:
            if r.metadata.name == current:
                raise AlreadyAtRevision(
                    f"CliqueSet {set_name} is at revision {to_revision} already"
                )
            return r
    raise NoSuchRevision(set_name, to_revision, existing)


def info(r: ControllerRevisionData, current: str) -> RevisionInfo:
    """What `history` says of revision `r` (`current`: the current revision's name)."""
    return RevisionInfo(
        revision=r.revision,
        name=r.metadata.name,
        created=r.metadata.creation_timestamp or "",
        change_cause=r.metadata.annotations.get(revisions.CHANGE_CAUSE, ""),
        images=images(r.data),
        current=r.metadata.name == current,
    )


def images(data: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Clique name -> the images of its containers, from a revision's data."""
    out: dict[str, tuple[str, ...]] = {}
    for clique in _get(data, "spec", "template", "cliques") or ():
        pod = _get(clique, "template", "spec") or {}
        containers = pod.get("containers") if isinstance(pod, dict) else None
        out[str(clique.get("name", ""))] = tuple(
            str(c.get("image", "")) for c in containers or () if isinstance(c, dict)
        )
    return out


def undo_patch(cqs: CliqueSet, target: ControllerRevisionData) -> list[dict[str, Any]]:
    """The JSON patch that writes `target`'s templates back to `cqs` (module docstring:
    what is written back and what stays), guarded by the set's resourceVersion."""
    meta = cqs.metadata
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": meta.resource_version}
    ]
    spec: Mapping[str, Any] = _get(target.data, "spec") or {}
    template: Mapping[str, Any] = spec.get("template") or {}
    old = {c["name"]: c for c in template.get("cliques") or () if isinstance(c, dict)}
    now = [c.name for c in cqs.spec.template.cliques]
    if sorted(old) == sorted(now):
        queued = kueue.queue_of(cqs) is not None  # a queued gang's hashes cover its sizes
        for i, name in enumerate(now):
            path = f"/spec/template/cliques/{i}"
            ops.append({"op": "test", "path": f"{path}/name", "value": name})
            ops.append(
                {"op": "replace", "path": f"{path}/template", "value": old[name]["template"]}
            )
            if queued:
                replicas = old[name].get("replicas", 1)
                ops.append({"op": "replace", "path": f"{path}/replicas", "value": replicas})
    else:
        ops.append({"op": "replace", "path": "/spec/template", "value": template})
    if "placement" in spec:
        ops.append({"op": "add", "path": "/spec/placement", "value": spec["placement"]})
    elif cqs.spec.placement is not None:
        ops.append({"op": "remove", "path": "/spec/placement"})
    if "resourceClaims" in spec or cqs.spec.resource_claims:
        claims = spec.get("resourceClaims") or []
        ops.append({"op": "add", "path": "/spec/resourceClaims", "value": claims})
    ops += _change_cause(cqs, target)
    return ops


def _change_cause(cqs: CliqueSet, target: ControllerRevisionData) -> list[dict[str, Any]]:
    """The ops that give the set `target`'s change-cause (or none, if it has none)."""
    cause = target.metadata.annotations.get(revisions.CHANGE_CAUSE, "")
    have = cqs.metadata.annotations.get(revisions.CHANGE_CAUSE)
    path = f"/metadata/annotations/{pointer_key(revisions.CHANGE_CAUSE)}"
    if cause and cause != have:
        if not cqs.metadata.annotations:
            value = {revisions.CHANGE_CAUSE: cause}
            return [{"op": "add", "path": "/metadata/annotations", "value": value}]
        return [{"op": "add", "path": path, "value": cause}]
    if not cause and have is not None:
        return [{"op": "remove", "path": path}]
    return []


def _get(obj: Any, *keys: str) -> Any:
    """`obj[k1][k2]...`, None where a level is missing or not an object."""
    for key in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj
