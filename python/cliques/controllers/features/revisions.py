"""The revisions of a CliqueSet's gang template (pure): what one is, its ControllerRevision,
and the plan that keeps the set's history of them (docs/operator.md#revisions).

- **A revision** is what of the set its gangs roll on: the inputs of the cliques' template
  hashes (`cliqueset.template_hash.INPUTS`) as the user wrote them, `spec.template` and,
  when the set has them, `spec.placement` and `spec.resourceClaims` (`data`). Writing a
  revision's data back to the set gives the cliques the hashes they had. A revision is
  known by a hash of the cliques' template hashes by clique name (`revision_hash`): a
  change that rolls no gang (`spec.replicas`, a clique's `replicas`, `updateStrategy`, the
  order of the cliques, ...) makes no new revision, and a change that rolls one always
  does.
- **Its ControllerRevision** (`apps/v1`, as a StatefulSet's or a DaemonSet's) is named
  `<set>-<revision hash>` (`labels.revision_name`; the hash is 19 or 20 characters without
  a '-', so no other CliqueSet, and no StatefulSet or DaemonSet, whose revisions' hashes
  are at most 10 characters, makes the same name), carries the set's name and bucket labels
  (the workers of its bucket watch it) and the set's `kubernetes.io/change-cause`
  annotation, is controlled by the set (deleted with it) and numbered: `revision` is one
  more than the highest of the set's.
- **The plan** (`plan`): the revision of the set's current inputs is made if the set has
  none; one the set had before (a change back, or an undo, `cliques.rollout`) is
  renumbered to the highest + 1, as a StatefulSet does, rather than made again; the
  change-cause of the set is copied to it. Of the others, the set keeps the
  `spec.revisionHistoryLimit` newest; the older ones are deleted (the current one never
  is). A set whose history is in order gets no write.

Which revision is current is what the set's templates hash to now (`current_name`); the
CliqueSet's `status.currentRevision` names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from cliques import _core
from cliques.api import labels
from cliques.api.cliqueset import CliqueSet
from cliques.api.controllerrevision import API_VERSION, KIND, ControllerRevision
from cliques.controllers.base import builders
from cliques.controllers.base.actions import Create, Delete, Patch
from cliques.kube import gojson, store
from cliques.kube.informer import Informer
from cliques.kube.resources import CONTROLLER_REVISIONS
from cliques.kube.watches import Watch

#: The annotation that says why a revision was made (Kubernetes' own, as on Deployments):
#: copied from the set to the revision of its current templates.
CHANGE_CAUSE: Final = "kubernetes.io/change-cause"

#: What revisions watch: the ControllerRevisions the CliqueSets own.
WATCHES: Final[tuple[Watch, ...]] = (
    Watch(
        "controller_revisions",
        ControllerRevision,
        CONTROLLER_REVISIONS,
        indexers=store.BY_CONTROLLER,
    ),
)


@dataclass(frozen=True)
class View:
    """What the CliqueSet planner reads for revisions: whether it records them (it watches
    ControllerRevisions) and the ControllerRevisions the set owns."""

    served: bool = False
    revisions: list[ControllerRevision] = field(default_factory=list)


@dataclass(frozen=True)
class Informers:
    """The informers of `WATCHES`."""

    revisions: Informer[ControllerRevision] | None = None

    @classmethod
    def of(cls, informers: Mapping[str, Any]) -> Informers:
        """From the informers by watch name."""
        return cls(*(informers.get(w.name) for w in WATCHES))

    def owned(self) -> tuple[Informer[Any], ...]:
        """The informers of objects a CliqueSet owns (a change wakes it)."""
        return (self.revisions,) if self.revisions is not None else ()

    def view(self, owner: str) -> View:
        """What the planner reads of the ControllerRevisions of owner `owner`."""
        if self.revisions is None:
            return View()
        return View(served=True, revisions=self.revisions.store.by_index("controller", owner))


def revision_hash(hashes: Mapping[str, str]) -> str:
    """The hash a revision is known by: of the cliques' template hashes, by clique name (so
    not of their order), with the top bit set so that it is never shorter than 19
    characters (a StatefulSet's or DaemonSet's is at most 10)."""
    joined = ";".join(f"{name}={h}" for name, h in sorted(hashes.items())).encode()
    return _core.safe_encode(_core.fnv1a_64(joined) | 1 << 63)


def current_name(cliqueset: str, hashes: Mapping[str, str]) -> str:
    """The ControllerRevision name of the revision with the cliques' template hashes
    `hashes` (those of the set's templates now: its current revision)."""
    return labels.revision_name(cliqueset, revision_hash(hashes))


def data(cqs: CliqueSet) -> dict[str, Any]:
    """A revision's data: the parts of the set's spec its cliques' template hashes are taken
    of, as the user wrote them (fields at their defaults left out), under `spec`."""
    spec = cqs.spec
    out: dict[str, Any] = {"template": msgspec.to_builtins(spec.template)}
    if spec.placement is not None:
        out["placement"] = msgspec.to_builtins(spec.placement)
    if spec.resource_claims:
        out["resourceClaims"] = msgspec.to_builtins(spec.resource_claims)
    return {"spec": out}


def body(cqs: CliqueSet, name: str, number: int, bucket: str) -> dict[str, Any]:
    """The ControllerRevision `name` of the set's current templates, numbered `number`."""
    meta = cqs.metadata
    cause = meta.annotations.get(CHANGE_CAUSE, "")
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": name,
            "namespace": meta.namespace,
            "labels": {labels.LABEL_CLIQUESET: meta.name, labels.LABEL_BUCKET: bucket},
            **({"annotations": {CHANGE_CAUSE: cause}} if cause else {}),
            "ownerReferences": [builders.owner_reference(cqs)],
        },
        # In the bytes the API server itself would write (`gojson`): else every later patch
        # of the revision (its number, an orphaning) is refused as a change of `data`.
        "data": msgspec.Raw(gojson.encode(data(cqs))),
        "revision": number,
    }


def observed_token(obj: Any) -> str | None:
    """The expectation token the watch event of a ControllerRevision satisfies (its name and
    number: a renumbering is awaited before the next one), None for any other object."""
    if isinstance(obj, ControllerRevision):
        return f"{obj.metadata.name}@{obj.revision}"
    return None


@dataclass
class RevisionPlan:
    """The writes that keep a set's history: the current revision made or renumbered (and
    given the set's change-cause), the oldest beyond the limit deleted."""

    #: the name of the current revision
    current: str
    creates: list[Create] = field(default_factory=list)
    patches: list[Patch] = field(default_factory=list)
    deletes: list[Delete] = field(default_factory=list)


def plan(
    cqs: CliqueSet, hashes: Mapping[str, str], have: list[ControllerRevision], bucket: str
) -> RevisionPlan:
    """The writes that record the set's current templates (cliques' hashes `hashes`) among
    the revisions it has (`have`) and keep `spec.revisionHistoryLimit` old ones."""
    meta = cqs.metadata
    name = current_name(meta.name, hashes)
    out = RevisionPlan(current=name)
    current = next((r for r in have if r.metadata.name == name), None)
    others = [r for r in have if r is not current]
    highest = max((r.revision for r in others), default=0)
    if current is None:
        made = body(cqs, name, highest + 1, bucket)
        out.creates.append(Create(CONTROLLER_REVISIONS, name, made, meta.uid))
    elif current.metadata.deletion_timestamp is None:
        patch = _renumbered(cqs, current, highest)
        if patch is not None:
            out.patches.append(patch)
    # (A current revision being deleted, by hand, is made again once it is gone.)
    old = sorted(
        (r for r in others if r.metadata.deletion_timestamp is None),
        key=lambda r: (r.revision, r.metadata.name),
    )
    excess = len(old) - cqs.spec.revision_history_limit
    for r in old[: max(0, excess)]:
        out.deletes.append(
            Delete(
                CONTROLLER_REVISIONS,
                r.metadata.name,
                r.metadata.uid,
                meta.uid,
                "RevisionHistoryLimit",
            )
        )
    return out


def _renumbered(cqs: CliqueSet, current: ControllerRevision, highest: int) -> Patch | None:
    """The patch of the current revision that makes it the highest (a revision the set had
    before and is back to) and gives it the set's change-cause; None if it needs neither.
    Guarded by its resourceVersion."""
    cause = cqs.metadata.annotations.get(CHANGE_CAUSE, "")
    number = highest + 1 if current.revision <= highest else current.revision
    meta: dict[str, Any] = {"resourceVersion": current.metadata.resource_version}
    if cause and current.metadata.annotations.get(CHANGE_CAUSE) != cause:
        meta["annotations"] = {CHANGE_CAUSE: cause}
    elif number == current.revision:
        return None
    name = current.metadata.name
    return Patch(
        CONTROLLER_REVISIONS,
        name,
        {"metadata": meta, "revision": number},
        reason="RevisionRestored" if number != current.revision else "ChangeCause",
        expect=f"{name}@{number}",
        owner_uid=cqs.metadata.uid,
    )
