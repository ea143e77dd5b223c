"""How many Cliques and pods one gang of a CliqueSet is made of, counted as the operator
makes them: as CEL expressions for the CRD's rules (`cliqueset`), and in Python for the
operator's own check of a set the API server stored before those rules
(`controllers.base.bounds`). Both count the same way (docs/operator.md#limits):

- A clique outside the scaling groups is one Clique per gang, of `replicas` pods, or of
  `autoscaling.maxReplicas` where that is higher: its HPA may scale it there.
- A scaling group has `replicas` instances per gang, or `autoscaling.maxReplicas` where
  that is higher. Each of its cliques is one Clique per instance, of `replicas` pods.
- A gang's Cliques and pods are the sums of those; a set's, `spec.replicas` times a gang's.

The Python counts follow `controllers.features.scaling.layout` where the CRD refuses a
template (a clique named by two groups belongs to the first, an unknown name is left out,
a clique of a group is never autoscaled); the CEL counts are never lower than they, so
what the API server admits the operator plans.

This module imports only the API types of the cliques and scaling groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cliques.api.cliquetemplate import CliqueTemplate
from cliques.api.scalinggroup import ScalingGroup


def _at_least_max(count: str, auto: str) -> str:
    """CEL: `count`, or the `maxReplicas` of the autoscaling at `auto` where that is higher."""
    return f"(has({auto}) && {auto}.maxReplicas > {count} ? {auto}.maxReplicas : {count})"


def cel_instances(group: str) -> str:
    """CEL: the instances per gang of the scaling group `group` (a CEL variable)."""
    replicas = f"(has({group}.replicas) ? {group}.replicas : 1)"
    return _at_least_max(replicas, f"{group}.autoscaling")


def cel_pods(clique: str) -> str:
    """CEL: the pods of one Clique of the clique template `clique` (a CEL variable)."""
    replicas = f"(has({clique}.replicas) ? {clique}.replicas : 1)"
    return _at_least_max(replicas, f"{clique}.autoscaling")


def cel_gang_cliques(template: str) -> str:
    """CEL: the Cliques of one gang of the gang template at `template` (`self`,
    `self.template`): a clique once, and once more per instance of its group past the first."""
    groups = f"{template}.scalingGroups"
    return (
        f"(size({template}.cliques) + (has({groups}) ? {groups}.map(g, "
        f"({cel_instances('g')} - 1) * size(g.cliques)).sum() : 0))"
    )


def cel_gang_pods(template: str) -> str:
    """CEL: the pods of one gang of the gang template at `template`: each clique's pods
    times the instances of its group (1 outside the groups)."""
    groups = f"{template}.scalingGroups"
    return (
        f"{template}.cliques.map(c, {cel_pods('c')} * "
        f"(has({groups}) && {groups}.exists(g, c.name in g.cliques) ? "
        f"{groups}.filter(g, c.name in g.cliques).map(g, {cel_instances('g')}).sum() "
        ": 1)).sum()"
    )


def instances(group: ScalingGroup) -> int:
    """The instances per gang of `group`: its replicas, or its autoscaling maxReplicas
    where that is higher."""
    auto = group.autoscaling
    return max(group.replicas, auto.max_replicas if auto is not None else 0)


def pods(clique: CliqueTemplate, grouped: bool = False) -> int:
    """The pods of one Clique of `clique`: its replicas, or (outside a scaling group, where
    the operator keeps an HPA) its autoscaling maxReplicas where that is higher."""
    auto = clique.autoscaling
    return max(clique.replicas, auto.max_replicas if auto is not None and not grouped else 0)


def group_of(cliques: Sequence[CliqueTemplate], groups: Sequence[ScalingGroup]) -> dict[str, str]:
    """Clique name -> the name of its scaling group (the first that names it), for the
    cliques of a group."""
    known = {c.name for c in cliques}
    out: dict[str, str] = {}
    for group in groups:
        for name in group.cliques:
            if name in known:
                out.setdefault(name, group.name)
    return out


def multiplicity(
    cliques: Sequence[CliqueTemplate],
    groups: Sequence[ScalingGroup],
    counts: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """Clique name -> its Cliques per gang: 1 outside the groups, the instances of its
    group inside one (`counts` by group name where given, else `instances`)."""
    per_group = {g.name: instances(g) for g in groups}
    if counts is not None:
        per_group.update(counts)
    grouped = group_of(cliques, groups)
    return {c.name: per_group[grouped[c.name]] if c.name in grouped else 1 for c in cliques}


def gang_cliques(
    cliques: Sequence[CliqueTemplate],
    groups: Sequence[ScalingGroup],
    counts: Mapping[str, int] | None = None,
) -> int:
    """The Cliques of one gang (with `counts` instances of its groups, where given)."""
    return sum(multiplicity(cliques, groups, counts).values())


def gang_pods(
    cliques: Sequence[CliqueTemplate],
    groups: Sequence[ScalingGroup],
    counts: Mapping[str, int] | None = None,
) -> int:
    """The pods of one gang (with `counts` instances of its groups, where given)."""
    grouped = group_of(cliques, groups)
    times = multiplicity(cliques, groups, counts)
    return sum(pods(c, c.name in grouped) * times[c.name] for c in cliques)
