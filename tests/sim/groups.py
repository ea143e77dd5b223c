"""The scheduling.k8s.io objects of the simulated API server, validated as the real one
validates them (read from k8s.io/api v0.35.4 `scheduling/v1alpha1`, v0.36.1 `v1alpha2`,
v0.37.2 `v1beta1` and `v1alpha3`, and k8s.io/kubernetes v1.37.2
`pkg/apis/scheduling/validation`): a write the real server refuses is a 422 here.

- **Workloads** (every version): `spec.podGroups` (v1alpha1) or `spec.podGroupTemplates`
  (v1alpha2, v1beta1; on v1beta1 or `compositePodGroupTemplates`) required, each with a
  name and a scheduling policy of one kind (`basic` or `gang` with `minCount` >= 1); the
  spec never changes (v1alpha1, v1alpha2: `+k8s:immutable`; v1beta1: no template added
  or removed, and the operator never patches one, so any change is refused).
- **PodGroups** (v1alpha2, v1beta1): one scheduling policy (`basic` or `gang` with
  `minCount` >= 1); the link to the Workload's template (`podGroupTemplateRef.workload`
  {workloadName, podGroupTemplateName} on v1alpha2, `workloadRef` {workloadName,
  templateName} on v1beta1); `disruptionMode` a string `Pod`/`PodGroup` on v1alpha2
  (dropped unless the WorkloadAwarePreemption gate is on, as are `priorityClassName`
  and `priority`), a union `{single: {}}`/`{all: {}}` on v1beta1; `schedulingConstraints`
  dropped without TopologyAwareWorkloadScheduling, `resourceClaims` (at most 4) without
  DRAWorkloadResourceClaims; `parentCompositePodGroupName` (v1beta1) dropped without
  CompositePodGroup, and requiring `workloadRef`. A field whose gate is off is dropped on
  create, as the real registry does (k8s.io/kubernetes v1.36.3 and v1.37.2,
  `pkg/registry/scheduling/podgroup/strategy.go`), not refused. On update the v1alpha2 spec is
  immutable whole; on v1beta1 everything is, except `schedulingPolicy.gang.minCount`
  (the policy may not switch between basic and gang). Unknown spec fields are dropped
  (the server's default field validation, Warn).
- **CompositePodGroups** (v1alpha3 on 1.37, behind CompositePodGroup): a
  `schedulingPolicy` of one kind (`basic`, or `gang` with `minGroupCount` >= 1) and, as a
  PodGroup's, `parentCompositePodGroupName` requiring `workloadRef`; the spec is
  immutable.
- **A pod's group** (`group_of`): `spec.schedulingGroup.podGroupName` from 1.36 on,
  `spec.workloadRef` {name, podGroupReplicaKey} on 1.35.
"""

from __future__ import annotations

import copy
from typing import Any

from cliques.kube import errors

Obj = dict[str, Any]

#: The feature gates the simulated API server runs with by default (those the operator's
#: PodGroups need: its disruption mode is gated on 1.36).
DEFAULT_GATES = frozenset({"WorkloadAwarePreemption"})
#: The finalizer the API server's podgroup-protection keeps on a PodGroup while a pod
#: names it.
PROTECTION = "scheduling.k8s.io/podgroup-protection"

_COMMON = {"schedulingPolicy", "schedulingConstraints", "resourceClaims", "disruptionMode"}
POD_GROUP_FIELDS: dict[str, frozenset[str]] = {
    "v1alpha2": frozenset(_COMMON | {"podGroupTemplateRef", "priorityClassName", "priority"}),
    "v1beta1": frozenset(
        _COMMON
        | {
            "parentCompositePodGroupName",
            "workloadRef",
            "priorityClassName",
            "priority",
            "preemptionPolicy",
        }
    ),
}
COMPOSITE_FIELDS = frozenset(
    {
        "parentCompositePodGroupName",
        "workloadRef",
        "schedulingPolicy",
        "schedulingConstraints",
        "disruptionMode",
        "priorityClassName",
        "priority",
        "preemptionPolicy",
    }
)


def _invalid(kind: str, name: str, why: str) -> errors.Invalid:
    return errors.Invalid(422, "Invalid", f'{kind} "{name}" is invalid: {why}')


def _policy(kind: str, name: str, policy: Any, where: str, count: str = "minCount") -> None:
    """A scheduling policy: exactly one of `basic` and `gang`, a gang's count >= 1."""
    if not isinstance(policy, dict) or len([k for k in ("basic", "gang") if k in policy]) != 1:
        raise _invalid(kind, name, f"{where}: must specify exactly one of basic, gang")
    gang = policy.get("gang")
    if gang is not None:
        value = gang.get(count) if isinstance(gang, dict) else None
        if not isinstance(value, int) or value < 1:
            raise _invalid(kind, name, f"{where}.gang.{count}: must be at least 1, got {value}")


def _ref(kind: str, name: str, ref: Any, where: str, keys: tuple[str, ...]) -> None:
    if not isinstance(ref, dict) or any(not ref.get(k) for k in keys):
        raise _invalid(kind, name, f"{where}: {', '.join(keys)} are required")


def validate_create(version: str, gates: frozenset[str], kind: str, obj: Obj) -> Obj:
    """`obj` as stored (unknown spec fields dropped), or a 422."""
    name = str(obj.get("metadata", {}).get("name", ""))
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        raise _invalid(kind, name, "spec: Required value")
    if kind == "Workload":
        return _workload(version, name, obj)
    if kind == "CompositePodGroup":
        if "CompositePodGroup" not in gates:
            raise _invalid(kind, name, "the CompositePodGroup feature gate is off")
        obj = _known(obj, COMPOSITE_FIELDS)
        spec = obj["spec"]
        _policy(kind, name, spec.get("schedulingPolicy"), "spec.schedulingPolicy", "minGroupCount")
        if spec.get("parentCompositePodGroupName") and not spec.get("workloadRef"):
            raise _invalid(kind, name, "spec.workloadRef: must be set with a parent")
        return obj
    if kind != "PodGroup":
        return obj
    if version not in POD_GROUP_FIELDS:
        raise errors.NotFound(404, "NotFound", f"the server serves no PodGroups in {version}")
    obj = _known(obj, POD_GROUP_FIELDS[version])
    spec = obj["spec"]
    _policy(kind, name, spec.get("schedulingPolicy"), "spec.schedulingPolicy")
    gated = {
        "schedulingConstraints": "TopologyAwareWorkloadScheduling",
        "resourceClaims": "DRAWorkloadResourceClaims",
        "parentCompositePodGroupName": "CompositePodGroup",
    }
    if version == "v1alpha2":
        gated |= dict.fromkeys(
            ("disruptionMode", "priorityClassName", "priority"), "WorkloadAwarePreemption"
        )
    # A field whose gate is off is dropped, not refused (the registry's strategy,
    # `dropDisabled...Field` in k8s.io/kubernetes pkg/registry/scheduling/podgroup).
    dropped = [key for key, gate in gated.items() if key in spec and gate not in gates]
    if dropped:
        spec = {k: v for k, v in spec.items() if k not in dropped}
        obj = {**obj, "spec": spec}
    if len(spec.get("resourceClaims") or ()) > 4:
        raise _invalid(kind, name, "spec.resourceClaims: must have at most 4 items")
    mode = spec.get("disruptionMode")
    if version == "v1alpha2":
        if "podGroupTemplateRef" in spec:
            ref = spec["podGroupTemplateRef"]
            workload = ref.get("workload") if isinstance(ref, dict) else None
            _ref(
                kind,
                name,
                workload,
                "spec.podGroupTemplateRef.workload",
                ("workloadName", "podGroupTemplateName"),
            )
        if mode is not None and mode not in ("Pod", "PodGroup"):
            raise _invalid(kind, name, f"spec.disruptionMode: Unsupported value: {mode!r}")
    else:
        if "workloadRef" in spec:
            _ref(
                kind,
                name,
                spec["workloadRef"],
                "spec.workloadRef",
                ("workloadName", "templateName"),
            )
        if spec.get("parentCompositePodGroupName") and not spec.get("workloadRef"):
            raise _invalid(kind, name, "spec.workloadRef: must be set when a parent is set")
        if mode is not None and (
            not isinstance(mode, dict) or len([k for k in ("single", "all") if k in mode]) != 1
        ):
            raise _invalid(kind, name, f"spec.disruptionMode: one of single, all, got {mode!r}")
    meta = obj.setdefault("metadata", {})
    meta["finalizers"] = [*(meta.get("finalizers") or ()), PROTECTION]
    return obj


def _known(obj: Obj, fields: frozenset[str]) -> Obj:
    obj = copy.deepcopy(obj)
    obj["spec"] = {k: v for k, v in obj["spec"].items() if k in fields}
    return obj


def _workload(version: str, name: str, obj: Obj) -> Obj:
    spec = obj["spec"]
    if version == "v1alpha1":
        groups, key, policy = spec.get("podGroups"), "spec.podGroups", "policy"
    else:
        groups, key, policy = (
            spec.get("podGroupTemplates"),
            "spec.podGroupTemplates",
            "schedulingPolicy",
        )
        if version == "v1beta1" and not groups and spec.get("compositePodGroupTemplates"):
            return obj
    if not isinstance(groups, list) or not groups:
        raise _invalid("Workload", name, f"{key}: Required value")
    if len(groups) > 8:
        raise _invalid("Workload", name, f"{key}: must have at most 8 items")
    for i, group in enumerate(groups):
        if not isinstance(group, dict) or not group.get("name"):
            raise _invalid("Workload", name, f"{key}[{i}].name: Required value")
        _policy("Workload", name, group.get(policy), f"{key}[{i}].{policy}")
    return obj


def validate_update(version: str, kind: str, old: Obj, new: Obj) -> None:
    """A 422 for a spec change the real server refuses."""
    if kind not in ("Workload", "PodGroup", "CompositePodGroup"):
        return
    before, after = old.get("spec"), new.get("spec")
    if before == after:
        return
    name = str(old.get("metadata", {}).get("name", ""))
    if kind == "PodGroup" and version == "v1beta1":
        b, a = copy.deepcopy(before or {}), copy.deepcopy(after or {})
        bp, ap = b.pop("schedulingPolicy", {}), a.pop("schedulingPolicy", {})
        if b != a:
            raise _invalid(kind, name, "spec: field is immutable (but for gang.minCount)")
        if set(bp) != set(ap) or bp.get("basic") != ap.get("basic"):
            raise _invalid(kind, name, "spec.schedulingPolicy: may not switch basic and gang")
        _policy(kind, name, ap, "spec.schedulingPolicy")
        return
    raise _invalid(kind, name, "spec: field is immutable")


def group_of(pod: Obj) -> tuple[str, str] | None:
    """The group a pod names: ("PodGroup", name) from 1.36 on, ("Workload", "name/replica")
    on 1.35, None for none."""
    spec = pod.get("spec") or {}
    sg = spec.get("schedulingGroup")
    if isinstance(sg, dict) and sg.get("podGroupName"):
        return "PodGroup", str(sg["podGroupName"])
    ref = spec.get("workloadRef")
    if isinstance(ref, dict) and ref.get("name"):
        return "Workload", f"{ref['name']}/{ref.get('podGroupReplicaKey', '')}"
    return None


def min_count(kind: str, obj: Obj | None) -> int:
    """The pods a group needs bound at once: a PodGroup's gang `minCount`, the first gang
    policy of a Workload's pod groups (1.35), 1 with the basic policy, and more than any
    gang has when the object is missing (its pods do not schedule)."""
    if obj is None:
        return 1 << 30
    spec = obj.get("spec") or {}
    if kind == "PodGroup":
        gang = (spec.get("schedulingPolicy") or {}).get("gang")
        return int(gang.get("minCount", 1)) if gang else 1
    for group in spec.get("podGroups") or spec.get("podGroupTemplates") or ():
        gang = (group.get("policy") or group.get("schedulingPolicy") or {}).get("gang")
        if gang:
            return int(gang.get("minCount", 1))
    return 1
