"""The PodGroups of a CliqueSet's gangs, planned (pure): Kubernetes 1.36 (`v1alpha2`) and
1.37 (`v1beta1`) schedule a gang as a standalone PodGroup its pods name
(`spec.schedulingGroup.podGroupName`); no built-in controller makes them for a custom
resource, so the operator does (docs/gangs.md).

- **A PodGroup per gang**, `<cliqueset>-<gang index>-<hash>`, owned by the CliqueSet
  (controller reference, blockOwnerDeletion), labelled with the set, the gang and the set's
  bucket, and linked to the set's Workload and its one template (`gang`). The hash is that
  of the fields the API server keeps immutable (`fixed_hash`, also in the annotation
  `cliques.dev/pod-group-spec`): its policy's kind, topology constraint, priority class,
  disruption mode and DRA claims (`resourceClaims`: the set's Gang-scope claims, by
  template, where the server keeps them; `controllers.claims`), and on `v1alpha2` its
  `minCount` too.
- **A gang's pods always name one group**, the one its Cliques record
  (`cliques.dev/pod-group`): the scheduler counts the gang's bound pods towards
  `minCount`, so a pod that replaces one of a running gang is scheduled with it. A gang
  moves to the group the set asks for now only when all its pods are made again (a new
  gang, a gang restart, a roll of every clique of it): a group name in a pod cannot
  change, and a pod alone in a new group could never reach its `minCount`.
- **`minCount` follows the gang where the API lets it** (`v1beta1`, "mutable to support
  workload scaling"): a resize patches every group a gang names. On `v1alpha2` it cannot
  change: a resized gang keeps its group until it moves (docs/gangs.md says what that
  means for a shrink).
- **A part of a composite tree** (`gang_trees`) that a live Clique still names, once the
  set's gangs are no longer trees (its scaling groups removed), is kept as it is: its
  `minCount` is its part's, not the whole gang's.
- **A group no Clique names is deleted** (that of a gang removed by a scale down, or one a
  gang moved away from). The API server keeps it while a pod still names it (the
  `scheduling.k8s.io/podgroup-protection` finalizer).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from cliques.api import labels
from cliques.api.cliqueset import CliqueSet
from cliques.api.podgroup import PodGroup
from cliques.api.policies import PackMode
from cliques.controllers.base import builders
from cliques.controllers.base.actions import Create, Delete, Patch
from cliques.controllers.features import claims, workload
from cliques.controllers.features.gang_apis import GangAPIVersion

HASH_LENGTH: Final = 10


#: Hex digits of the fixed hash in a group's name.
NAME_HASH: Final = 8


def group_name(cliqueset: str, gang: int, fixed: str) -> str:
    """`<cliqueset>-<gang index>-<fixed hash>`: a PodGroup of gang `gang` (a DNS subdomain)."""
    return f"{cliqueset}-{gang}-{fixed[:NAME_HASH]}"


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
    #: (name, ResourceClaimTemplate) of the claims the gang's pods share, where the server
    #: keeps a PodGroup's `resourceClaims` (`claims.group_claims`)
    claims: tuple[tuple[str, str], ...] = ()


def shape(cqs: CliqueSet, features: frozenset[str] = frozenset()) -> Shape:
    """The `Shape` of `cqs`'s gangs. The priority class is the first one a clique's pod
    template names (a PodGroup has one; docs/gangs.md)."""
    spec = cqs.spec
    pack = spec.placement.pack if spec.placement is not None else None
    topology = pack.topology_key if pack is not None and pack.mode == PackMode.REQUIRED else ""
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
        claims=claims.group_claims(cqs) if "workload-claims" in features else (),
    )


def scheduler_packs(cqs: CliqueSet, features: frozenset[str]) -> bool:
    """Whether the scheduler keeps each gang in one topology domain (the PodGroup's
    `schedulingConstraints.topology`), so the pods need no pack affinity term."""
    return bool(shape(cqs, features).topology_key)


def _fixed_spec(api: GangAPIVersion, group: Shape) -> dict[str, Any]:
    """The spec fields the API server keeps immutable (and the policy's kind)."""
    fixed: dict[str, Any] = {}
    if group.topology_key:
        fixed["schedulingConstraints"] = {"topology": [{"key": group.topology_key}]}
    if group.priority_class:
        fixed["priorityClassName"] = group.priority_class
    if group.claims:
        fixed["resourceClaims"] = [
            {"name": name, "resourceClaimTemplateName": template} for name, template in group.claims
        ]
    fixed["disruptionMode"] = api.disruption_mode(group.disruption)
    return fixed


def fixed_hash(api: GangAPIVersion, group: Shape | int) -> str:
    """A hash of what the API server keeps immutable on a group of `group`'s shape."""
    if isinstance(group, int):
        group = Shape(needed=group)
    fixed: dict[str, Any] = {
        "policy": "gang" if group.needed > 0 else "basic",
        **_fixed_spec(api, group),
    }
    if not api.mutable_min_count:
        fixed["minCount"] = group.needed
    canonical = json.dumps(fixed, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:HASH_LENGTH]


def template_ref(api: GangAPIVersion, workload_name: str) -> dict[str, Any]:
    """The spec field that links a group to its Workload's template (immutable); none
    without a Workload (the backend was turned off while gangs still name their groups)."""
    return api.template_ref(workload_name) if workload_name else {}


def body(
    cqs: CliqueSet,
    gang: int,
    api: GangAPIVersion,
    workload_name: str,
    bucket: str,
    name: str = "",
) -> dict[str, Any]:
    """A PodGroup of gang `gang` of `cqs` as the set asks for it now, named `name` (default:
    the name that shape gets)."""
    meta = cqs.metadata
    if not meta.name or not meta.uid:
        raise ValueError("the CliqueSet needs a name and a uid to own its PodGroups")
    group = shape(cqs, api.features)
    fixed = fixed_hash(api, group)
    return {
        "apiVersion": f"scheduling.k8s.io/{api.version}",
        "kind": "PodGroup",
        "metadata": {
            "name": name or group_name(meta.name, gang, fixed),
            "namespace": meta.namespace,
            "labels": {
                labels.LABEL_CLIQUESET: meta.name,
                labels.LABEL_GANG_INDEX: str(gang),
                labels.LABEL_BUCKET: bucket,
            },
            "annotations": {
                labels.ANNOTATION_POD_GROUP_SPEC: fixed,
                labels.ANNOTATION_WORKLOAD: workload_name,
            },
            "ownerReferences": [builders.owner_reference(cqs)],
        },
        "spec": {
            **template_ref(api, workload_name),
            "schedulingPolicy": scheduling_policy(group.needed),
            **_fixed_spec(api, group),
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


def wanted_name(cqs: CliqueSet, gang: int, api: GangAPIVersion) -> str:
    """The group gang `gang` of `cqs` moves to when all its pods are made again."""
    return group_name(cqs.metadata.name, gang, fixed_hash(api, shape(cqs, api.features)))


def plan(
    cqs: CliqueSet,
    api: GangAPIVersion,
    groups: Iterable[PodGroup],
    wanted: Mapping[str, int],
    workload_name: str,
    bucket: str,
) -> GroupPlan:
    """`wanted`: group name -> gang, every group a live Clique names and the wanted group
    of each gang that has no live Clique yet. Missing ones are made, `minCount` follows
    where it may (`api.mutable_min_count`), the rest go."""
    meta = cqs.metadata
    needed = shape(cqs, api.features).needed
    res = api.podgroups
    have = {g.metadata.name: g for g in groups}
    out = GroupPlan()
    for existing in have.values():
        ref = _linked_workload(existing)
        if ref:
            out.linked.add(ref)
    for name, gang in sorted(wanted.items(), key=lambda item: (item[1], item[0])):
        group = have.get(name)
        if group is None:
            made = body(cqs, gang, api, workload_name, bucket, name)
            out.creates.append(Create(res, name, made, meta.uid))
            continue
        gmeta = group.metadata
        if gmeta.deletion_timestamp is not None:
            continue  # made again once it is gone
        if _tree_part(group):
            continue  # a part of a gang's composite tree asks for its part's pods only
        if api.mutable_min_count and needed > 0 and 0 < group.min_count != needed:
            patch = {
                "metadata": {"resourceVersion": gmeta.resource_version},
                "spec": {"schedulingPolicy": scheduling_policy(needed)},
            }
            out.patches.append(Patch(res, name, patch, reason="PodGroupMinCount"))
    for name, group in sorted(have.items()):
        if name not in wanted and group.metadata.deletion_timestamp is None:
            out.deletes.append(Delete(res, name, group.metadata.uid, meta.uid, "Unused"))
    return out


def _tree_part(group: PodGroup) -> bool:
    """Whether a group is a part of a gang's composite tree (`gang_trees`), kept as it is
    by a set whose gangs are no longer trees: it has a parent, or is an instance's."""
    return bool(group.spec.parent_composite_pod_group_name) or (
        labels.LABEL_GROUP_INDEX in group.metadata.labels
    )


def _linked_workload(group: PodGroup) -> str:
    """The Workload a group was made from (also in its annotation, so its spec's
    version-dependent reference need not be decoded)."""
    return group.metadata.annotations.get(labels.ANNOTATION_WORKLOAD, "")
