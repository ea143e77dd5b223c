"""The PodGroups of a CliqueSet's gangs, planned (pure): Kubernetes 1.36 (`v1alpha2`) and
1.37 (`v1beta1`) schedule a gang as a standalone PodGroup its pods name
(`spec.schedulingGroup.podGroupName`); no built-in controller makes them for a custom
resource, so the operator does (docs/gangs.md).

- **One PodGroup per gang**, `<cliqueset>-<gang index>`, owned by the CliqueSet (controller
  reference, blockOwnerDeletion), labelled with the set, the gang and the set's bucket, and
  linked to the set's Workload and its one template (`gang`). The name never changes, so a
  pod's reference (immutable) always names the group of its gang, whatever happened to the
  gang since the pod was made.
- **It always matches the gang it schedules.** Its gang policy's `minCount` is the pods a
  gang needs (`workload.min_count`). On `v1beta1` the API server lets `minCount` change (to
  support scaling): a resize patches it. Everything it does not let change (on `v1alpha2`
  `minCount` too) is hashed into the `cliques.dev/pod-group-spec` annotation; when the
  wanted hash differs, the group is deleted and made again under the same name, which the
  pod API allows (a pod that waits for its group waits until it is back). The scheduler
  counts a group's bound pods towards `minCount`, so pods that replace some of a running
  gang's pods are scheduled as soon as the gang is whole again.
- **A group no gang needs is deleted**: that of a gang removed by a scale down, once none
  of its Cliques is left.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from cliques.api import labels
from cliques.api.cliqueset import PACK_REQUIRED, CliqueSet
from cliques.api.podgroup import PodGroup
from cliques.controllers import workload
from cliques.controllers.actions import Create, Delete, Patch
from cliques.kube.resources import Resource

#: The versions whose PodGroup lets its gang policy's `minCount` change.
MUTABLE_MIN_COUNT: Final = frozenset({"v1beta1"})
#: The versions that have PodGroups, and how a group names its Workload template.
VERSIONS: Final = frozenset({"v1alpha2", "v1beta1"})
HASH_LENGTH: Final = 10


def resource(version: str) -> Resource:
    return Resource("scheduling.k8s.io", version, "podgroups", "PodGroup")


def group_name(cliqueset: str, gang: int) -> str:
    """`<cliqueset>-<gang index>`: the PodGroup of gang `gang` (a DNS subdomain)."""
    return f"{cliqueset}-{gang}"


def scheduling_policy(needed: int) -> dict[str, Any]:
    """The gang policy with `needed` pods, or the basic one when a gang needs none."""
    return {"gang": {"minCount": needed}} if needed > 0 else {"basic": {}}


@dataclass(frozen=True)
class Shape:
    """What a gang's PodGroup says, read from its CliqueSet and the server's features."""

    #: pods the gang needs at once (`workload.min_count`)
    needed: int
    #: the topology key the scheduler keeps the gang within ("" for none): `placement.pack`
    #: with mode Required, where the server keeps `schedulingConstraints.topology`
    topology_key: str = ""
    #: the priority class of the gang's pods ("" for none)
    priority_class: str = ""
    #: `gangScheduling.disruption`: Gang (preempted whole) or Pod
    disruption: str = "Gang"


def shape(cqs: CliqueSet, features: frozenset[str] = frozenset()) -> Shape:
    """The `Shape` of `cqs`'s gangs. The priority class is the first one a clique's pod
    template names (a PodGroup has one; docs/gangs.md)."""
    spec = cqs.spec
    pack = spec.placement.pack if spec.placement is not None else None
    topology = pack.topology_key if pack is not None and pack.mode == PACK_REQUIRED else ""
    priority = ""
    for clique in spec.template.cliques:
        name = ((clique.template or {}).get("spec") or {}).get("priorityClassName")
        if isinstance(name, str) and name:
            priority = name
            break
    return Shape(
        needed=workload.min_count(cqs),
        topology_key=topology if "topology" in features else "",
        priority_class=priority,
        disruption=spec.gang_scheduling.disruption,
    )


def scheduler_packs(cqs: CliqueSet, features: frozenset[str]) -> bool:
    """Whether the scheduler keeps each gang in one topology domain (the PodGroup's
    `schedulingConstraints.topology`), so the pods need no pack affinity term."""
    return bool(shape(cqs, features).topology_key)


def _fixed_spec(version: str, group: Shape) -> dict[str, Any]:
    """The spec fields the API server keeps immutable (and the policy's kind)."""
    fixed: dict[str, Any] = {}
    if group.topology_key:
        fixed["schedulingConstraints"] = {"topology": [{"key": group.topology_key}]}
    if group.priority_class:
        fixed["priorityClassName"] = group.priority_class
    if version == "v1alpha2":
        fixed["disruptionMode"] = "PodGroup" if group.disruption == "Gang" else "Pod"
    else:
        fixed["disruptionMode"] = {"all": {}} if group.disruption == "Gang" else {"single": {}}
    return fixed


def fixed_hash(version: str, group: Shape | int) -> str:
    """A hash of what the API server keeps immutable on a group of `group`'s shape."""
    if isinstance(group, int):
        group = Shape(needed=group)
    fixed: dict[str, Any] = {
        "policy": "gang" if group.needed > 0 else "basic",
        **_fixed_spec(version, group),
    }
    if version not in MUTABLE_MIN_COUNT:
        fixed["minCount"] = group.needed
    canonical = json.dumps(fixed, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:HASH_LENGTH]


def template_ref(version: str, workload_name: str) -> dict[str, Any]:
    """The spec field that links a group to its Workload's template (immutable); none
    without a Workload (the backend was turned off while gangs still name their groups)."""
    if not workload_name:
        return {}
    if version == "v1alpha2":
        ref = {"workloadName": workload_name, "podGroupTemplateName": workload.POD_GROUP}
        return {"podGroupTemplateRef": {"workload": ref}}
    return {"workloadRef": {"workloadName": workload_name, "templateName": workload.POD_GROUP}}


def body(
    cqs: CliqueSet,
    gang: int,
    version: str,
    workload_name: str,
    bucket: str,
    features: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """The PodGroup of gang `gang` of `cqs`."""
    meta = cqs.metadata
    if not meta.name or not meta.uid:
        raise ValueError("the CliqueSet needs a name and a uid to own its PodGroups")
    group = shape(cqs, features)
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "PodGroup",
        "metadata": {
            "name": group_name(meta.name, gang),
            "namespace": meta.namespace,
            "labels": {
                labels.LABEL_CLIQUESET: meta.name,
                labels.LABEL_GANG_INDEX: str(gang),
                labels.LABEL_BUCKET: bucket,
            },
            "annotations": {
                labels.ANNOTATION_POD_GROUP_SPEC: fixed_hash(version, group),
                labels.ANNOTATION_WORKLOAD: workload_name,
            },
            "ownerReferences": [
                {
                    "apiVersion": cqs.api_version,
                    "kind": cqs.kind,
                    "name": meta.name,
                    "uid": meta.uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            **template_ref(version, workload_name),
            "schedulingPolicy": scheduling_policy(group.needed),
            **_fixed_spec(version, group),
        },
    }


@dataclass
class GroupPlan:
    """The writes that keep a CliqueSet's PodGroups matching its gangs."""

    creates: list[Create] = field(default_factory=list)
    patches: list[Patch] = field(default_factory=list)
    deletes: list[Delete] = field(default_factory=list)
    #: workloads a group links to (kept while a group names them)
    linked: set[str] = field(default_factory=set)


def plan(
    cqs: CliqueSet,
    version: str,
    groups: Iterable[PodGroup],
    gangs: Iterable[int],
    workload_name: str,
    bucket: str,
    features: frozenset[str] = frozenset(),
) -> GroupPlan:
    """`gangs`: the gang indexes that need a group (those of `spec.replicas` and any gang
    that still has a Clique); `features`: the gated PodGroup fields the server keeps."""
    meta = cqs.metadata
    wanted_shape = shape(cqs, features)
    needed = wanted_shape.needed
    want = fixed_hash(version, wanted_shape)
    res = resource(version)
    have = {g.metadata.name: g for g in groups}
    out = GroupPlan()
    for existing in have.values():
        ref = _linked_workload(existing)
        if ref:
            out.linked.add(ref)
    wanted = {group_name(meta.name, gang): gang for gang in gangs}
    for name, gang in sorted(wanted.items(), key=lambda item: item[1]):
        group = have.get(name)
        if group is None:
            out.creates.append(
                Create(
                    res,
                    name,
                    body(cqs, gang, version, workload_name, bucket, features),
                    meta.uid,
                )
            )
            continue
        gmeta = group.metadata
        if gmeta.deletion_timestamp is not None:
            continue  # made again once it is gone
        if gmeta.annotations.get(labels.ANNOTATION_POD_GROUP_SPEC) != want:
            out.deletes.append(Delete(res, name, gmeta.uid, meta.uid, "PodGroupChanged"))
        elif needed > 0 and group.min_count != needed:
            patch = {
                "metadata": {"resourceVersion": gmeta.resource_version},
                "spec": {"schedulingPolicy": scheduling_policy(needed)},
            }
            out.patches.append(Patch(res, name, patch, reason="PodGroupMinCount"))
    for name, group in sorted(have.items()):
        if name not in wanted and group.metadata.deletion_timestamp is None:
            out.deletes.append(Delete(res, name, group.metadata.uid, meta.uid, "ScaleDown"))
    return out


def _linked_workload(group: PodGroup) -> str:
    """The Workload a group was made from (also in its annotation, so its spec's
    version-dependent reference need not be decoded)."""
    return group.metadata.annotations.get(labels.ANNOTATION_WORKLOAD, "")
