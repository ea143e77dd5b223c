"""Which gang-scheduling API the cluster serves, read from the discovery API.

    scheduling.k8s.io/v1beta1   workloads, podgroups   Kubernetes 1.37 (GenericWorkload,
                                                       beta): a PodGroup per gang
    scheduling.k8s.io/v1alpha2  workloads, podgroups   Kubernetes 1.36 (GenericWorkload,
                                                       alpha): a PodGroup per gang
    scheduling.k8s.io/v1alpha1  workloads              Kubernetes 1.35 (alpha): a Workload
                                                       whose pod group has a replica per gang

The newest one served is used (`PREFERENCE`). Kubernetes 1.37 also serves, behind the alpha
gate `CompositePodGroup` and only in `v1alpha3` (`--runtime-config
scheduling.k8s.io/v1alpha3=true`), `compositepodgroups`: a gang may then be a
CompositePodGroup whose children are v1beta1 PodGroups (`parentCompositePodGroupName`;
`controllers.composite_groups`). Kubernetes 1.38 serves them in `v1beta1` too, beside its
Workloads and PodGroups (the gate is beta there, still off by default), with the same
fields. Where the chosen version's PodGroups have that field, `detect` also reads the
resource lists of `COMPOSITE_VERSIONS` and reports the feature `COMPOSITE` with the newest
version that serves them (`GangAPI.composite_version`: v1beta1 where served, else the
v1alpha3 of 1.37); the API server serves them only with the gate on, which also lets its
PodGroups keep the parent
field. Some PodGroup fields sit behind feature gates
of their own, which discovery does not show: `probe` asks the API server to create a
PodGroup with each in a dry run (nothing is stored) and reads back which it kept
(`FEATURES`). `detect` asks the API server
(`GET /apis/scheduling.k8s.io`, then each candidate version's resource list); `interpret`
is the pure part. Discovery shows what the API server serves, not whether kube-scheduler
runs with the GangScheduling gate: a cluster that serves the API must also run its scheduler
with that gate (docs/gangs.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import msgspec

from cliques.api import labels
from cliques.kube import errors
from cliques.kube.resources import Resource

GROUP: Final = "scheduling.k8s.io"
WORKLOAD_RESOURCE: Final = "workloads"
PODGROUP_RESOURCE: Final = "podgroups"
#: Version -> the resources the operator needs of it, newest first: the order of preference.
PREFERENCE: Final[Mapping[str, tuple[str, ...]]] = {
    "v1beta1": (WORKLOAD_RESOURCE, PODGROUP_RESOURCE),
    "v1alpha2": (WORKLOAD_RESOURCE, PODGROUP_RESOURCE),
    "v1alpha1": (WORKLOAD_RESOURCE,),
}


#: The CompositePodGroup resource (Kubernetes 1.37 alpha, 1.38 beta), and the feature name
#: `detect` reports when it is served.
COMPOSITE_RESOURCE: Final = "compositepodgroups"
COMPOSITE: Final = "composite"
#: The versions that serve CompositePodGroups, newest first: the order of preference.
#: 1.38 serves them in v1beta1 (beta, beside its Workloads and PodGroups) and, where
#: `--runtime-config` turns it on, still in v1alpha3; 1.37 in v1alpha3 only. The two have
#: the same fields (`spec.parentCompositePodGroupName`, `workloadRef`, `schedulingPolicy
#: .minGroupCount`, ...), so the planner writes the same body in either.
COMPOSITE_VERSIONS: Final = ("v1beta1", "v1alpha3")
#: The version the planner writes in when it is told none (`controllers.gang_trees`):
#: 1.37's, the oldest that serves them.
COMPOSITE_VERSION: Final = COMPOSITE_VERSIONS[-1]
#: The `PREFERENCE` versions whose PodGroups can name a parent CompositePodGroup
#: (`spec.parentCompositePodGroupName`): v1alpha2 (1.36) has no such field.
PARENT_FIELD_VERSIONS: Final = frozenset({"v1beta1"})


def workloads(version: str) -> Resource:
    """The `workloads` resource of scheduling.k8s.io `version`."""
    return Resource(GROUP, version, WORKLOAD_RESOURCE, "Workload")


def podgroups(version: str) -> Resource:
    """The `podgroups` resource of scheduling.k8s.io `version`."""
    return Resource(GROUP, version, PODGROUP_RESOURCE, "PodGroup")


def compositepodgroups(version: str) -> Resource:
    """The `compositepodgroups` resource of scheduling.k8s.io `version`."""
    return Resource(GROUP, version, COMPOSITE_RESOURCE, "CompositePodGroup")


#: PodGroup fields behind gates of their own, each probed with a dry-run create: the name
#: the operator knows it by -> (the gate, a spec fragment, the field that must come back).
FEATURES: Final[Mapping[str, tuple[str, dict[str, Any], str]]] = {
    "topology": (
        "TopologyAwareWorkloadScheduling",
        {"schedulingConstraints": {"topology": [{"key": labels.LABEL_TOPOLOGY_PROBE}]}},
        "schedulingConstraints",
    ),
    # gated up to 1.37; 1.38 removed the gate and the field is always kept
    "preemption-policy": (
        "PodGroupPreemptionPolicy",
        {"preemptionPolicy": "PreemptLowerPriority"},
        "preemptionPolicy",
    ),
    "workload-claims": (
        "DRAWorkloadResourceClaims",
        {"resourceClaims": [{"name": "probe", "resourceClaimTemplateName": "cliques-probe"}]},
        "resourceClaims",
    ),
}
PROBE_NAME: Final = "cliques-feature-probe"


@dataclass(frozen=True)
class GangAPI:
    """What the cluster serves for gang scheduling."""

    #: The group version the operator uses ("" when none of `PREFERENCE` is served).
    version: str = ""
    #: Every group version the API server lists for scheduling.k8s.io.
    versions: tuple[str, ...] = ()
    #: The gated PodGroup fields the API server keeps (`FEATURES`, found by `probe`), and
    #: `COMPOSITE` where CompositePodGroups are served (found by `detect`).
    features: frozenset[str] = frozenset()
    #: The operator may manage DRA claims: resource.k8s.io/v1 ResourceClaims and
    #: ResourceClaimTemplates are served and it may list them (`claims_served`).
    claims: bool = False
    #: The API server serves the `pods/resize` subresource (`resize_served`): an in-place
    #: update may change a container's CPU and memory.
    resize: bool = False
    #: Kueue is installed (kueue.x-k8s.io/v1beta2 Workloads and LocalQueues served) and
    #: the operator may list them: CliqueSets may be queued (`kueue_served`).
    kueue: bool = False
    #: The operator may list Nodes and PodDisruptionBudgets: gangs move off drained nodes
    #: (`controllers.features.drain`).
    drain: bool = False
    #: lifecycle.k8s.io/v1alpha1 Evictions and their status are served (Kubernetes 1.37+,
    #: gate `EvictionRequestAPI`) and the operator may list them: pods outside PodGroups
    #: name its responder, which moves their gangs whole
    #: (`controllers.features.eviction_requests`).
    evictions: bool = False
    #: The version that serves CompositePodGroups ("" when none does, or when the chosen
    #: version's PodGroups cannot name a parent): `COMPOSITE` is then in `features`.
    composite_version: str = ""

    @property
    def served(self) -> bool:
        """Some gang-scheduling API is served (the Workload backend is possible)."""
        return bool(self.version)

    @property
    def podgroups(self) -> bool:
        """Gangs are standalone PodGroups named by the pods (1.36 and later); otherwise
        replicas of a Workload's pod group (1.35)."""
        return PODGROUP_RESOURCE in PREFERENCE.get(self.version, ())

    @property
    def workload_resource(self) -> Resource:
        return workloads(self.version)

    @property
    def podgroup_resource(self) -> Resource:
        return podgroups(self.version)

    @property
    def api_version(self) -> str:
        return f"{GROUP}/{self.version}"

    @property
    def composite(self) -> bool:
        """A gang may be a CompositePodGroup whose children are PodGroups."""
        return COMPOSITE in self.features and bool(self.composite_version)

    @property
    def composite_resource(self) -> Resource:
        """The `compositepodgroups` resource (only meaningful where `composite`)."""
        return compositepodgroups(self.composite_version)

    def describe(self) -> str:
        """One line for a log or a condition message."""
        if self.podgroups:
            kept = ", ".join(
                f"{name} {'on' if name in self.features else 'off'}"
                for name in (*FEATURES, COMPOSITE)
            )
            if self.composite:
                kept += f" in {GROUP}/{self.composite_version}"
                if self.composite_version != COMPOSITE_VERSIONS[0]:
                    kept += f" ({COMPOSITE_VERSIONS[0]} serves none: the alpha)"
            return f"{self.api_version} workloads and podgroups (a PodGroup per gang; {kept})"
        if self.version:
            return f"{self.api_version} workloads (a pod group replica per gang)"
        if self.versions:
            return (
                f"{GROUP} serves {', '.join(self.versions)} but none of its gang APIs "
                f"({', '.join(PREFERENCE)})"
            )
        return f"no {GROUP} API group"


def interpret(group_versions: Sequence[str], resources: Mapping[str, Sequence[str]]) -> GangAPI:
    """From the versions of scheduling.k8s.io and the resource names of each version (those
    of `PREFERENCE`, and of `COMPOSITE_VERSIONS` for the CompositePodGroups)."""
    for version, needed in PREFERENCE.items():
        if all(r in resources.get(version, ()) for r in needed):
            composite = ""
            if version in PARENT_FIELD_VERSIONS:
                composite = next(
                    (v for v in COMPOSITE_VERSIONS if COMPOSITE_RESOURCE in resources.get(v, ())),
                    "",
                )
            features = frozenset({COMPOSITE}) if composite else frozenset()
            return GangAPI(version, tuple(group_versions), features, composite_version=composite)
    return GangAPI("", tuple(group_versions))


class _Version(msgspec.Struct):
    version: str


class _Group(msgspec.Struct):
    versions: list[_Version] = msgspec.field(default_factory=list)


class _Res(msgspec.Struct):
    name: str


class _ResourceList(msgspec.Struct):
    resources: list[_Res] = msgspec.field(default_factory=list)


def resource_names(listed: bytes) -> list[str]:
    """The resource names of a group version's discovery document (`/apis/<g>/<v>`)."""
    return [r.name for r in msgspec.json.decode(listed, type=_ResourceList).resources]


class _Getter(Protocol):
    async def get_path(self, path: str) -> bytes: ...


class _Creator(Protocol):
    async def request(
        self,
        verb: str,
        resource: Resource,
        *,
        namespace: str | None = None,
        query: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
    ) -> bytes: ...


class _Kept(msgspec.Struct):
    spec: dict[str, Any] = msgspec.field(default_factory=dict)


async def probe(client: _Creator, found: GangAPI, namespace: str) -> GangAPI:
    """`found` with the `FEATURES` the API server keeps on a PodGroup, each tried in a
    dry-run create in `namespace` (nothing is stored). A field the server drops, or a
    create it refuses (422: the field is forbidden while its gate is off; 403: the
    operator may not create PodGroups there, which its gangs will report), counts as off;
    any other error is raised (a transient one is retried by the caller)."""
    if not found.podgroups:
        return found
    kept: set[str] = set()
    for name, (_, fragment, field_name) in FEATURES.items():
        body = {
            "apiVersion": found.api_version,
            "kind": "PodGroup",
            "metadata": {"name": PROBE_NAME, "namespace": namespace},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}, **fragment},
        }
        try:
            raw = await client.request(
                "create",
                found.podgroup_resource,
                namespace=namespace,
                query={"dryRun": "All"},
                body=msgspec.json.encode(body),
                content_type="application/json",
            )
        except errors.ApiError as exc:
            if exc.status in (400, 403, 422):
                continue
            raise
        if field_name in msgspec.json.decode(raw, type=_Kept).spec:
            kept.add(name)
    # what discovery found (`COMPOSITE`) stays
    return dataclasses.replace(found, features=frozenset(kept) | (found.features - set(FEATURES)))


#: The DRA group version the operator makes claims in, and the resources it needs of it.
DRA_VERSION: Final = "resource.k8s.io/v1"
DRA_RESOURCES: Final = ("resourceclaims", "resourceclaimtemplates")
#: Kueue's API and the resources of it the operator reads (docs/kueue.md).
KUEUE_VERSION: Final = "kueue.x-k8s.io/v1beta2"
KUEUE_RESOURCES: Final = ("workloads", "localqueues")
#: The Eviction API (Kubernetes 1.37+, alpha) and what a responder needs of it.
EVICTION_VERSION: Final = "lifecycle.k8s.io/v1alpha1"
EVICTION_RESOURCES: Final = ("evictions", "evictions/status")
#: The subresource that resizes a running pod's containers (core/v1).
POD_RESIZE: Final = "pods/resize"


async def dra_served(client: _Getter) -> bool:
    """Whether the API server serves the DRA resources the operator makes (`DRA_VERSION`)."""
    listed = await served_resources(client, DRA_VERSION)
    return all(r in listed for r in DRA_RESOURCES)


async def kueue_served(client: _Getter) -> bool:
    """Whether the API server serves the Kueue resources the operator reads."""
    listed = await served_resources(client, KUEUE_VERSION)
    return all(r in listed for r in KUEUE_RESOURCES)


async def resize_served(client: _Getter) -> bool:
    """Whether the API server serves `pods/resize` (in-place resizes of CPU and memory)."""
    try:
        return POD_RESIZE in resource_names(await client.get_path("/api/v1"))
    except errors.NotFound:
        return False


async def evictions_served(client: _Getter) -> bool:
    """Whether the API server serves the Evictions a responder reads and reports to
    (`EVICTION_VERSION`: `evictions` and `evictions/status`)."""
    listed = await served_resources(client, EVICTION_VERSION)
    return all(r in listed for r in EVICTION_RESOURCES)


async def served_resources(client: _Getter, group_version: str) -> set[str]:
    """The resources the API server lists for `group_version` (`group/version`), none when
    it does not serve it."""
    try:
        return set(resource_names(await client.get_path(f"/apis/{group_version}")))
    except errors.NotFound:
        return set()


async def detect(client: _Getter) -> GangAPI:
    """Ask the API server (a `KubeClient`, or anything with its `get_path`)."""
    try:
        group = msgspec.json.decode(await client.get_path(f"/apis/{GROUP}"), type=_Group)
    except errors.NotFound:
        return GangAPI()
    versions = [v.version for v in group.versions]
    resources: dict[str, list[str]] = {}
    for version in versions:
        if version in PREFERENCE or version in COMPOSITE_VERSIONS:
            resources[version] = sorted(await served_resources(client, f"{GROUP}/{version}"))
    return interpret(versions, resources)
