"""The CliqueScalingGroup resource (`cliques.dev/v1alpha1`, short `cqsg`) as msgspec Structs.

One per gang and scaling group of a CliqueSet, named `<cliqueset>-<gang index>-<group>` and
owned by the CliqueSet: the scale target of that group in that gang. Its `spec.replicas` is
how many instances of the group the gang has; the scale subresource (`kubectl scale`, an
HPA, KEDA) writes it, the CliqueSet controller makes the instances and reports them in the
status, with the label selector of their pods (`status.selector`). Mirrors
`deploy/crds/cliquescalinggroups.cliques.dev.yaml`; the same encoding rules as `cliqueset`.
"""

from typing import Final

import msgspec

from cliques.api import labels
from cliques.api.meta import ListMeta, ObjectMeta

KIND: Final = labels.KIND_SCALING_GROUP


class CliqueScalingGroupSpec(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """How many instances of a scaling group one gang has."""

    #: the scaling group's name in the CliqueSet's template
    group_name: str
    gang_index: int
    #: instances of the group in this gang (the scale subresource's replicas)
    replicas: int = 1
    #: instances the gang needs available (the template's, copied; at most `replicas`)
    min_available: int = 1


class CliqueScalingGroupStatus(msgspec.Struct, kw_only=True, rename="camel"):
    """The instances of the group in this gang. Every field is encoded."""

    observed_generation: int = 0
    #: instances that exist (every Clique of the instance made)
    replicas: int = 0
    #: instances whose every Clique is Ready
    ready_replicas: int = 0
    #: instances on the set's current templates
    updated_replicas: int = 0
    #: the label selector of the group's pods in this gang, for the scale subresource
    selector: str = ""


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
