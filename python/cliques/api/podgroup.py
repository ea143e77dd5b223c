"""A slim scheduling.k8s.io PodGroup (v1alpha2 and v1beta1 read alike): what the operator
compares with the gang it schedules, its gang policy's `minCount` and the DRA claims its
pods share (`resourceClaims`); the fields it cannot
change are compared through a hash it writes on the object (`controllers.podgroups`).

On v1beta1 a PodGroup may be the child of a CompositePodGroup (`parentCompositePodGroupName`,
Kubernetes 1.37 alpha); the operator reads what it needs to make a sibling of it (its
parent, Workload template, priority class and disruption mode,
`controllers.gang_trees`). A `CompositePodGroup` (v1alpha3) reads the same way: its
metadata and its parent are all the operator reads of it (its spec is immutable, and
hashed into its name)."""

from __future__ import annotations

from typing import Any

import msgspec

from cliques.api.meta import ObjectMeta


class GangPolicy(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    min_count: int = 0


class SchedulingPolicy(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    gang: GangPolicy | None = None


class PodGroupClaim(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A claim the group's pods share (`DRAWorkloadResourceClaims`)."""

    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class WorkloadRef(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """The v1beta1 link to a Workload's template."""

    workload_name: str = ""
    template_name: str = ""


class PodGroupSpec(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    scheduling_policy: SchedulingPolicy = msgspec.field(default_factory=SchedulingPolicy)
    resource_claims: list[PodGroupClaim] = msgspec.field(default_factory=list)
    #: the CompositePodGroup it is a child of ("" for none; v1beta1, immutable)
    parent_composite_pod_group_name: str = ""
    workload_ref: WorkloadRef | None = None
    priority_class_name: str = ""
    #: as served: an object on v1beta1 (`{all: {}}`), a string on v1alpha2
    disruption_mode: dict[str, Any] | str | None = None


class PodGroup(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A PodGroup: metadata and its gang policy."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodGroupSpec = msgspec.field(default_factory=PodGroupSpec)

    @property
    def min_count(self) -> int:
        """The gang policy's minCount (0 with the basic policy)."""
        gang = self.spec.scheduling_policy.gang
        return gang.min_count if gang is not None else 0

    @property
    def claim_templates(self) -> tuple[tuple[str, str], ...]:
        """(name, ResourceClaimTemplate) of the claims it lists by template, in order."""
        return tuple(
            (c.name, c.resource_claim_template_name)
            for c in self.spec.resource_claims
            if c.resource_claim_template_name is not None
        )


class CompositePodGroup(PodGroup):
    """A scheduling.k8s.io/v1alpha3 CompositePodGroup, read as a PodGroup: its metadata and
    its parent (`spec.parentCompositePodGroupName`); its policy (`minGroupCount`) is not
    read. A subclass, so that a set's PodGroups and composites can be listed together
    and told apart (`isinstance`)."""
