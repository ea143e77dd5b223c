"""The composite trees of a CliqueSet's gangs, planned (pure): where the API server serves
CompositePodGroups (Kubernetes 1.37, alpha; `gangapi.COMPOSITE`), the Workload backend makes
each gang of a set with scaling groups a tree, laid out and built by `composite_groups`: a
CompositePodGroup whose children are one PodGroup per instance of a scaling group (nested:
a PodGroup for the cliques outside the groups and a composite per group). This module
decides, for a whole set, which of those objects to create, patch and delete, and which
PodGroup each Clique names, as `podgroups` does for one PodGroup per gang.

- **Each Clique names its part of the tree** (`cliques.dev/pod-group`): the PodGroup of its
  instance, or that of the cliques outside the groups (`Names`). A new gang, and a gang
  whose Cliques name the tree the set asks for now, takes the names of that tree; an
  instance added by a scale gets a child of its own, and no other pod moves.
- **A gang keeps its tree until all its pods are made again.** A pod's PodGroup, a
  PodGroup's parent and a composite's `minGroupCount` cannot change, so a set whose tree
  changes (a group's `minAvailable`, the priority class, ...) moves a gang only when a
  roll replaces every pod of it (`TreePlan.moves`). Until then an instance added to the
  gang is made a sibling of its others (same parent, Workload template, priority class
  and disruption mode, read from one of them); a part the gang's tree has no place for (a
  clique or group added since) joins a PodGroup the gang names, as a clique added to a
  one-PodGroup gang does. A gang made with one PodGroup (before the server served
  composites) keeps it the same way, `minCount` following the whole gang.
- **Made as named.** The PodGroups live Cliques name are kept, made when missing, with
  their ancestors; a gang without a live Clique gets its whole tree, with the template's
  instance count. An instance that a scale adds (its gang's scale target asks for more
  instances than it has) gets its child in the plan that makes its Cliques.
  `minCount` follows the pods each part needs (it may change on v1beta1).
- **Deleted children first.** A PodGroup no live Clique names is deleted (the API server
  keeps it while a pod names it: `podgroup-protection`). A composite has no such
  finalizer and a pod of one of its children would wait for it forever, so one is
  deleted only once nothing in the cache names it as its parent any more: its children
  are gone, and none is kept.
- **Planned gang by gang.** Each gang's share of the plan (`GangPart`) is a pure function
  of the set's `Parts`, the gang's Cliques, the groups labelled with it and its instance
  counts; the plan keeps them (`Memo`), with the Cliques and groups split by gang. The
  next plan finds the objects that are not the same as last time by identity (never
  reading the others), splits again only their gangs and plans again only those and the
  gangs whose counts changed: a scale of one instance in a set of 1,000 gangs plans one
  gang.
- **The Workload** of such a set has `compositePodGroupTemplates` only
  (`composite_groups.workload_templates`), named `<cliqueset>-<hash of them>`; a gang
  needing no part of itself has no composite, and no Workload.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.podgroup import CompositePodGroup, PodGroup
from cliques.controllers.base.actions import Create, Delete, Patch
from cliques.controllers.features import composite_groups, podgroups, workload
from cliques.controllers.features.composite_groups import Member
from cliques.controllers.features.gang_tree_parts import (
    Names,
    Part,
    Parts,
    instance_hash,
    part_of,
    parts,
    wanted_names,
)
from cliques.kube import gangapi

_T = TypeVar("_T", Clique, PodGroup)


@dataclass
class TreePlan:
    """The writes that keep a set's gang trees matching its Cliques, and the names its
    Cliques take."""

    creates: list[Create] = field(default_factory=list)
    patches: list[Patch] = field(default_factory=list)
    deletes: list[Delete] = field(default_factory=list)
    #: the Workloads a group or composite links to (kept while one does)
    linked: set[str] = field(default_factory=set)
    #: the set's current Workload ("" when its gangs need no part: no composite), and its
    #: body
    workload: str = ""
    #: its templates, for `workload_body` when it is to be made
    workload_templates: dict[str, Any] | None = None
    #: gang -> the PodGroups a new Clique of it names; and those of the tree the set asks
    #: for now, which a gang moves to when all its pods are made again
    names: dict[int, Names] = field(default_factory=dict)
    moves: dict[int, Names] = field(default_factory=dict)
    #: the scheduler keeps each gang in one domain (its composite's topology): every part
    #: of the gang is in the tree, and the topology field is kept
    scheduler_packs: bool = False
    #: what the next plan of the set reuses (`plan`'s `memo`)
    memo: Memo | None = None


@dataclass
class _Gang:
    """What one gang's live Cliques say."""

    named: dict[Part, str] = field(default_factory=dict)
    #: group -> the highest instance + 1 a live Clique has
    top: dict[str, int] = field(default_factory=dict)


def _gangs(cliques: Iterable[Clique]) -> dict[int, _Gang]:
    out: dict[int, _Gang] = {}
    for c in sorted(cliques, key=lambda c: c.metadata.name):
        if c.metadata.deletion_timestamp is not None:
            continue
        gang = out.setdefault(c.spec.gang_index, _Gang())
        part = part_of(c)
        group, inst = part
        if group and inst is not None:
            gang.top[group] = max(gang.top.get(group, 0), inst + 1)
        name = c.metadata.annotations.get(labels.ANNOTATION_POD_GROUP)
        if name:
            gang.named.setdefault(part, name)
    return out


def _gang_names(cliqueset: str, gang: int, found: _Gang, wanted: Names) -> Names:
    """The `Names` of a gang whose live Cliques name PodGroups (`found.named`): each part
    keeps what its Cliques name; a new instance is a sibling of its group's others (the
    hash of their names); a part without a Clique takes its name in the tree the set asks
    for now if the gang is on it (one of its Cliques names its part there), else it joins a
    PodGroup the gang names (an older tree has no place for it)."""
    instances: dict[str, str] = {}
    for (group, inst), name in found.named.items():
        if group and inst is not None and group not in instances:
            fixed = instance_hash(cliqueset, gang, group, inst, name)
            if fixed:
                instances[group] = fixed
    if any(name == wanted.of(*part) for part, name in found.named.items()):
        return dataclasses.replace(
            wanted, instances={**wanted.instances, **instances}, named=dict(found.named)
        )
    return Names(
        cliqueset,
        gang,
        instances=instances,
        named=dict(found.named),
        fallback=next(iter(found.named.values()), ""),
    )


def split(
    groups: Iterable[PodGroup],
) -> tuple[dict[str, PodGroup], dict[str, CompositePodGroup]]:
    """A set's PodGroups and CompositePodGroups (listed together), by name."""
    pgs: dict[str, PodGroup] = {}
    cpgs: dict[str, CompositePodGroup] = {}
    for g in groups:
        if isinstance(g, CompositePodGroup):
            cpgs[g.metadata.name] = g
        else:
            pgs[g.metadata.name] = g
    return pgs, cpgs


def stale_composites(
    cqs: CliqueSet,
    groups: Iterable[PodGroup],
    kept: Iterable[str],
    wanted: Iterable[str] = (),
    *,
    version: str = composite_groups.COMPOSITE_VERSION,
) -> list[Delete]:
    """The composites to delete: those no PodGroup in `kept` descends from (nor in
    `wanted`), which nothing in the cache (PodGroup or composite, even one being deleted)
    names as its parent any more, and not being deleted already (deleted through
    scheduling.k8s.io `version`)."""
    pgs, cpgs = split(groups)
    keep = set(wanted)
    for name in kept:
        found = pgs.get(name)
        parent = found.spec.parent_composite_pod_group_name if found is not None else ""
        while parent and parent not in keep:
            keep.add(parent)
            above = cpgs.get(parent)
            parent = above.spec.parent_composite_pod_group_name if above is not None else ""
    parents = {g.spec.parent_composite_pod_group_name for g in (*pgs.values(), *cpgs.values())}
    res = gangapi.compositepodgroups(version)
    return [
        Delete(res, name, c.metadata.uid, cqs.metadata.uid, "Unused")
        for name, c in sorted(cpgs.items())
        if name not in keep and name not in parents and c.metadata.deletion_timestamp is None
    ]


def _count(group: PodGroup, member: Member | None, of: Parts, whole: int) -> int:
    """The pods a kept PodGroup should ask for: its part's (`member`, else read from its
    labels and parent), or for a gang's one PodGroup (no parent, no instance) `whole`."""
    if member is not None:
        return member.count
    meta = group.metadata
    if labels.LABEL_GROUP_INDEX in meta.labels:
        name = meta.labels.get(labels.LABEL_SCALING_GROUP, "")
        need = next((g for g in of.groups if g.name == name), None)
        return need.instance_pods if need is not None else 0
    if group.spec.parent_composite_pod_group_name:
        return of.other_pods
    return whole


#: What every gang's part of a set's plan reads besides the gang's own objects: the set's
#: identity, the bucket, the gated fields the server keeps, its `Parts` and the pods a
#: gang's one PodGroup needs.
SettingKey = tuple[str, str, str, str, frozenset[str], Parts, int, str]


@dataclass(frozen=True)
class _Setting:
    cqs: CliqueSet
    of: Parts
    bucket: str
    #: the set's Workload ("" for none), and the pods a gang's one PodGroup needs
    workload: str
    whole: int
    #: the Workload's templates (`Parts.templates`)
    templates: dict[str, Any] | None = None
    #: the version CompositePodGroups are made and deleted in
    composite_version: str = composite_groups.COMPOSITE_VERSION


@dataclass(frozen=True)
class GangPart:
    """One gang's share of a `TreePlan`: a pure function of the set (`SettingKey`), the
    gang, its Cliques, the groups labelled with it and whether it is below `replicas`."""

    composite_creates: tuple[Create, ...] = ()
    group_creates: tuple[Create, ...] = ()
    patches: tuple[Patch, ...] = ()
    deletes: tuple[Delete, ...] = ()
    composite_deletes: tuple[Delete, ...] = ()
    linked: frozenset[str] = frozenset()
    names: Names | None = None
    moves: Names | None = None
    #: the names it keeps or reads that are not its gang's (`<set>-<gang>-...`): no other
    #: gang's part deletes them (a state the operator never makes, kept safe all the same)
    outside: frozenset[str] = frozenset()

    @property
    def loud(self) -> bool:
        """It writes something (or keeps names outside its gang)."""
        return bool(
            self.composite_creates
            or self.group_creates
            or self.patches
            or self.deletes
            or self.composite_deletes
            or self.outside
        )


#: gang -> (its Cliques, its groups, below `replicas`, its instance counts, the part
#: planned from them)
_Entry = tuple[tuple[Clique, ...], tuple[PodGroup, ...], bool, tuple[int, ...], GangPart]


@dataclass(frozen=True)
class Memo:
    """The gang parts of a set's last plan, for the next one: only the gangs whose Cliques,
    groups or instance counts changed since (found without reading the others) are planned
    again, so a scale of one instance in a set of 1,000 gangs plans one gang, not 1,000."""

    key: SettingKey
    setting: _Setting
    replicas: int
    gangs: Mapping[int, _Entry]
    #: the Cliques and groups planned, and the same by gang (sorted by name)
    cliques: list[Clique]
    groups: list[PodGroup]
    cliques_by_gang: Mapping[int, tuple[Clique, ...]]
    groups_by_gang: Mapping[int, tuple[PodGroup, ...]]
    counts: Mapping[int, Mapping[str, int]]
    #: gang -> its names and moves; the gangs whose parts write (or keep names outside
    #: their gang); the Workloads the groups link to
    names: Mapping[int, Names]
    moves: Mapping[int, Names]
    loud: frozenset[int]
    linked: frozenset[str]


def plan(
    cqs: CliqueSet,
    cliques: Iterable[Clique],
    groups: Iterable[PodGroup],
    *,
    bucket: str,
    features: frozenset[str] = frozenset(),
    memo: Memo | None = None,
    counts: Mapping[int, Mapping[str, int]] | None = None,
    composite_version: str = composite_groups.COMPOSITE_VERSION,
) -> TreePlan:
    """`groups`: the PodGroups and CompositePodGroups the set owns (listed together);
    `features`: the PodGroup fields behind feature gates that the server keeps; `memo`:
    the previous plan's (`TreePlan.memo`); `counts`: gang -> the instances of each group
    it is to have (its scale targets'), whose PodGroups are made with their Cliques. The
    module docstring says what is kept, made, patched and deleted; each gang is planned
    on its own (`GangPart`), and only where its objects changed since `memo`.
    `composite_version`: the scheduling.k8s.io version CompositePodGroups are written in
    (`gangapi.GangAPI.composite_version`)."""
    meta = cqs.metadata
    of = parts(cqs, features)
    whole = workload.min_count(cqs)
    key: SettingKey = (
        meta.uid,
        meta.name,
        meta.namespace,
        bucket,
        features,
        of,
        whole,
        composite_version,
    )
    cliques, groups, counts = list(cliques), list(groups), counts or {}
    replicas = cqs.spec.replicas
    if memo is not None and memo.key == key and memo.replicas == replicas:
        setting = memo.setting
        cliques, by_gang, dirty = _resplit(
            memo.cliques, cliques, memo.cliques_by_gang, _clique_gang
        )
        groups, groups_by, dirty_groups = _resplit(
            memo.groups, groups, memo.groups_by_gang, _group_gang
        )
        dirty |= dirty_groups
        dirty |= {
            g for g in counts.keys() | memo.counts.keys() if counts.get(g) != memo.counts.get(g)
        }
        old: Mapping[int, _Entry] = memo.gangs
        names, moves, loud = dict(memo.names), dict(memo.moves), set(memo.loud)
    else:
        templates = of.templates()
        current = composite_groups.workload_name(cqs, templates) if templates is not None else ""
        setting = _Setting(cqs, of, bucket, current, whole, templates, composite_version)
        by_gang = _split(cliques, _clique_gang)
        groups_by = _split(groups, _group_gang)
        dirty = set(range(replicas)) | by_gang.keys() | groups_by.keys()
        old, names, moves, loud = {}, {}, {}, set()
    entries = dict(old)
    relinked = not old
    for gang in sorted(dirty):
        below = 0 <= gang < replicas
        mine, owned = by_gang.get(gang, ()), groups_by.get(gang, ())
        entry = old.get(gang)
        if not (below or mine or owned):
            entries.pop(gang, None)  # a gang gone whole
        else:
            want = counts.get(gang, {})
            scale = tuple(want.get(g.name, 0) for g in of.groups)
            if entry is None or entry[:4] != (mine, owned, below, scale):
                part = _plan_gang(setting, gang, mine, owned, below, scale)
                entries[gang] = (mine, owned, below, scale, part)
        new = entries.get(gang)
        part_of_gang = new[4] if new is not None else GangPart()
        relinked = (
            relinked or entry is None or new is None or entry[4].linked != part_of_gang.linked
        )
        _put(names, gang, part_of_gang.names)
        _put(moves, gang, part_of_gang.moves)
        (loud.add if part_of_gang.loud else loud.discard)(gang)
    linked = (
        frozenset().union(*(e[4].linked for e in entries.values()))
        if relinked or memo is None
        else memo.linked
    )
    out = _gathered(setting, entries, sorted(loud), linked)
    out.names, out.moves = names, moves
    out.memo = Memo(
        key,
        setting,
        replicas,
        entries,
        cliques,
        groups,
        by_gang,
        groups_by,
        counts,
        names,
        moves,
        frozenset(loud),
        linked,
    )
    return out


def _put(into: dict[int, Names], gang: int, names: Names | None) -> None:
    if names is None:
        into.pop(gang, None)
    else:
        into[gang] = names


def _gathered(
    s: _Setting, entries: Mapping[int, _Entry], loud: list[int], linked: frozenset[str]
) -> TreePlan:
    """The set's `TreePlan` from its gangs' parts: the writes of the gangs that write
    (`loud`, in gang order; composites first, then PodGroups; deletes by name)."""
    out = TreePlan(
        scheduler_packs=bool(s.of.shape.topology_key) and s.of.rooted,
        linked=set(linked),
        workload=s.workload,
        workload_templates=s.templates if s.workload else None,
    )
    outside: set[str] = set()
    deletes: list[Delete] = []
    composite_deletes: list[Delete] = []
    for gang in loud:
        part = entries[gang][4]
        out.creates += part.composite_creates
        out.patches += part.patches
        outside |= part.outside
        deletes += part.deletes
        composite_deletes += part.composite_deletes
    for gang in loud:
        out.creates += entries[gang][4].group_creates
    deletes.sort(key=lambda d: d.name)
    composite_deletes.sort(key=lambda d: d.name)
    out.deletes = [d for d in (*deletes, *composite_deletes) if d.name not in outside]
    return out


def _clique_gang(c: Clique) -> int:
    return c.spec.gang_index


def _group_gang(g: PodGroup) -> int:
    """A group's gang, from its label (-1 without one)."""
    index = g.metadata.labels.get(labels.LABEL_GANG_INDEX, "")
    return int(index) if index.isdigit() else -1


def _by_name(obj: Clique | PodGroup) -> tuple[bool, str]:
    return (isinstance(obj, CompositePodGroup), obj.metadata.name)


def _split(items: Iterable[_T], gang_of: Callable[[_T], int]) -> dict[int, tuple[_T, ...]]:
    """`items` by gang, each gang's sorted by name."""
    out: dict[int, list[_T]] = {}
    for item in items:
        out.setdefault(gang_of(item), []).append(item)
    return {g: tuple(sorted(found, key=_by_name)) for g, found in out.items()}


def _resplit(
    old: list[_T],
    new: list[_T],
    old_by: Mapping[int, tuple[_T, ...]],
    gang_of: Callable[[_T], int],
) -> tuple[list[_T], Mapping[int, tuple[_T, ...]], set[int]]:
    """`new` by gang (as `_split`), from `old`'s split: the gangs of the objects that are
    not in both (compared by identity, so an unchanged object is never read) are split
    again; and those gangs. The list to remember comes first: `old` when the two are
    equal (the split holds its objects), else `new`."""
    if old == new:  # a C loop over the same (or equal) objects
        return old, old_by, set()
    in_new = {id(x) for x in new}
    in_old = {id(x) for x in old}
    gone = [x for x in old if id(x) not in in_new]
    added = [x for x in new if id(x) not in in_old]
    if len(gone) + len(added) > len(new) // 4 + 16:
        out = _split(new, gang_of)
        return new, out, set(out) | set(old_by)
    dirty = {gang_of(x) for x in gone} | {gang_of(x) for x in added}
    gone_ids = {id(x) for x in gone}
    by = dict(old_by)
    for g in dirty:
        kept = [x for x in old_by.get(g, ()) if id(x) not in gone_ids]
        kept += [x for x in added if gang_of(x) == g]
        if kept:
            by[g] = tuple(sorted(kept, key=_by_name))
        else:
            by.pop(g, None)
    return new, by, dirty


@dataclass
class _Keep:
    """What one gang keeps: name -> what it is made from (composites in tree order,
    parents first), its tree, and the names its live Cliques take."""

    pgs: dict[str, tuple[Part, Member | None]] = field(default_factory=dict)
    cpgs: dict[str, Member | None] = field(default_factory=dict)
    tree: dict[str, Member] = field(default_factory=dict)
    names: Names | None = None
    moves: Names | None = None
    #: PodGroups to make from a sibling in the cache (an instance a scale added)
    made_from: dict[str, PodGroup] = field(default_factory=dict)


def _plan_gang(
    s: _Setting,
    gang: int,
    cliques: Sequence[Clique],
    groups: Sequence[PodGroup],
    below: bool,
    scale: tuple[int, ...] = (),
) -> GangPart:
    """One gang's `GangPart` (`plan`): what it keeps, made with its ancestors; the kept
    PodGroups' minimum counts; the rest deleted. `scale`: the instances of each group the
    gang is to have."""
    cqs, of = s.cqs, s.of
    meta = cqs.metadata
    pgs, cpgs = split(groups)
    keep = _kept(s, gang, cliques, below, scale)
    _ancestors(s, gang, keep, pgs, cpgs)
    position = {m: i for i, m in enumerate(keep.tree)}

    def order(obj_name: str) -> tuple[int, str]:
        return (position.get(obj_name, len(position)), obj_name)

    # Creates: composites first (parents before children), then PodGroups.
    cpg_res = gangapi.compositepodgroups(s.composite_version)
    pg_res = gangapi.podgroups(composite_groups.POD_GROUP_VERSION)
    composite_creates = [
        Create(
            cpg_res,
            cpg_name,
            composite_groups.composite_body(
                cqs,
                gang,
                member,
                s.workload,
                of.shape,
                bucket=s.bucket,
                version=s.composite_version,
            ),
            meta.uid,
        )
        for cpg_name in sorted(keep.cpgs, key=order)
        # kept, being deleted (made again once gone), or nothing to make it from
        if cpg_name not in cpgs and (member := keep.cpgs[cpg_name]) is not None
    ]
    group_creates: list[Create] = []
    patches: list[Patch] = []
    for pg_name in sorted(keep.pgs, key=order):
        part, member = keep.pgs[pg_name]
        existing = pgs.get(pg_name)
        if existing is None:
            body = _group_body(s, gang, pg_name, part, member, keep.made_from.get(pg_name))
            if body is not None:
                group_creates.append(Create(pg_res, pg_name, body, meta.uid))
        elif existing.metadata.deletion_timestamp is None:  # else made again once gone
            needed = _count(existing, member, of, s.whole)
            if needed > 0 and 0 < existing.min_count != needed:
                patch = {
                    "metadata": {"resourceVersion": existing.metadata.resource_version},
                    "spec": {"schedulingPolicy": podgroups.scheduling_policy(needed)},
                }
                patches.append(Patch(pg_res, pg_name, patch, reason="PodGroupMinCount"))

    prefix = f"{meta.name}-{gang}-"
    parents = {g.spec.parent_composite_pod_group_name for g in groups}
    outside = {n for n in (*keep.pgs, *keep.cpgs, *parents) if n and not n.startswith(prefix)}
    return GangPart(
        composite_creates=tuple(composite_creates),
        group_creates=tuple(group_creates),
        patches=tuple(patches),
        deletes=tuple(
            Delete(pg_res, pg_name, g.metadata.uid, meta.uid, "Unused")
            for pg_name, g in sorted(pgs.items())
            if pg_name not in keep.pgs and g.metadata.deletion_timestamp is None
        ),
        composite_deletes=tuple(
            stale_composites(cqs, groups, (), keep.cpgs, version=s.composite_version)
        ),
        linked=frozenset(
            a for g in groups if (a := g.metadata.annotations.get(labels.ANNOTATION_WORKLOAD, ""))
        ),
        names=keep.names,
        moves=keep.moves,
        outside=frozenset(outside),
    )


def _kept(
    s: _Setting, gang: int, cliques: Sequence[Clique], below: bool, scale: tuple[int, ...]
) -> _Keep:
    """The names a gang's live Cliques take and the PodGroups they name, with those of the
    instances a scale adds (made with their Cliques); a new gang's whole tree."""
    of, name = s.of, s.cqs.metadata.name
    keep = _Keep()
    have = _gangs(cliques).get(gang)
    if not below and have is None:
        return keep
    wants = dict(zip((g.name for g in of.groups), scale, strict=False))
    counts = {
        g.name: max(g.instances, have.top.get(g.name, 0) if have else 0, wants.get(g.name, 0))
        for g in of.groups
    }
    keep.tree = {m.name: m for m in of.tree(name, gang, counts)}
    wanted = wanted_names(name, gang, of)
    if below:
        keep.moves = wanted
    if have is not None and have.named:
        keep.names = names = _gang_names(name, gang, have, wanted)
        for part, pg in have.named.items():
            keep.pgs.setdefault(pg, (part, keep.tree.get(pg)))
        if below:
            added = [
                (group, inst)
                for group, n in wants.items()
                for inst in range(n)
                if (group, inst) not in have.named
            ]
            for part in added:
                pg = names.of(*part)
                if pg:
                    keep.pgs.setdefault(pg, (part, keep.tree.get(pg)))
        return keep
    keep.names = dataclasses.replace(wanted, named=have.named if have else {})
    if have is None and below:
        for m in keep.tree.values():  # a new gang: its whole tree
            if m.kind == composite_groups.KIND_COMPOSITE:
                keep.cpgs.setdefault(m.name, m)
            else:
                keep.pgs.setdefault(m.name, ((m.group, m.instance), m))
    return keep


def _ancestors(
    s: _Setting,
    gang: int,
    keep: _Keep,
    pgs: Mapping[str, PodGroup],
    cpgs: Mapping[str, CompositePodGroup],
) -> None:
    """Each kept PodGroup's ancestors into `keep.cpgs`, from the tree it is in or from the
    cache; a missing instance's PodGroup is made from a sibling (`keep.made_from`)."""
    siblings: dict[tuple[str, str], PodGroup] = {}
    for pg_name, g in sorted(pgs.items()):
        tags = g.metadata.labels
        if labels.LABEL_GROUP_INDEX in tags:
            group = tags.get(labels.LABEL_SCALING_GROUP, "")
            siblings.setdefault((group, pg_name.rsplit("-", 1)[-1]), g)
    name = s.cqs.metadata.name
    for pg_name, (part, member) in keep.pgs.items():
        if member is not None:
            parent = member.parent
        elif pg_name in pgs:
            parent = pgs[pg_name].spec.parent_composite_pod_group_name
        else:
            group, inst = part
            fixed = instance_hash(name, gang, group, inst, pg_name) if inst is not None else ""
            sibling = siblings.get((group, fixed)) if fixed else None
            if sibling is None:
                continue  # nothing to make it from (its pods wait for it)
            keep.made_from[pg_name] = sibling
            parent = sibling.spec.parent_composite_pod_group_name
        while parent and parent not in keep.cpgs:
            composite = keep.tree.get(parent)
            keep.cpgs[parent] = composite
            if composite is not None:
                parent = composite.parent
            else:
                above = cpgs.get(parent)
                parent = above.spec.parent_composite_pod_group_name if above is not None else ""


def _group_body(
    s: _Setting,
    gang: int,
    pg_name: str,
    part: Part,
    member: Member | None,
    sibling: PodGroup | None,
) -> dict[str, Any] | None:
    """A missing PodGroup's body: from its tree member, else made like `sibling`; None
    with neither."""
    if member is not None:
        return composite_groups.pod_group_body(
            s.cqs, gang, member, s.workload, s.of.shape, bucket=s.bucket
        )
    if sibling is None:
        return None
    need = _count(sibling, None, s.of, s.whole)
    return composite_groups.sibling_body(s.cqs, gang, sibling, pg_name, part, need, s.bucket)
