"""Which gang-scheduling API the cluster serves, read from the discovery API.

    scheduling.k8s.io/v1alpha1  workloads   Kubernetes 1.35 (GenericWorkload gate and
                                            --runtime-config): supported
    scheduling.k8s.io/v1alpha2  podgroups   Kubernetes 1.36: found and reported, not
                                            supported by this version of cliques

`detect` asks the API server (`GET /apis/scheduling.k8s.io`, then each alpha version's
resource list); `interpret` is the pure part. Discovery shows what the API server serves,
not whether kube-scheduler runs with the GangScheduling gate: a cluster that serves the
Workload API must also run its scheduler with that gate (docs/gangs.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

import msgspec

from cliques.kube import errors

GROUP: Final = "scheduling.k8s.io"
WORKLOAD_VERSION: Final = "v1alpha1"
WORKLOAD_RESOURCE: Final = "workloads"
#: Versions and resources known to exist and not supported here: reported, never used.
UNSUPPORTED: Final[Mapping[str, str]] = {"v1alpha2": "podgroups"}


@dataclass(frozen=True)
class GangAPI:
    """What the cluster serves for gang scheduling."""

    #: `scheduling.k8s.io/v1alpha1` `workloads` is served (the backend cliques supports).
    workloads: bool
    #: Every group version the API server lists for scheduling.k8s.io.
    versions: tuple[str, ...] = ()
    #: `<group>/<version> <resource>` served but not supported by this version of cliques.
    unsupported: tuple[str, ...] = field(default=())

    def describe(self) -> str:
        """One line for a log or a condition message."""
        if self.workloads:
            found = f"{GROUP}/{WORKLOAD_VERSION} {WORKLOAD_RESOURCE}"
        elif self.versions:
            found = f"{GROUP} serves {', '.join(self.versions)} but no {WORKLOAD_VERSION} "
            found += WORKLOAD_RESOURCE
        else:
            found = f"no {GROUP} API group"
        if self.unsupported:
            found += f" ({', '.join(self.unsupported)}: not supported by this version)"
        return found


def interpret(group_versions: Sequence[str], resources: Mapping[str, Sequence[str]]) -> GangAPI:
    """From the versions of scheduling.k8s.io and the resource names of each version."""
    workloads = WORKLOAD_RESOURCE in resources.get(WORKLOAD_VERSION, ())
    unsupported = tuple(
        f"{GROUP}/{version} {resource}"
        for version, resource in UNSUPPORTED.items()
        if resource in resources.get(version, ())
    )
    return GangAPI(workloads, tuple(group_versions), unsupported)


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


async def detect(client: _Getter) -> GangAPI:
    """Ask the API server (a `KubeClient`, or anything with its `get_path`)."""
    try:
        group = msgspec.json.decode(await client.get_path(f"/apis/{GROUP}"), type=_Group)
    except errors.NotFound:
        return GangAPI(False)
    versions = [v.version for v in group.versions]
    resources: dict[str, list[str]] = {}
    for version in versions:
        if version != WORKLOAD_VERSION and version not in UNSUPPORTED:
            continue
        try:
            listed = await client.get_path(f"/apis/{GROUP}/{version}")
        except errors.NotFound:
            continue
        resources[version] = resource_names(listed)
    return interpret(versions, resources)
