"""What the composite trees of a CliqueSet's gangs are made of (pure), for `gang_trees`.

- `Parts`: a set's scaling groups (each group's `minAvailable` instances and the pods one
  instance needs) and the pods its cliques outside the groups need; `Parts.tree`, a gang's
  tree for given instance counts (`composite_groups.members`, remembered: `TREE_MEMO`).
- `Names`: the PodGroup each part of one gang (`Part`: a scaling group's instance, or the
  cliques outside the groups) names; `wanted_names` those of the tree the set asks for now.
- `part_of` (the part a Clique belongs to) and `instance_hash` (the hash in an instance's
  PodGroup name).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.controllers.features import composite_groups, podgroups, scaling
from cliques.controllers.features.composite_groups import GroupNeed, Member

#: A part of a gang: (scaling group, instance), ("", None) for the cliques outside the groups.
Part = tuple[str, int | None]


@dataclass(frozen=True)
class Parts:
    """What a set's gangs are made of, as their trees need it."""

    #: its scaling groups, `instances` the template's count
    groups: tuple[GroupNeed, ...]
    #: it has cliques outside the groups, and the pods they need
    others: bool
    other_pods: int
    shape: podgroups.Shape

    @property
    def rooted(self) -> bool:
        """Every part is in the gang's tree (none is needed by nothing)."""
        return all(g.min_available > 0 for g in self.groups) and (
            not self.others or self.other_pods > 0
        )

    def tree(self, cliqueset: str, gang: int, counts: Mapping[str, int]) -> list[Member]:
        """The objects of gang `gang`'s tree with `counts` instances of each group."""
        wanted = tuple(counts.get(g.name, 0) for g in self.groups)
        return list(_tree(self, cliqueset, gang, wanted))

    def templates(self) -> dict[str, Any] | None:
        """The Workload's `spec` templates, or None when no part is needed (no composite)."""
        if not any(g.min_available > 0 for g in self.groups) and not (
            self.others and self.other_pods > 0
        ):
            return None
        return composite_groups.workload_templates(
            self.groups, self.shape, others=self.others, other_pods=self.other_pods
        )


#: Gang trees remembered (`_tree`): every plan asks again for every gang's.
TREE_MEMO = 1 << 14


@functools.lru_cache(maxsize=TREE_MEMO)
def _tree(of: Parts, cliqueset: str, gang: int, counts: tuple[int, ...]) -> tuple[Member, ...]:
    """`Parts.tree`, remembered: a pure function of its (hashable, frozen) arguments, and
    building it (a dataclass per object, the hashes in its names) for every gang on every
    plan was most of a 1,000-gang set's plan."""
    groups = [dataclasses.replace(g, instances=n) for g, n in zip(of.groups, counts, strict=True)]
    return tuple(
        composite_groups.members(
            cliqueset, gang, groups, of.shape, others=of.others, other_pods=of.other_pods
        )
    )


def parts(cqs: CliqueSet, features: frozenset[str] = frozenset()) -> Parts:
    """The `Parts` of `cqs`'s gangs: each group's `minAvailable` instances (its
    composite's `minGroupCount`) and the pods one instance needs (the sum of its cliques'
    effective `minAvailable`), the pods the cliques outside the groups need."""
    lay = scaling.layout(cqs.spec)
    need = {c.name: c.effective_min_available for c in cqs.spec.template.cliques}
    groups = tuple(
        GroupNeed(g.name, g.min_available, sum(need[r] for r in g.roles), g.replicas)
        for g in lay.groups
    )
    outside = [r for r in lay.roles if r not in lay.group_of]
    return Parts(
        groups,
        bool(outside),
        sum(need[r] for r in outside),
        podgroups.shape(cqs, features),
    )


@dataclass(frozen=True)
class Names:
    """The PodGroup each part of one gang names (`of`)."""

    cliqueset: str
    gang: int
    #: the PodGroup of the cliques outside the groups ("" for none)
    others: str = ""
    #: scaling group -> the hash in the names of its instances' PodGroups
    instances: Mapping[str, str] = field(default_factory=dict)
    #: part -> the PodGroup a live Clique of that part names (looked at first)
    named: Mapping[Part, str] = field(default_factory=dict)
    #: a PodGroup the gang names, for a part its tree has no place for
    fallback: str = ""

    def of(self, group: str = "", instance: int | None = None) -> str:
        """The PodGroup of instance `instance` of scaling group `group`, or with no group
        that of the cliques outside the groups."""
        found = self.named.get((group, instance))
        if found:
            return found
        if group and instance is not None:
            fixed = self.instances.get(group)
            if fixed:
                return composite_groups.instance_name(
                    self.cliqueset, self.gang, group, instance, fixed
                )
        elif self.others:
            return self.others
        return self.fallback


def wanted_names(cliqueset: str, gang: int, of: Parts) -> Names:
    """The `Names` of the tree the set asks for now."""
    tree = of.tree(cliqueset, gang, {g.name: 1 for g in of.groups})
    return Names(
        cliqueset,
        gang,
        others=composite_groups.pod_group_of(tree),
        instances={
            m.group: m.fixed
            for m in tree
            if m.kind == composite_groups.KIND_POD_GROUP and m.instance == 0
        },
    )


def part_of(clique: Clique) -> Part:
    """The part of its gang a Clique belongs to."""
    inst = scaling.instance_of(clique)
    group = clique.metadata.labels.get(labels.LABEL_SCALING_GROUP, "")
    return (group, inst) if group and inst is not None else ("", None)


def instance_hash(cliqueset: str, gang: int, group: str, instance: int, name: str) -> str:
    """The hash in `name` if it is the name of a PodGroup of instance `instance` of
    `group` in a tree (`composite_groups.instance_name`), else ""."""
    fixed = name.rsplit("-", 1)[-1]
    if name == composite_groups.instance_name(cliqueset, gang, group, instance, fixed):
        return fixed
    return ""
