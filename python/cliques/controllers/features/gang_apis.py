"""The gang-scheduling APIs the operator speaks, as strategies (pure): one implementation per
version of scheduling.k8s.io, picked once per process from what discovery found
(`pick(gangapi.GangAPI)`), so that no planner asks which version it is talking to.

Each says what a gang's group object is and how its pods name it, what may change on it
after it is made, which gated fields the server keeps, and how its Workload is written:

    version    a gang is                                   pods name it      minCount
    v1alpha1   a replica of the Workload's pod group       spec.workloadRef  fixed
               (1.35; its scheduler cannot bind a gang whose pods share a claim)
    v1alpha2   a PodGroup of its own, linked to the        schedulingGroup   fixed
               Workload's template (1.36)
    v1beta1    the same, and may have a CompositePodGroup  schedulingGroup   may change
               parent (1.37)

`NoGangAPI` is the cluster that serves none of them: gangs are scheduled pod by pod.
A Clique records the group object its gang uses (`cliques.dev/workload` or
`cliques.dev/pod-group`), and its pods name that, whatever the process speaks now.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Final

from cliques.api.policies import GangDisruption
from cliques.kube import gangapi
from cliques.kube.resources import Resource

#: The name of the Workload's one pod group (template): every gang is one of it.
POD_GROUP: Final = "gang"


@dataclass(frozen=True)
class GangAPIVersion:
    """A scheduling.k8s.io version as the planners use it; this base is the cluster that
    serves none (`served` False)."""

    #: the version ("" for none)
    version: ClassVar[str] = ""
    #: a gang is a PodGroup of its own that its pods name (`schedulingGroup`), not a
    #: replica of the Workload's pod group (`workloadRef`)
    pod_groups: ClassVar[bool] = False
    #: a PodGroup's gang policy `minCount` may change ("mutable to support workload
    #: scaling"); elsewhere it is part of what the group's name hashes
    mutable_min_count: ClassVar[bool] = False
    #: the scheduler binds a gang whose pods share a DRA claim not yet allocated
    binds_shared_claims: ClassVar[bool] = True
    #: its PodGroups can name a parent CompositePodGroup (`parentCompositePodGroupName`)
    parent_field: ClassVar[bool] = False

    #: the gated PodGroup fields the server keeps (`gangapi.FEATURES`), and
    #: `gangapi.COMPOSITE` where CompositePodGroups are served
    features: frozenset[str] = frozenset()
    #: what discovery found, in words (for conditions and logs)
    detail: str = ""
    #: the version CompositePodGroups are made in where `composite`
    #: (`gangapi.GangAPI.composite_version`: v1beta1 on 1.38, v1alpha3 on 1.37)
    composite_version: str = gangapi.COMPOSITE_VERSION

    @property
    def served(self) -> bool:
        """A gang-scheduling API is served: the Workload backend is possible."""
        return bool(self.version)

    def keeps(self, feature: str) -> bool:
        """Whether the server keeps gated PodGroup field `feature` (`gangapi.FEATURES`)."""
        return feature in self.features

    @property
    def composite(self) -> bool:
        """Gangs may be trees of CompositePodGroups (`gang_trees`)."""
        return self.parent_field and gangapi.COMPOSITE in self.features

    @property
    def workloads(self) -> Resource:
        return gangapi.workloads(self.version)

    @property
    def podgroups(self) -> Resource:
        return gangapi.podgroups(self.version)

    def scheduled_through(self) -> str:
        """How gangs are scheduled where the Workload backend is on (a condition message)."""
        return "gangs are scheduled pod by pod"

    def workload_groups(self, groups: list[dict[str, Any]]) -> dict[str, Any]:
        """The Workload's spec field for its pod groups (`{"name", "policy"}` each)."""
        return {
            "podGroupTemplates": [
                {"name": g["name"], "schedulingPolicy": g["policy"]} for g in groups
            ]
        }

    def disruption_mode(self, disruption: str) -> Any:
        """A PodGroup's `disruptionMode` for `gangScheduling.disruption` (Gang or Pod)."""
        return {"all": {}} if disruption == GangDisruption.GANG else {"single": {}}

    def template_ref(self, workload_name: str) -> dict[str, Any]:
        """The PodGroup spec field linking it to its Workload's template (immutable)."""
        return {"workloadRef": {"workloadName": workload_name, "templateName": POD_GROUP}}


@dataclass(frozen=True)
class NoGangAPI(GangAPIVersion):
    """No version of scheduling.k8s.io that the operator speaks is served."""


@dataclass(frozen=True)
class V1Alpha1(GangAPIVersion):
    """Kubernetes 1.35: one Workload per set and gang shape, each gang a replica of its pod
    group, named by the pods' `spec.workloadRef`."""

    version: ClassVar[str] = "v1alpha1"
    binds_shared_claims: ClassVar[bool] = False

    def scheduled_through(self) -> str:
        return f"gangs are scheduled through {gangapi.GROUP}/{self.version} Workloads"

    def workload_groups(self, groups: list[dict[str, Any]]) -> dict[str, Any]:
        return {"podGroups": groups}


@dataclass(frozen=True)
class V1Alpha2(GangAPIVersion):
    """Kubernetes 1.36: a PodGroup per gang, linked to the Workload's template, named by
    the pods' `spec.schedulingGroup`; its `minCount` is fixed."""

    version: ClassVar[str] = "v1alpha2"
    pod_groups: ClassVar[bool] = True

    def scheduled_through(self) -> str:
        return f"gangs are scheduled through {gangapi.GROUP}/{self.version} PodGroups, one each"

    def disruption_mode(self, disruption: str) -> Any:
        return "PodGroup" if disruption == GangDisruption.GANG else "Pod"

    def template_ref(self, workload_name: str) -> dict[str, Any]:
        ref = {"workloadName": workload_name, "podGroupTemplateName": POD_GROUP}
        return {"podGroupTemplateRef": {"workload": ref}}


@dataclass(frozen=True)
class V1Beta1(GangAPIVersion):
    """Kubernetes 1.37: a PodGroup per gang whose `minCount` may change, and which may
    name a parent CompositePodGroup (served in v1alpha3 behind a gate on 1.37, in v1beta1
    too on 1.38: `composite_version`)."""

    version: ClassVar[str] = "v1beta1"
    pod_groups: ClassVar[bool] = True
    mutable_min_count: ClassVar[bool] = True
    parent_field: ClassVar[bool] = True

    def scheduled_through(self) -> str:
        return f"gangs are scheduled through {gangapi.GROUP}/{self.version} PodGroups, one each"


#: Every version the operator speaks, newest first (as `gangapi.PREFERENCE`).
VERSIONS: Final[dict[str, type[GangAPIVersion]]] = {
    cls.version: cls for cls in (V1Beta1, V1Alpha2, V1Alpha1)
}


def of(
    version: str,
    features: frozenset[str] = frozenset(),
    detail: str = "",
    composite_version: str = "",
) -> GangAPIVersion:
    """The strategy of `version` ("" for none), keeping `features`; its CompositePodGroups
    in `composite_version` (default `gangapi.COMPOSITE_VERSION`)."""
    composite_version = composite_version or gangapi.COMPOSITE_VERSION
    if not version:
        return NoGangAPI(features, detail, composite_version)
    cls = VERSIONS.get(version)
    if cls is None:
        raise ValueError(f"scheduling.k8s.io/{version} is not a gang API the operator speaks")
    return cls(features, detail, composite_version)


def pick(api: gangapi.GangAPI) -> GangAPIVersion:
    """The strategy for what discovery found (once per process)."""
    return of(api.version, api.features, api.describe(), api.composite_version)
