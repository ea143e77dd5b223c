"""The scheduling groups of a gang with scaling groups, as CompositePodGroups (pure).

Kubernetes 1.37 (alpha gate `CompositePodGroup`) serves `scheduling.k8s.io/v1alpha3`
CompositePodGroups, 1.38 (beta) `v1beta1` ones with the same fields (which version to
write in is discovery's: `gangapi.GangAPI.composite_version`, the bodies' `version`): a
group whose children are PodGroups (or other composites, 4 levels at most) that name it
in `spec.parentCompositePodGroupName`. The scheduler places the whole tree at once, and a
composite's gang policy is met when `minGroupCount` of its children are (a PodGroup
child: its own `minCount` pods). Pods still name their PodGroup
(`spec.schedulingGroup.podGroupName`), the leaf. Where the API server serves them
(`gangapi.GangAPI.composite`) and a set has scaling groups, each gang is such a tree
(`members`; which objects a set makes and deletes, and which one each Clique names, is
planned by `gang_trees`); elsewhere it stays one PodGroup with every pod it needs
(`podgroups`).

- **Flat**, the common case: a gang that is one scaling group and nothing else is one
  CompositePodGroup, `minGroupCount` = the group's `minAvailable`, with one PodGroup per
  instance of the group, `minCount` = the pods one instance needs. Any `minAvailable`
  instances of the gang's may be the ones placed; one placed later (a scale up, one
  beyond `minAvailable`) is still placed whole: each PodGroup keeps its own `minCount`.
- **Nested** otherwise (cliques outside the groups, or several groups): the gang's
  composite has, as children, one PodGroup for the cliques outside the groups (`minCount`
  = the pods they need) and one composite per scaling group (`minGroupCount` = its
  `minAvailable`) whose children are the instances' PodGroups; the gang's
  `minGroupCount` is the number of those children: all of them are needed.
- **A part the gang needs none of** (a scaling group with `minAvailable` 0, cliques
  outside the groups needing no pod) is not in the gang's tree, since the scheduler
  counts every child that is met: its PodGroups (each instance's, or the one of the
  cliques outside the groups) have no parent and no Workload template, and are scheduled
  apart from the gang, each instance still whole.
- **Every object names a Workload template** (a composite must; a PodGroup with a parent
  must): the set's Workload then has `compositePodGroupTemplates`, never
  `podGroupTemplates` (the API takes exactly one of them), shaped as the tree
  (`workload_templates`; names `TEMPLATE_GANG`, `TEMPLATE_OTHERS`, `group-<group>`,
  `instance-<group>`, unique in the Workload). Nothing checks that a template exists.
- **What may change.** A composite's whole spec is immutable (`minGroupCount` too), and so
  is a PodGroup's parent; a PodGroup's `minCount` may change (v1beta1). Each object is
  therefore named with a hash of what cannot change (`*_fixed_hash`; its parent's name
  is part of it): a new `minAvailable` or gang shape is a new tree, which a gang moves to
  only when all its pods are made again, as `podgroups` does. Instances come and go with
  the group's count (a PodGroup each); a change of the pods one instance needs patches
  their `minCount`.
- **Lifetimes.** A PodGroup is kept while a pod names it (`podgroup-protection`); a
  CompositePodGroup has no such finalizer and is deleted at once, after which a pod of
  one of its children stays Pending until it is made again. Delete a composite only once
  no child names it; make it before its children (a child made first waits for it).
- **Not carried over** from the one-PodGroup gang: DRA claims shared by the gang (a
  composite has no `resourceClaims`; the scheduler's DRA does not handle composites in
  1.37): a set whose gangs share claims keeps one PodGroup per gang (`wanted`). The
  topology constraint (`placement.pack` Required) goes on the gang's composite, which
  packs the whole tree; the priority class and disruption mode go on every object.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from cliques.api import labels
from cliques.api.cliqueset import CliqueSet
from cliques.api.podgroup import PodGroup
from cliques.controllers.base import builders
from cliques.controllers.features import workload
from cliques.controllers.features.gang_apis import GangAPIVersion, V1Beta1
from cliques.controllers.features.podgroups import NAME_HASH, Shape, scheduling_policy
from cliques.kube import gangapi

KIND_COMPOSITE: Final = "CompositePodGroup"
KIND_POD_GROUP: Final = "PodGroup"
#: The version composites are written in when none is given (1.37's v1alpha3; 1.38 serves
#: v1beta1: `gangapi.GangAPI.composite_version`), and the PodGroups' (`.version`).
COMPOSITE_VERSION: Final = gangapi.COMPOSITE_VERSION
POD_GROUP_VERSION: Final = V1Beta1.version
#: Workload template names: the gang's composite, and the PodGroup of the cliques outside
#: the scaling groups (nested layout). A group's are `group_template`, `instance_template`.
TEMPLATE_GANG: Final = "gang"
TEMPLATE_OTHERS: Final = "cliques"
HASH_LENGTH: Final = 10

Kind = Literal["CompositePodGroup", "PodGroup"]


@dataclass(frozen=True)
class GroupNeed:
    """One scaling group of a gang, as its scheduling groups need it."""

    #: the scaling group's name in the set's template
    name: str
    #: instances the gang needs (the group's composite's `minGroupCount`; 0: none)
    min_available: int
    #: pods one instance needs: the sum of its cliques' effective `minAvailable` (each
    #: instance PodGroup's `minCount`)
    instance_pods: int
    #: instances this gang has (its CliqueScalingGroup's `spec.replicas`); the Workload's
    #: templates do not depend on it
    instances: int = 0


@dataclass(frozen=True)
class Member:
    """One object of a gang's tree (`members`)."""

    kind: Kind
    name: str
    #: `minGroupCount` of a composite, `minCount` of a PodGroup; 0: the basic policy
    count: int
    #: the Workload template it links to ("" for a part the gang does not need: none)
    template: str
    #: the composite it is a child of ("" for the gang's, or a part of its own)
    parent: str = ""
    #: the scaling group it belongs to ("" for the gang's composite and the cliques
    #: outside the groups; a flat gang's composite is its one group's)
    group: str = ""
    #: the instance of `group` a PodGroup is for (None for the others)
    instance: int | None = None
    #: the hash of its immutable fields, in its name and annotation
    fixed: str = ""


def group_template(group: str) -> str:
    """The Workload template of scaling group `group`'s composite (nested layout)."""
    return f"group-{group}"


def instance_template(group: str) -> str:
    """The Workload template of the PodGroup of each instance of scaling group `group`."""
    return f"instance-{group}"


def wanted(features: frozenset[str], scaling_groups: int, shared_claims: bool = False) -> bool:
    """Whether a set's gangs are composite trees: the server serves CompositePodGroups
    (`gangapi.COMPOSITE` in `features`), the set has scaling groups, and its gangs share no
    DRA claims (Gang scope, `claims.group_claims`), which only a PodGroup can hold."""
    return gangapi.COMPOSITE in features and scaling_groups > 0 and not shared_claims


def is_flat(groups: Sequence[GroupNeed], others: bool) -> bool:
    """Whether the gang's composite is its one scaling group's (`others`: the gang has
    cliques outside the scaling groups)."""
    return len(groups) == 1 and groups[0].min_available > 0 and not others


def composite_policy(min_group_count: int) -> dict[str, Any]:
    """A composite's policy: gang with `min_group_count` children, or basic for none."""
    if min_group_count > 0:
        return {"gang": {"minGroupCount": min_group_count}}
    return {"basic": {}}


def _hash(fixed: dict[str, Any]) -> str:
    canonical = json.dumps(fixed, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:HASH_LENGTH]


#: The gang API the trees are written in (v1beta1 PodGroups, whose parents they name).
_API: Final = V1Beta1()


def _disruption(shape: Shape) -> Any:
    return _API.disruption_mode(shape.disruption)


#: Distinct fixed hashes remembered: every plan asks again for those of every gang (the
#: parent's name, in the hash, has the gang in it), and a JSON dump and a SHA-256 per gang
#: and plan was most of a 1,000-gang set's plan.
HASH_MEMO = 1 << 16


@functools.lru_cache(maxsize=HASH_MEMO)
def composite_fixed_hash(
    min_group_count: int, shape: Shape, parent: str = "", *, root: bool = True
) -> str:
    """A hash of a composite's spec, all of it immutable: `minGroupCount`, its parent, and
    from `shape` its priority class, disruption mode and (the gang's, `root`) topology."""
    fixed: dict[str, Any] = {
        "kind": KIND_COMPOSITE,
        "policy": composite_policy(min_group_count),
        "parent": parent,
        "priorityClassName": shape.priority_class,
        "disruptionMode": _disruption(shape),
    }
    if root and shape.topology_key:
        fixed["topology"] = shape.topology_key
    return _hash(fixed)


@functools.lru_cache(maxsize=HASH_MEMO)
def pod_group_fixed_hash(needed: int, shape: Shape, parent: str = "") -> str:
    """A hash of what a composite's PodGroup keeps for its life: its parent, its policy's
    kind, priority class and disruption mode (`minCount` may change on v1beta1)."""
    fixed: dict[str, Any] = {
        "kind": KIND_POD_GROUP,
        "policy": "gang" if needed > 0 else "basic",
        "parent": parent,
        "priorityClassName": shape.priority_class,
        "disruptionMode": _disruption(shape),
    }
    return _hash(fixed)


def gang_name(cliqueset: str, gang: int, fixed: str) -> str:
    """`<cliqueset>-<gang>-<hash>`: the gang's composite, or the PodGroup of its cliques
    outside the scaling groups (another resource, another hash)."""
    return f"{cliqueset}-{gang}-{fixed[:NAME_HASH]}"


def group_name(cliqueset: str, gang: int, group: str, fixed: str) -> str:
    """`<cliqueset>-<gang>-<group>-<hash>`: scaling group `group`'s composite (nested)."""
    return f"{cliqueset}-{gang}-{group}-{fixed[:NAME_HASH]}"


def instance_name(cliqueset: str, gang: int, group: str, instance: int, fixed: str) -> str:
    """`<cliqueset>-<gang>-<group>-<instance>-<hash>`: the PodGroup of one instance."""
    if instance < 0:
        raise ValueError(f"instance index must be non-negative, got {instance}")
    return f"{cliqueset}-{gang}-{group}-{instance}-{fixed[:NAME_HASH]}"


def members(
    cliqueset: str,
    gang: int,
    groups: Sequence[GroupNeed],
    shape: Shape,
    *,
    others: bool = False,
    other_pods: int = 0,
) -> list[Member]:
    """Every object of gang `gang` of set `cliqueset`, a parent before its children:
    `groups` its scaling groups (with this gang's instance counts), `others` whether it
    has cliques outside them and `other_pods` the pods those need. The module docstring
    says how the tree is laid out."""
    out: list[Member] = []

    def instances(need: GroupNeed, parent: str) -> None:
        fixed = pod_group_fixed_hash(need.instance_pods, shape, parent)
        for i in range(need.instances):
            out.append(
                Member(
                    kind=KIND_POD_GROUP,
                    name=instance_name(cliqueset, gang, need.name, i, fixed),
                    count=need.instance_pods,
                    template=instance_template(need.name) if parent else "",
                    parent=parent,
                    group=need.name,
                    instance=i,
                    fixed=fixed,
                )
            )

    def composite(count: int, template: str, parent: str = "", group: str = "") -> str:
        fixed = composite_fixed_hash(count, shape, parent, root=not parent)
        if group and parent:
            name = group_name(cliqueset, gang, group, fixed)
        else:
            name = gang_name(cliqueset, gang, fixed)
        out.append(Member(KIND_COMPOSITE, name, count, template, parent, group, fixed=fixed))
        return name

    if is_flat(groups, others):
        need = groups[0]
        instances(need, composite(need.min_available, TEMPLATE_GANG, group=need.name))
        return out

    needed = [g for g in groups if g.min_available > 0]
    with_others = others and other_pods > 0
    children = len(needed) + (1 if with_others else 0)
    root = composite(children, TEMPLATE_GANG) if children else ""
    if others:
        parent = root if with_others else ""
        fixed = pod_group_fixed_hash(other_pods, shape, parent)
        out.append(
            Member(
                kind=KIND_POD_GROUP,
                name=gang_name(cliqueset, gang, fixed),
                count=other_pods,
                template=TEMPLATE_OTHERS if parent else "",
                parent=parent,
                fixed=fixed,
            )
        )
    for need in groups:
        if need.min_available > 0:
            instances(
                need, composite(need.min_available, group_template(need.name), root, need.name)
            )
        else:
            instances(need, "")  # not the gang's: each instance a group of its own
    return out


def pod_group_of(tree: Sequence[Member], group: str = "", instance: int | None = None) -> str:
    """The PodGroup a pod of the gang names (`spec.schedulingGroup.podGroupName`): that of
    `instance` of scaling group `group`, or with no group that of the cliques outside the
    groups; "" when `tree` has none."""
    for m in tree:
        if m.kind == KIND_POD_GROUP and m.group == group and m.instance == instance:
            return m.name
    return ""


def _workload_ref(workload_name: str, template: str) -> dict[str, Any]:
    if not template:
        return {}
    if not workload_name:
        raise ValueError("a group in a composite tree must name a Workload template")
    return {"workloadRef": {"workloadName": workload_name, "templateName": template}}


def _metadata(
    cqs: CliqueSet, gang: int, member: Member, workload_name: str, bucket: str
) -> dict[str, Any]:
    meta = cqs.metadata
    if not meta.name or not meta.uid:
        raise ValueError("the CliqueSet needs a name and a uid to own its scheduling groups")
    tags = builders.gang_labels(cqs, gang, bucket)
    if member.group:
        tags[labels.LABEL_SCALING_GROUP] = member.group
    if member.instance is not None:
        tags[labels.LABEL_GROUP_INDEX] = str(member.instance)
    return {
        "name": member.name,
        "namespace": meta.namespace,
        "labels": tags,
        "annotations": {
            labels.ANNOTATION_POD_GROUP_SPEC: member.fixed,
            labels.ANNOTATION_WORKLOAD: workload_name if member.template else "",
        },
        "ownerReferences": [builders.owner_reference(cqs)],
    }


def composite_body(
    cqs: CliqueSet,
    gang: int,
    member: Member,
    workload_name: str,
    shape: Shape,
    *,
    bucket: str,
    version: str = COMPOSITE_VERSION,
) -> dict[str, Any]:
    """The CompositePodGroup of `member` (a composite of `members`) in gang `gang` of
    `cqs`, linked to template `member.template` of Workload `workload_name`."""
    if member.kind != KIND_COMPOSITE:
        raise ValueError(f"{member.name} is a {member.kind}, not a {KIND_COMPOSITE}")
    spec: dict[str, Any] = {}
    if member.parent:
        spec["parentCompositePodGroupName"] = member.parent
    if not member.template:
        raise ValueError(f"the composite {member.name} must name a Workload template")
    spec.update(_workload_ref(workload_name, member.template))
    spec["schedulingPolicy"] = composite_policy(member.count)
    if shape.topology_key and not member.parent:
        spec["schedulingConstraints"] = {"topology": [{"key": shape.topology_key}]}
    if shape.priority_class:
        spec["priorityClassName"] = shape.priority_class
    spec["disruptionMode"] = _disruption(shape)
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": KIND_COMPOSITE,
        "metadata": _metadata(cqs, gang, member, workload_name, bucket),
        "spec": spec,
    }


def pod_group_body(
    cqs: CliqueSet,
    gang: int,
    member: Member,
    workload_name: str,
    shape: Shape,
    *,
    bucket: str,
    version: str = POD_GROUP_VERSION,
) -> dict[str, Any]:
    """The PodGroup of `member` (an instance, or the cliques outside the groups) in gang
    `gang` of `cqs`: a child of `member.parent` with `member.count` pods needed."""
    if member.kind != KIND_POD_GROUP:
        raise ValueError(f"{member.name} is a {member.kind}, not a {KIND_POD_GROUP}")
    spec: dict[str, Any] = {}
    if member.parent:
        spec["parentCompositePodGroupName"] = member.parent
    spec.update(_workload_ref(workload_name, member.template))
    spec["schedulingPolicy"] = scheduling_policy(member.count)
    if shape.priority_class:
        spec["priorityClassName"] = shape.priority_class
    spec["disruptionMode"] = _disruption(shape)
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": KIND_POD_GROUP,
        "metadata": _metadata(cqs, gang, member, workload_name, bucket),
        "spec": spec,
    }


def body(
    cqs: CliqueSet,
    gang: int,
    member: Member,
    workload_name: str,
    shape: Shape,
    *,
    bucket: str,
    composite_version: str = COMPOSITE_VERSION,
    pod_group_version: str = POD_GROUP_VERSION,
) -> dict[str, Any]:
    """`composite_body` or `pod_group_body`, as `member.kind` says."""
    if member.kind == KIND_COMPOSITE:
        return composite_body(
            cqs, gang, member, workload_name, shape, bucket=bucket, version=composite_version
        )
    return pod_group_body(
        cqs, gang, member, workload_name, shape, bucket=bucket, version=pod_group_version
    )


def _pod_group_template(name: str, needed: int, shape: Shape) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "schedulingPolicy": scheduling_policy(needed)}
    if shape.priority_class:
        out["priorityClassName"] = shape.priority_class
    out["disruptionMode"] = _disruption(shape)
    return out


def _composite_template(name: str, count: int, shape: Shape, root: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "schedulingPolicy": composite_policy(count)}
    if root and shape.topology_key:
        out["schedulingConstraints"] = {"topology": [{"key": shape.topology_key}]}
    if shape.priority_class:
        out["priorityClassName"] = shape.priority_class
    out["disruptionMode"] = _disruption(shape)
    return out


def workload_templates(
    groups: Sequence[GroupNeed], shape: Shape, *, others: bool = False, other_pods: int = 0
) -> dict[str, Any]:
    """The set's Workload `spec` templates for gangs laid out by `members` (same
    arguments; the instance counts do not matter): `{"compositePodGroupTemplates":
    [...]}`, which replaces `podGroupTemplates` (the API takes one of the two). A part the
    gang does not need has no template (its groups name none); at least one part must be
    needed (a composite template needs a child), else ValueError."""
    if is_flat(groups, others):
        need = groups[0]
        root = _composite_template(TEMPLATE_GANG, need.min_available, shape, root=True)
        root["podGroupTemplates"] = [
            _pod_group_template(instance_template(need.name), need.instance_pods, shape)
        ]
        return {"compositePodGroupTemplates": [root]}
    needed = [g for g in groups if g.min_available > 0]
    with_others = others and other_pods > 0
    children = len(needed) + (1 if with_others else 0)
    if not children:
        raise ValueError("no part of the gang is needed: it has no composite to template")
    root = _composite_template(TEMPLATE_GANG, children, shape, root=True)
    if with_others:
        root["podGroupTemplates"] = [_pod_group_template(TEMPLATE_OTHERS, other_pods, shape)]
    if needed:
        nested = []
        for need in needed:
            group = _composite_template(
                group_template(need.name), need.min_available, shape, root=False
            )
            group["podGroupTemplates"] = [
                _pod_group_template(instance_template(need.name), need.instance_pods, shape)
            ]
            nested.append(group)
        root["compositePodGroupTemplates"] = nested
    return {"compositePodGroupTemplates": [root]}


def workload_name(cqs: CliqueSet, templates: Mapping[str, Any]) -> str:
    """`<cliqueset>-<hash of the templates>`."""
    return f"{cqs.metadata.name}-{workload.shape_hash([dict(templates)])}"


def workload_body(
    cqs: CliqueSet,
    templates: Mapping[str, Any],
    bucket: str,
    api: GangAPIVersion,
) -> dict[str, Any]:
    """The set's Workload with `templates` (`compositePodGroupTemplates`), in place of
    the one-PodGroup Workload's `podGroupTemplates` (the API takes one of the two)."""
    body = workload.build_workload(cqs, api)
    body["metadata"]["name"] = workload_name(cqs, templates)
    body["metadata"]["labels"][labels.LABEL_BUCKET] = bucket
    body["spec"].pop("podGroupTemplates", None)
    body["spec"].update(templates)
    return body


def sibling_body(
    cqs: CliqueSet,
    gang: int,
    sibling: PodGroup,
    name: str,
    part: tuple[str, int | None],
    needed: int,
    bucket: str,
) -> dict[str, Any]:
    """A PodGroup for instance `part` made like `sibling`, another instance's of the same
    tree: the same parent, template, priority class and disruption mode; `needed` pods
    (the sibling's policy kind is kept: it is in the name)."""
    group, inst = part
    spec_of = sibling.spec
    spec: dict[str, Any] = {}
    if spec_of.parent_composite_pod_group_name:
        spec["parentCompositePodGroupName"] = spec_of.parent_composite_pod_group_name
    ref = spec_of.workload_ref
    if ref is not None and ref.workload_name:
        spec["workloadRef"] = {"workloadName": ref.workload_name, "templateName": ref.template_name}
    count = needed if sibling.min_count > 0 and needed > 0 else sibling.min_count
    spec["schedulingPolicy"] = scheduling_policy(count)
    if spec_of.priority_class_name:
        spec["priorityClassName"] = spec_of.priority_class_name
    if spec_of.disruption_mode is not None:
        spec["disruptionMode"] = spec_of.disruption_mode
    tags = builders.gang_labels(cqs, gang, bucket)
    tags[labels.LABEL_SCALING_GROUP] = group
    tags[labels.LABEL_GROUP_INDEX] = str(inst)
    notes = sibling.metadata.annotations
    return {
        "apiVersion": f"scheduling.k8s.io/{POD_GROUP_VERSION}",
        "kind": KIND_POD_GROUP,
        "metadata": {
            "name": name,
            "namespace": cqs.metadata.namespace,
            "labels": tags,
            "annotations": {
                labels.ANNOTATION_POD_GROUP_SPEC: notes.get(labels.ANNOTATION_POD_GROUP_SPEC, ""),
                labels.ANNOTATION_WORKLOAD: notes.get(labels.ANNOTATION_WORKLOAD, ""),
            },
            "ownerReferences": [builders.owner_reference(cqs)],
        },
        "spec": spec,
    }
