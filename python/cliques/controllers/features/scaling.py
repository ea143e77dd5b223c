"""Scaling groups inside a CliqueSet's gangs (pure): which Cliques a gang has, and the
CliqueScalingGroups that say how many instances of each group it has (docs/scaling.md).

- **Members.** A gang's Cliques are its members: one per clique template outside any
  scaling group (`<set>-<gang>-<clique>`), and one per instance of each group for each of
  the group's cliques (`<set>-<gang>-<clique>-<instance>`). A member's name in its gang is
  `labels.member_name`; its Clique and pods carry the group and the instance as labels.
- **Instance counts.** Each gang's count of a group is its CliqueScalingGroup's
  `spec.replicas`, the scale target of `kubectl scale` and of an HPA (`instance_counts`).
  Without that object in the cache (not made yet, or deleted by hand) the count is what
  the gang has, else the template's: a missing object never removes an instance.
- **The template's `replicas`** is the count a new gang starts with. A changed template
  value is applied to every gang's object once (the value applied last is recorded on the
  object, `ANNOTATION_TEMPLATE_REPLICAS`), so a `kubectl scale` stands until the template
  changes; with `autoscaling` it is the initial value only, and the HPA's choice stands.
- **Start order** (`starts_after`) between members: a clique of an instance starts after
  the cliques of its own instance that its template names, and after the gang's other
  cliques; a clique starts after a grouped clique of another group (or of none) through
  the instances the gang needs, `0 .. minAvailable - 1`.
- **Availability** of an instance: every member of it Ready; of a gang: every clique outside
  the groups, and at least `minAvailable` instances of each group (`cliqueset_rollout`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet, CliqueSetSpec
from cliques.api.hpa import HorizontalPodAutoscaler
from cliques.api.scalinggroup import CliqueScalingGroup
from cliques.kube import store
from cliques.kube.informer import Informer
from cliques.kube.resources import HPAS, SCALING_GROUPS
from cliques.kube.watches import Watch

#: On a CliqueScalingGroup: the template `replicas` last applied to it.
ANNOTATION_TEMPLATE_REPLICAS: Final = labels.ANNOTATION_TEMPLATE_REPLICAS


#: What scaling groups and autoscaling watch: the CliqueScalingGroups and the
#: HorizontalPodAutoscalers the CliqueSets own.
WATCHES: Final[tuple[Watch, ...]] = (
    Watch("scaling_groups", CliqueScalingGroup, SCALING_GROUPS, indexers=store.BY_CONTROLLER),
    Watch("hpas", HorizontalPodAutoscaler, HPAS, indexers=store.BY_CONTROLLER),
)


@dataclass(frozen=True)
class View:
    """What the CliqueSet planner reads for scaling: the CliqueScalingGroups and the
    HorizontalPodAutoscalers (`autoscaling`) the set owns."""

    groups: list[CliqueScalingGroup] = field(default_factory=list)
    hpas: list[HorizontalPodAutoscaler] = field(default_factory=list)


@dataclass(frozen=True)
class Informers:
    """The informers of `WATCHES`."""

    groups: Informer[CliqueScalingGroup] | None = None
    hpas: Informer[HorizontalPodAutoscaler] | None = None

    @classmethod
    def of(cls, informers: Mapping[str, Any]) -> Informers:
        """From the informers by watch name."""
        return cls(*(informers.get(w.name) for w in WATCHES))

    def owned(self) -> tuple[Informer[Any], ...]:
        """The informers of objects a CliqueSet owns (a change wakes it)."""
        return tuple(i for i in (self.groups, self.hpas) if i is not None)

    def view(self, owner: str) -> View:
        """What the planner reads of the objects of owner `owner`."""
        return View(
            groups=self.groups.store.by_index("controller", owner) if self.groups else [],
            hpas=self.hpas.store.by_index("controller", owner) if self.hpas else [],
        )


@dataclass(frozen=True, slots=True)
class Group:
    """One scaling group of a gang template."""

    name: str
    roles: tuple[str, ...]
    replicas: int
    min_available: int
    autoscaled: bool = False


@dataclass(frozen=True, slots=True)
class Layout:
    """The scaling groups of a CliqueSet's template, and which role is in which."""

    groups: tuple[Group, ...] = ()
    #: role -> its group's name, for the roles in a group
    group_of: Mapping[str, str] = field(default_factory=dict)
    #: roles outside any group whose Clique's replicas an HPA sets (`autoscaling`)
    autoscaled: frozenset[str] = frozenset()
    #: every role, in template order
    roles: tuple[str, ...] = ()

    def group(self, name: str) -> Group | None:
        for g in self.groups:
            if g.name == name:
                return g
        return None


def layout(spec: CliqueSetSpec) -> Layout:
    """The `Layout` of a CliqueSet spec. A role named by two groups (refused by the CRD)
    belongs to the first."""
    group_of: dict[str, str] = {}
    groups: list[Group] = []
    known = {c.name for c in spec.template.cliques}
    order = {c.name: i for i, c in enumerate(spec.template.cliques)}
    for g in spec.template.scaling_groups:
        # in template order (the group's list is a set): the first one leads an instance
        listed = sorted({r for r in g.cliques if r in known}, key=order.__getitem__)
        roles = tuple(r for r in listed if r not in group_of)
        for role in roles:
            group_of[role] = g.name
        groups.append(
            Group(
                name=g.name,
                roles=roles,
                replicas=g.replicas,
                min_available=min(g.min_available, g.replicas),
                autoscaled=g.autoscaling is not None,
            )
        )
    autoscaled = frozenset(
        c.name
        for c in spec.template.cliques
        if c.autoscaling is not None and c.name not in group_of
    )
    return Layout(
        groups=tuple(groups),
        group_of=group_of,
        autoscaled=autoscaled,
        roles=tuple(c.name for c in spec.template.cliques),
    )


def instance_of(clique: Clique) -> int | None:
    """The instance index of a Clique of a scaling group, None for any other Clique."""
    value = clique.metadata.labels.get(labels.LABEL_GROUP_INDEX)
    if value is None or not value.isdigit():
        return None
    return int(value)


def member_of(clique: Clique) -> str:
    """A Clique's member name in its gang (`labels.member_name`)."""
    value = clique.metadata.labels.get(labels.LABEL_GROUP_INDEX)
    if value is None or not value.isdigit():  # (most Cliques: outside any group)
        return clique.spec.clique_name
    return f"{clique.spec.clique_name}-{int(value)}"


def existing_instances(group: Group, members: Iterable[Clique]) -> int:
    """One more than the highest instance of `group` among `members` that are not being
    deleted (0 if none)."""
    top = -1
    for c in members:
        inst = instance_of(c)
        if (
            inst is not None
            and c.metadata.deletion_timestamp is None
            and c.metadata.labels.get(labels.LABEL_SCALING_GROUP) == group.name
        ):
            top = max(top, inst)
    return top + 1


def instance_counts(
    lay: Layout,
    objects: Mapping[str, CliqueScalingGroup],
    members: Iterable[Clique],
) -> dict[str, int]:
    """Group name -> how many instances one gang has: its CliqueScalingGroup's
    `spec.replicas` (`objects`: the gang's, by group name), or without one (or one being
    deleted), the instances the gang has, or the template's `replicas` if it has none."""
    out: dict[str, int] = {}
    cliques = list(members)
    for g in lay.groups:
        obj = objects.get(g.name)
        if obj is not None and obj.metadata.deletion_timestamp is None:
            out[g.name] = max(0, obj.spec.replicas)
        else:
            out[g.name] = existing_instances(g, cliques) or g.replicas
    return out


@dataclass(frozen=True, slots=True)
class Member:
    """One Clique a gang should have."""

    name: str
    role: str
    group: str = ""
    instance: int | None = None


def wanted_members(lay: Layout, counts: Mapping[str, int]) -> dict[str, Member]:
    """Member name -> `Member`, in template order (a grouped role once per instance)."""
    out: dict[str, Member] = {}
    for role in lay.roles:
        group = lay.group_of.get(role)
        if group is None:
            out[role] = Member(role, role)
            continue
        for inst in range(counts.get(group, 0)):
            name = labels.member_name(role, inst)
            out[name] = Member(name, role, group, inst)
    return out


def dependencies(
    lay: Layout,
    deps: Mapping[str, list[str]],
    cliqueset: str,
    gang: int,
    role: str,
    instance: int | None,
) -> list[str]:
    """The Clique names the member (`role`, `instance`) of gang `gang` starts after, from
    the roles `deps[role]` names (`startup.dependencies`)."""
    own_group = lay.group_of.get(role)
    out: list[str] = []
    for dep in deps.get(role, ()):
        dep_group = lay.group_of.get(dep)
        if dep_group is None:
            out.append(labels.clique_name(cliqueset, gang, dep))
        elif dep_group == own_group and instance is not None:
            out.append(labels.clique_name(cliqueset, gang, labels.member_name(dep, instance)))
        else:
            found = lay.group(dep_group)
            needed = found.min_available if found is not None else 0
            for inst in range(needed):
                out.append(labels.clique_name(cliqueset, gang, labels.member_name(dep, inst)))
    return out


def lead_member(lay: Layout) -> str:
    """The member whose Clique speaks for the gang (it records the gang's epoch): the first
    clique outside the groups, else instance 0 of the first clique."""
    for role in lay.roles:
        if role not in lay.group_of:
            return role
    return labels.member_name(lay.roles[0], 0) if lay.roles else ""


def leader_role(lay: Layout) -> tuple[str, bool]:
    """The role whose pod 0 leads the gang (`CLIQUES_LEADER_ADDRESS` outside the groups),
    and whether it is in a group (its instance 0's then)."""
    for role in lay.roles:
        if role not in lay.group_of:
            return role, False
    return (lay.roles[0], True) if lay.roles else ("", False)


def instance_leader(lay: Layout, group: str) -> str:
    """The role whose pod 0 leads each instance of `group`: its first clique."""
    found = lay.group(group)
    return found.roles[0] if found is not None and found.roles else ""


def member_labels(member: Member) -> dict[str, str]:
    """The labels that place a member's Clique (and pods) in its group's instance."""
    if member.instance is None:
        return {}
    return {
        labels.LABEL_SCALING_GROUP: member.group,
        labels.LABEL_GROUP_INDEX: str(member.instance),
    }


def selector(cliqueset: str, gang: int, group: str) -> str:
    """The label selector of the pods of `group` in gang `gang` (serialized)."""
    return (
        f"{labels.LABEL_CLIQUESET}={cliqueset},{labels.LABEL_GANG_INDEX}={gang},"
        f"{labels.LABEL_SCALING_GROUP}={group}"
    )


def object_body(
    cqs: CliqueSet, gang: int, group: Group, replicas: int, bucket: str, owner: dict[str, Any]
) -> dict[str, Any]:
    """The CliqueScalingGroup of `group` in gang `gang`, made with `replicas` instances."""
    name = cqs.metadata.name
    return {
        "apiVersion": labels.API_VERSION,
        "kind": labels.KIND_SCALING_GROUP,
        "metadata": {
            "name": labels.scaling_group_name(name, gang, group.name),
            "namespace": cqs.metadata.namespace,
            "labels": {
                labels.LABEL_CLIQUESET: name,
                labels.LABEL_GANG_INDEX: str(gang),
                labels.LABEL_BUCKET: bucket,
                labels.LABEL_SCALING_GROUP: group.name,
            },
            "annotations": {ANNOTATION_TEMPLATE_REPLICAS: str(group.replicas)},
            "ownerReferences": [owner],
        },
        "spec": {
            "groupName": group.name,
            "gangIndex": gang,
            "replicas": replicas,
            "minAvailable": min(group.min_available, replicas),
        },
    }


def spec_patch(obj: CliqueScalingGroup, group: Group) -> dict[str, Any] | None:
    """The merge patch that brings a gang's CliqueScalingGroup to the template, or None:
    a changed template `replicas` is applied once (not under autoscaling), a changed
    `minAvailable` always (kept at most the replicas)."""
    spec: dict[str, Any] = {}
    annotations: dict[str, str] = {}
    applied = obj.metadata.annotations.get(ANNOTATION_TEMPLATE_REPLICAS)
    replicas = obj.spec.replicas
    if not group.autoscaled and applied != str(group.replicas):
        replicas = group.replicas
        if obj.spec.replicas != replicas:
            spec["replicas"] = replicas
        annotations[ANNOTATION_TEMPLATE_REPLICAS] = str(group.replicas)
    min_available = min(group.min_available, replicas)
    if obj.spec.min_available != min_available:
        spec["minAvailable"] = min_available
    if not spec and not annotations:
        return None
    meta: dict[str, Any] = {"resourceVersion": obj.metadata.resource_version}
    if annotations:
        meta["annotations"] = annotations
    body: dict[str, Any] = {"metadata": meta}
    if spec:
        body["spec"] = spec
    return body


def object_status(
    cliqueset: str, gang: int, group: str, stats: tuple[int, int, int], generation: int
) -> dict[str, Any]:
    """The status of the gang's CliqueScalingGroup of `group`, as JSON; `stats`: its
    instances made, Ready and on the current templates (`cliqueset_rollout.GangFacts`)."""
    made, ready, updated = stats
    return {
        "observedGeneration": generation,
        "replicas": made,
        "readyReplicas": ready,
        "updatedReplicas": updated,
        "selector": selector(cliqueset, gang, group),
    }


def _status_of(obj: CliqueScalingGroup) -> dict[str, Any]:
    st = obj.status
    if st is None:
        return {}
    return {
        "observedGeneration": st.observed_generation,
        "replicas": st.replicas,
        "readyReplicas": st.ready_replicas,
        "updatedReplicas": st.updated_replicas,
        "selector": st.selector,
    }


@dataclass
class ObjectPlan:
    """The writes that keep a CliqueSet's CliqueScalingGroups matching its gangs: bodies
    to create, (name, merge patch) of specs and of statuses, (name, uid) to delete."""

    creates: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    patches: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    statuses: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    deletes: list[tuple[str, str]] = field(default_factory=list)


def plan_objects(
    cqs: CliqueSet,
    lay: Layout,
    objects: Iterable[CliqueScalingGroup],
    counts: Mapping[int, Mapping[str, int]],
    instances: Mapping[int, Mapping[str, tuple[int, int, int]]],
    bucket: str,
    owner: dict[str, Any],
) -> ObjectPlan:
    """One CliqueScalingGroup per gang below `replicas` and group: made where missing
    (with the gang's instance count), brought to the template (`spec_patch`), its status
    kept (`instances`: gang -> group -> its instances made, Ready and current); the others
    (a gang or a group removed) deleted."""
    out = ObjectPlan()
    name = cqs.metadata.name
    have: dict[str, CliqueScalingGroup] = {o.metadata.name: o for o in objects}
    wanted: set[str] = set()
    for group in lay.groups if cqs.spec.replicas else ():
        # the longest name is valid, so every one is (`labels` checks it)
        labels.scaling_group_name(name, cqs.spec.replicas - 1, group.name)
    for gang in range(cqs.spec.replicas) if lay.groups else ():
        for group in lay.groups:
            obj_name = f"{name}-{gang}-{group.name}"
            wanted.add(obj_name)
            count = counts.get(gang, {}).get(group.name, group.replicas)
            obj = have.get(obj_name)
            if obj is None:
                out.creates.append((obj_name, object_body(cqs, gang, group, count, bucket, owner)))
                continue
            if obj.metadata.deletion_timestamp is not None:
                continue
            patch = spec_patch(obj, group)
            if patch is not None:
                out.patches.append((obj_name, patch))
            stats = instances.get(gang, {}).get(group.name, (0, 0, 0))
            status = object_status(name, gang, group.name, stats, obj.metadata.generation)
            if status != _status_of(obj):
                out.statuses.append((obj_name, {"status": status}))
    for obj_name, obj in sorted(have.items()):
        if obj_name not in wanted and obj.metadata.deletion_timestamp is None:
            out.deletes.append((obj_name, obj.metadata.uid))
    return out
