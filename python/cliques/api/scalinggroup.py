"""The CliqueScalingGroup resource (`cliques.dev/v1alpha1`, short `cqsg`) as msgspec Structs.

One per gang and scaling group of a CliqueSet, named `<cliqueset>-<gang index>-<group>` and
owned by the CliqueSet: the scale target of that group in that gang. Its `spec.replicas` is
how many instances of the group the gang has; the scale subresource (`kubectl scale`, an
HPA, KEDA) writes it, the CliqueSet controller makes the instances and reports them in the
status, with the label selector of their pods (`status.selector`). Its CRD is generated
from these Structs (`crdgen`, `RESOURCE`); the same encoding rules as `cliqueset`.

The group's template in a CliqueSet (`spec.template.scalingGroups[]`, `ScalingGroup`) is
here too, with the bounds both share: part of the CliqueSet's CRD, not of this one.
"""

from typing import Annotated, ClassVar, Final

import msgspec

from cliques.api import labels, policies
from cliques.api.cliquetemplate import MAX_CLIQUES, CliqueRef, TemplateName
from cliques.api.meta import ListMeta, ObjectMeta
from cliques.api.policies import Autoscaling
from cliques.api.schema import (
    AGE,
    INVALID,
    Column,
    Count,
    Count64,
    Resource,
    Rule,
    crd,
    immutable,
)

KIND: Final = labels.KIND_SCALING_GROUP

#: Scaling groups in one gang template, and instances of one group in one gang.
MAX_SCALING_GROUPS: Final = 8
MAX_GROUP_INSTANCES: Final = 100


class ScalingGroup(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """Cliques replicated together inside each gang (docs/scaling.md): every gang has
    `replicas` instances of them, each a sub-gang with its own index, Cliques, pods and
    leader. Each gang's instance count is its CliqueScalingGroup's `spec.replicas` (the
    scale subresource: `kubectl scale`, an HPA); `replicas` here is what a new gang starts
    with, and what the gangs follow when it changes (unless `autoscaling` is set)."""

    __crd__: ClassVar[msgspec.Meta] = crd(
        rules=[
            Rule(
                rule=(
                    "(has(self.minAvailable) ? self.minAvailable : 1) <= "
                    "(has(self.replicas) ? self.replicas : 1)"
                ),
                message="minAvailable must be less than or equal to replicas in a scaling group",
                message_expression=(
                    "'minAvailable must be less than or equal to replicas in scaling group ' "
                    "+ self.name"
                ),
                field_path=".minAvailable",
                reason=INVALID,
            ),
            Rule(
                rule="!self.name.matches('(^|-)[0-9]+-')",
                message=(
                    "a scaling group name must not have a part made only of digits before a "
                    "'-' (like 'b-2-c'): names <set>-<gang>-<group> would be ambiguous"
                ),
                message_expression=(
                    "'scaling group name ' + self.name + ' must not have a part made only of "
                    "digits before a dash (like b-2-c): names <set>-<gang>-<group> would be "
                    "ambiguous'"
                ),
                field_path=".name",
                reason=INVALID,
            ),
        ]
    )

    name: Annotated[
        TemplateName,
        crd(
            description=(
                "The group name, unique in the gang and not the name of a clique: a DNS-1123 "
                "label of at most 20 characters (it is part of the CliqueScalingGroup and HPA "
                "names)."
            )
        ),
    ]
    #: the clique templates of each instance, in the order the template lists them
    cliques: Annotated[
        list[CliqueRef],
        crd(
            min_items=1,
            max_items=MAX_CLIQUES,
            list_type="set",
            description=(
                "The clique templates of each instance (names of spec.template.cliques, each "
                "in one group at most)."
            ),
        ),
    ]
    replicas: Annotated[
        Count,
        crd(
            maximum=MAX_GROUP_INSTANCES,
            description="Instances of the group a new gang starts with (at most 100).",
        ),
    ] = 1
    min_available: Annotated[
        Count, crd(description="Available instances a gang needs to count as available.")
    ] = 1
    autoscaling: (
        Annotated[
            Autoscaling,
            policies.autoscaling_of(
                "the group",
                "instances",
                MAX_GROUP_INSTANCES,
                "A HorizontalPodAutoscaler (autoscaling/v2) per gang on its "
                "CliqueScalingGroup, between minReplicas and maxReplicas instances "
                "(docs/scaling.md). While it is set, replicas is the initial instance count "
                "only.",
            ),
        ]
        | None
    ) = None


class CliqueScalingGroupSpec(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """How many instances of a scaling group one gang has."""

    __crd__: ClassVar[msgspec.Meta] = crd(
        description="How many instances of a scaling group one gang has.",
        rules=[
            # On spec, so that a write through the scale subresource is checked too:
            # kubectl scale (or an HPA) cannot go below minAvailable.
            Rule(
                rule=(
                    "(has(self.replicas) ? self.replicas : 1) >= "
                    "(has(self.minAvailable) ? self.minAvailable : 1)"
                ),
                message=(
                    "spec.replicas must be at least spec.minAvailable: kubectl scale (the scale "
                    "subresource) cannot go below minAvailable"
                ),
                message_expression=(
                    "'spec.replicas must be at least spec.minAvailable (%d): kubectl scale (the "
                    "scale subresource) cannot go below minAvailable'.format("
                    "[has(self.minAvailable) ? self.minAvailable : 1])"
                ),
                field_path=".replicas",
                reason=INVALID,
            )
        ],
    )

    group_name: Annotated[
        TemplateName,
        crd(
            description="The scaling group's name in the CliqueSet's template.",
            rules=[immutable("spec.groupName")],
        ),
    ]
    gang_index: Annotated[
        Count,
        crd(
            description="The index of the gang this group's instances belong to.",
            rules=[immutable("spec.gangIndex")],
        ),
    ]
    replicas: Annotated[
        Count,
        crd(
            maximum=MAX_GROUP_INSTANCES,
            description=(
                "Instances of the group in this gang (at most 100). The scale subresource "
                "points here."
            ),
        ),
    ] = 1
    min_available: Annotated[
        Count,
        crd(
            description=(
                "Instances the gang needs available (the template's, copied); replicas may "
                "not go below it."
            )
        ),
    ] = 1


class CliqueScalingGroupStatus(msgspec.Struct, kw_only=True, rename="camel"):
    """The instances of the group in this gang. Every field is encoded."""

    __crd__: ClassVar[msgspec.Meta] = crd(
        description=(
            "The instances of the group in this gang, computed by the CliqueSet controller."
        )
    )

    observed_generation: Count64 = 0
    replicas: Annotated[
        Count, crd(description="Instances that exist (every Clique of the instance made).")
    ] = 0
    ready_replicas: Annotated[Count, crd(description="Instances whose every Clique is Ready.")] = 0
    updated_replicas: Annotated[
        Count, crd(description="Instances on the CliqueSet's current templates.")
    ] = 0
    selector: Annotated[
        str,
        crd(
            description=(
                "The label selector of the group's pods in this gang, for the scale subresource."
            )
        ),
    ] = ""


class CliqueScalingGroup(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A CliqueScalingGroup object. `api_version` and `kind` are filled in when absent."""

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CliqueScalingGroupSpec
    status: CliqueScalingGroupStatus | None = None

    def __post_init__(self) -> None:
        # See CliqueSet.__post_init__: apiVersion and kind must survive omit_defaults.
        if not self.api_version:
            self.api_version = labels.API_VERSION
        if not self.kind:
            self.kind = KIND


class CliqueScalingGroupList(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """The body of a LIST of CliqueScalingGroups."""

    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[CliqueScalingGroup] = msgspec.field(default_factory=list)


RESOURCE: Final = Resource(
    root=CliqueScalingGroup,
    kind=KIND,
    plural="cliquescalinggroups",
    short_names=("cqsg",),
    description=(
        "The instances of one scaling group in one gang of a CliqueSet; the group's scale target."
    ),
    columns=(
        Column(
            name="Replicas",
            type="integer",
            description="Desired number of instances of the group in this gang.",
            json_path=".spec.replicas",
        ),
        Column(
            name="Ready",
            type="integer",
            description="Instances whose every Clique is Ready.",
            json_path=".status.readyReplicas",
        ),
        AGE,
    ),
)
