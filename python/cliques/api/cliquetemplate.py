"""A clique template (`spec.template.cliques[]` of a CliqueSet) as a msgspec Struct: one
role of every gang, its pod count, readiness bar, start order and pod template.

Part of the CliqueSet resource (`cliqueset`), with the same encoding rules; its CRD schema
is declared on the fields (`schema.crd`) and generated from them (`crdgen`). Here too: the
names of templates (`TemplateName`, a clique's or a scaling group's; `CliqueRef`, a clique
named in a list) and the bounds of a clique template, which scaling groups, claims and
Cliques share.
"""

from typing import Annotated, Any, ClassVar, Final

import msgspec

from cliques.api import labels, policies, shapes
from cliques.api.policies import Autoscaling
from cliques.api.schema import DNS1123_LABEL, INVALID, Count, Rule, crd

#: Pods of one clique in one gang.
MAX_CLIQUE_PODS: Final = 1_000
#: Cliques in one gang template (and names in a list of cliques).
MAX_CLIQUES: Final = 16

#: The name of a clique (or scaling group) template: a DNS-1123 label short enough to be
#: part of Clique, pod and HPA names.
TemplateName = Annotated[
    str, crd(min_length=1, max_length=labels.MAX_CLIQUE_NAME_LENGTH, pattern=DNS1123_LABEL)
]
#: A reference to a clique template by name.
CliqueRef = Annotated[str, crd(max_length=labels.MAX_CLIQUE_NAME_LENGTH)]


class CliqueTemplate(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """One clique (role) of every gang: its pod count, readiness bar and pod template."""

    __crd__: ClassVar[msgspec.Meta] = crd(
        rules=[
            Rule(
                rule=(
                    "!has(self.minAvailable) || self.minAvailable <= "
                    "(has(self.replicas) ? self.replicas : 1)"
                ),
                message="minAvailable must be less than or equal to replicas",
                message_expression=(
                    "'minAvailable must be less than or equal to replicas in clique ' + self.name"
                ),
                field_path=".minAvailable",
                reason=INVALID,
            ),
            Rule(
                rule="!self.name.matches('(^|-)[0-9]+-')",
                message=(
                    "a clique name must not have a part made only of digits before a '-' "
                    "(like 'b-2-c'): names <set>-<gang>-<clique> would be ambiguous"
                ),
                message_expression=(
                    "'clique name ' + self.name + ' must not have a part made only of digits "
                    "before a dash (like b-2-c): names <set>-<gang>-<clique> would be ambiguous'"
                ),
                field_path=".name",
                reason=INVALID,
            ),
            Rule(
                rule="!has(self.startsAfter) || !(self.name in self.startsAfter)",
                message="startsAfter must not name the clique itself",
                message_expression=(
                    "'startsAfter of clique ' + self.name + ' must not name the clique itself'"
                ),
                field_path=".startsAfter",
                reason=INVALID,
            ),
        ]
    )

    name: Annotated[
        TemplateName,
        crd(
            description=(
                "The role name, unique in the gang: a DNS-1123 label of at most 20 characters "
                "(it is part of Clique names and pod hostnames)."
            )
        ),
    ]
    replicas: Annotated[
        Count,
        crd(
            maximum=MAX_CLIQUE_PODS,
            description="Pods of this clique in every gang (at most 1,000).",
        ),
    ] = 1
    min_available: (
        Annotated[
            Count,
            crd(
                description=(
                    "Ready pods the clique needs to count as available (and to let the cliques "
                    "that start after it start). Unset means replicas."
                )
            ),
        ]
        | None
    ) = None
    starts_after: Annotated[
        list[CliqueRef],
        crd(
            max_items=MAX_CLIQUES,
            list_type="set",
            description=(
                "Cliques of the same gang this one starts after (startupType Explicit only)."
            ),
        ),
    ] = msgspec.field(default_factory=list)
    template: Annotated[
        dict[str, Any],
        crd(
            shape=shapes.PodTemplate,
            description=(
                "The PodTemplateSpec of this clique's pods. Only metadata.labels, "
                "metadata.annotations and spec.containers are checked here; the rest is kept "
                "as written and checked by the API server when pods are made."
            ),
        ),
    ]
    autoscaling: (
        Annotated[
            Autoscaling,
            policies.autoscaling_of(
                "the clique",
                "pods",
                MAX_CLIQUE_PODS,
                "A HorizontalPodAutoscaler (autoscaling/v2) per gang on this clique's Clique, "
                "between minReplicas and maxReplicas pods (docs/scaling.md). While it is set, "
                "replicas is the initial pod count only. Not for a clique of a scaling group "
                "(autoscale the group instead).",
            ),
        ]
        | None
    ) = None

    @property
    def effective_min_available(self) -> int:
        """`min_available`, or `replicas` where it is not set."""
        return self.replicas if self.min_available is None else self.min_available
