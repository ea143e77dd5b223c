"""DRA claims: what a CliqueSet asks for (`spec.resourceClaims[]`, `CliqueSetClaim`, part
of the CliqueSet resource with its encoding rules and its CRD schema declared on the
fields), and a slim resource.k8s.io/v1 ResourceClaim or ResourceClaimTemplate, as the
CliqueSet controller keeps the ones it made (`controllers.claims`): their metadata is all
it reads."""

import enum
from typing import Annotated, Any, Final

import msgspec

from cliques.api import shapes
from cliques.api.cliquetemplate import MAX_CLIQUES, CliqueRef
from cliques.api.meta import ObjectMeta
from cliques.api.schema import DNS1123_LABEL, crd


class ClaimScope(enum.StrEnum):
    """`spec.resourceClaims[].scope`: which pods share one claim."""

    #: a claim per pod (a ResourceClaimTemplate)
    POD = "Pod"
    #: one claim per gang, shared by its pods
    GANG = "Gang"
    #: one claim for the whole set
    SET = "Set"


#: `spec.resourceClaims` entries, and Gang-scope ones (a PodGroup shares at most 4 claims,
#: `MaxPodGroupResourceClaims` in scheduling.k8s.io/v1beta1).
MAX_SET_CLAIMS: Final = 16
MAX_GANG_CLAIMS: Final = 4


class CliqueSetClaim(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A DRA ResourceClaim the operator gives the pods of some cliques (docs/gangs.md):
    one per pod (`Pod`), one per gang shared by its pods (`Gang`), or one for the whole set
    (`Set`). A container asks for it as `resources.claims: [{name: <name>}]`."""

    name: Annotated[
        str,
        crd(
            min_length=1,
            max_length=63,
            pattern=DNS1123_LABEL,
            description=(
                "The pod-level claim name (a DNS-1123 label), unique in the set and in its pod "
                "templates."
            ),
        ),
    ]
    scope: Annotated[
        ClaimScope,
        crd(
            description=(
                "Pod (a claim per pod), Gang (one per gang, shared by its pods) or Set (one for "
                "the set)."
            )
        ),
    ]
    cliques: Annotated[
        list[CliqueRef],
        crd(
            max_items=MAX_CLIQUES,
            list_type="set",
            description=(
                "The cliques whose pods get the claim; empty or left out means every clique."
            ),
        ),
    ] = msgspec.field(default_factory=list)
    template: Annotated[
        dict[str, Any],
        crd(
            shape=shapes.ClaimTemplate,
            description=(
                "A ResourceClaimTemplate's metadata and spec (resource.k8s.io/v1): the devices "
                "each claim asks for. Checked by the API server when the operator makes the "
                "claim objects."
            ),
        ),
    ]

    def applies_to(self, clique: str) -> bool:
        """Whether the pods of clique `clique` get this claim."""
        return not self.cliques or clique in self.cliques


class ClaimObject(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A ResourceClaim or ResourceClaimTemplate the operator made: its metadata."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
