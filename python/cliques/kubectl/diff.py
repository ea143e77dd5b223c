"""`kubectl cliques diff` (pure): why a CliqueSet rolled, as the first real differences
between two of its templates, clique by clique, found on the canonical form (the engine
of `cliques hash --diff`, `cliques.hashing`): a re-ordered list or a re-spelled quantity
is no difference.

Two sources are compared:

- **With ControllerRevisions** owned by the set (`ownerReferences`, or the label
  `cliques.dev/cliqueset`): revision N (`--revision N`, default the one before the newest)
  against the newest. A revision's `data` holds the set's gang template (`spec.template`,
  as a StatefulSet's revision holds its pod template; `template` or a bare `cliques` list
  are read too).
- **Without them**, the template each live Clique runs against the set's `spec.template`:
  the Cliques are grouped by clique and template hash (one comparison per group), and the
  operator's additions to a Clique's template (claim entries, Kueue's pod group, the
  affinity of `spec.placement`) are on both sides or on neither, so only what the user
  changed shows. Cliques on the current template compare the same. This tells why the
  gangs still on an older template roll; once every gang is rolled, the old template is
  gone with its Cliques.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from cliques import hashing
from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.controllers.base import bounds, revision
from cliques.controllers.cliqueset import template_hash
from cliques.controllers.features import claims, kueue, placement
from cliques.kubectl.objects import ControllerRevision

#: How many changed paths a comparison lists.
MAX_PATHS: Final = 20


class RevisionError(Exception):
    """A revision asked for that the set does not have; the message names those it has."""


@dataclass(frozen=True)
class Side:
    """One side of a comparison: what it is, and the pod template of each clique."""

    label: str
    templates: Mapping[str, Any]


@dataclass(frozen=True)
class CliqueDiff:
    """One clique compared: None for `difference` when both sides mean the same."""

    clique: str
    left_hash: str = ""
    right_hash: str = ""
    difference: hashing.Difference | None = None
    paths: tuple[str, ...] = ()
    in_place: bool = False
    #: "left" or "right" when the clique is on one side only
    only_in: str = ""
    #: the gangs whose Cliques run the left side (live Cliques only)
    gangs: tuple[int, ...] = ()
    #: the template is not valid on one side (the core's message)
    error: str = ""

    @property
    def same(self) -> bool:
        return not self.only_in and not self.error and self.difference is None


@dataclass(frozen=True)
class Report:
    """What was compared (`what`: a sentence), its two sides' labels, and the cliques."""

    what: str
    left: str
    right: str
    cliques: tuple[CliqueDiff, ...] = field(default_factory=tuple)

    @property
    def same(self) -> bool:
        return all(c.same for c in self.cliques)


# --- ControllerRevisions ----------------------------------------------------------------------


def owned_revisions(
    cqs: CliqueSet, revisions: Iterable[ControllerRevision]
) -> list[ControllerRevision]:
    """The set's ControllerRevisions, oldest first: owned by it (its uid), or labelled with
    its name where they name no owner."""
    out = []
    for r in revisions:
        owners = r.metadata.owner_references
        if owners:
            mine = any(
                o.kind == labels.KIND_CLIQUESET
                and (o.uid == cqs.metadata.uid or not cqs.metadata.uid)
                and o.name == cqs.metadata.name
                for o in owners
            )
        else:
            mine = r.metadata.labels.get(labels.LABEL_CLIQUESET) == cqs.metadata.name
        if mine:
            out.append(r)
    return sorted(out, key=lambda r: (r.revision, r.metadata.name))


def revision_templates(data: Any) -> dict[str, Any]:
    """The pod template of each clique in a revision's `data`."""
    gang: Any = data
    if isinstance(gang, Mapping) and isinstance(gang.get("spec"), Mapping):
        gang = gang["spec"]
    if isinstance(gang, Mapping) and isinstance(gang.get("template"), Mapping):
        gang = gang["template"]
    cliques = gang.get("cliques") if isinstance(gang, Mapping) else None
    out: dict[str, Any] = {}
    for c in cliques if isinstance(cliques, list) else []:
        if isinstance(c, Mapping) and isinstance(c.get("name"), str):
            out[c["name"]] = c.get("template")
    return out


def between_revisions(
    cqs: CliqueSet, revisions: Sequence[ControllerRevision], number: int | None
) -> Report:
    """Revision `number` (default: the one before the newest) against the newest."""
    numbers = [r.revision for r in revisions]
    newest = revisions[-1]
    if number is None:
        number = numbers[-2] if len(numbers) > 1 else newest.revision
    chosen = next((r for r in revisions if r.revision == number), None)
    if chosen is None:
        have = ", ".join(map(str, numbers))
        raise RevisionError(f"CliqueSet {cqs.metadata.name} has no revision {number} ({have})")
    left = Side(
        f"revision {chosen.revision} ({chosen.metadata.name})", revision_templates(chosen.data)
    )
    right = Side(
        f"revision {newest.revision} ({newest.metadata.name}, the newest)",
        revision_templates(newest.data),
    )
    what = (
        f"ControllerRevision {chosen.metadata.name} (revision {chosen.revision}) against "
        f"{newest.metadata.name} (revision {newest.revision}, the newest)"
    )
    return Report(what, left.label, right.label, tuple(compare(left, right)))


# --- the live Cliques against spec.template ---------------------------------------------------


def _as_written(template: Any) -> Any:
    """A live Clique's template without what the operator added: its claim entries and
    Kueue's pod group (`claims.unresolve`, `kueue.unresolve`) and its own label and
    annotation keys (`bounds.tenant_template`), an emptied map left out."""
    if not isinstance(template, Mapping):
        return template
    out = dict(bounds.tenant_template(kueue.unresolve(claims.unresolve(template))))
    meta = out.get("metadata")
    if isinstance(meta, Mapping):
        meta = {k: v for k, v in meta.items() if v or k not in ("labels", "annotations")}
        if meta:
            out["metadata"] = meta
        else:
            out.pop("metadata")
    return out


def _current(cqs: CliqueSet, role: str, gang: int) -> Any:
    """What the set's spec.template gives clique `role` of gang `gang`, as `_as_written`
    leaves a live Clique's: the user's template without the operator's keys, with the
    affinity of `spec.placement`."""
    tmpl = cqs.spec.clique(role)
    if tmpl is None:
        return None
    return placement.gang_template(
        bounds.tenant_template(tmpl.template), cqs.spec.placement, cqs.metadata.name, gang
    )


def against_live(
    cqs: CliqueSet, cliques: Iterable[Clique], why: str = "no ControllerRevisions recorded"
) -> Report:
    """Each group of live Cliques (a clique and a template hash) against spec.template;
    `why` says why no revisions are compared."""
    groups: dict[tuple[str, str], list[Clique]] = {}
    for c in cliques:
        key = (c.spec.clique_name, c.metadata.labels.get(labels.LABEL_TEMPLATE_HASH, ""))
        groups.setdefault(key, []).append(c)
    out: list[CliqueDiff] = []
    hashes = current_hashes(cqs)
    roles = [t.name for t in cqs.spec.template.cliques]
    order = {r: i for i, r in enumerate(roles)}
    for (role, live_hash), members in sorted(
        groups.items(), key=lambda kv: (order.get(kv[0][0], len(order)), kv[0])
    ):
        members.sort(key=lambda c: c.spec.gang_index)
        gangs = tuple(sorted({c.spec.gang_index for c in members}))
        first = members[0]
        current = _current(cqs, role, first.spec.gang_index)
        want = hashes.get(role, "")
        if current is None:
            out.append(CliqueDiff(role, left_hash=live_hash, only_in="left", gangs=gangs))
        elif live_hash and live_hash == want:
            out.append(CliqueDiff(role, left_hash=live_hash, right_hash=want, gangs=gangs))
        else:
            left = Side("live", {role: _as_written(first.spec.template)})
            right = Side("spec.template", {role: current})
            (found,) = compare(left, right)
            out.append(_with(found, left_hash=live_hash, right_hash=want, gangs=gangs))
    live_roles = {role for role, _ in groups}
    for role in roles:
        if role not in live_roles:
            out.append(CliqueDiff(role, right_hash=hashes.get(role, ""), only_in="right"))
    what = (
        f"the pod templates the live Cliques of CliqueSet {cqs.metadata.name} run against its "
        f"spec.template ({why})"
    )
    return Report(what, "live Cliques", "spec.template", tuple(out))


def current_hashes(cqs: CliqueSet) -> dict[str, str]:
    """Each clique's template hash under the set's spec, as the operator labels its Cliques
    (with the algorithm the set's status names); empty when the spec cannot be hashed."""
    algorithm = (cqs.status.hash_algorithm if cqs.status else 0) or revision.CORE_ALGORITHM
    try:
        return template_hash.hashes(cqs, revision.Hasher(algorithm))[0]
    except ValueError:
        return {}


def _with(
    found: CliqueDiff, *, left_hash: str, right_hash: str, gangs: tuple[int, ...]
) -> CliqueDiff:
    """`found` with the hashes the Cliques are labelled with, and their gangs."""
    return CliqueDiff(
        found.clique,
        left_hash=left_hash or found.left_hash,
        right_hash=right_hash or found.right_hash,
        difference=found.difference,
        paths=found.paths,
        in_place=found.in_place,
        only_in=found.only_in,
        gangs=gangs,
        error=found.error,
    )


# --- the comparison -----------------------------------------------------------------------------


def compare(left: Side, right: Side) -> list[CliqueDiff]:
    """Each clique of either side: on one side only, or its first difference and changed
    paths on the canonical form, and whether a running pod takes it in place."""
    names = list(left.templates) + [n for n in right.templates if n not in left.templates]
    out = []
    for name in names:
        if name not in right.templates:
            out.append(CliqueDiff(name, left_hash=_hash(left.templates[name]), only_in="left"))
            continue
        if name not in left.templates:
            out.append(CliqueDiff(name, right_hash=_hash(right.templates[name]), only_in="right"))
            continue
        a, b = left.templates[name], right.templates[name]
        try:
            difference = hashing.diff(a, b)
            paths = hashing.changed_paths(a, b) if difference is not None else []
        except ValueError as exc:
            out.append(CliqueDiff(name, error=str(exc)))
            continue
        out.append(
            CliqueDiff(
                name,
                left_hash=_hash(a),
                right_hash=_hash(b),
                difference=difference,
                paths=tuple(paths),
                in_place=bool(paths) and hashing.in_place(paths),
            )
        )
    return out


def _hash(template: Any) -> str:
    try:
        return hashing.template_hash(template)
    except (ValueError, TypeError):
        return ""
