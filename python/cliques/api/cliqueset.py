"""The CliqueSet resource (`cliques.dev/v1alpha1`) as msgspec Structs.

A CliqueSet is what a user writes: `spec.replicas` gangs, each made of the cliques (roles)
listed in `spec.template.cliques`. The CRD (`deploy/crds/cliquesets.cliques.dev.yaml`) is
generated from these Structs (`crdgen`, `RESOURCE`): its field names, types and defaults
are theirs, and what the API server checks beyond that is declared on them
(`schema.crd`). So a CliqueSet decoded from a manifest that the API server has not
defaulted yet reads the same as one read back from the server; encoding omits the fields
at their default, and the API server fills them in again.

What the API server refuses, and where:

- schema: types, enums, int32 minimums (no negative count), maxima (at most 10,000 gangs,
  1,000 pods per clique, 1,000 old revisions kept), clique names (DNS-1123 label, at most
  20 characters), unique clique names (listType=map), 1..16 cliques, a pod template with
  at least one container, containers unique by name, restartPolicy Always only;
  failurePolicy seconds and counts,
  placement topology keys (qualified names, as node label keys are); resourceClaims (at
  most 16, unique DNS-1123 names, scope Pod, Gang or Set, a template with a spec);
  scalingGroups (at most 8, unique clique-like names, 1..16 cliques each, at most 100
  instances); autoscaling (maxReplicas at least 1 and at most 1,000 pods for a clique, 100
  instances for a group; at most 16 metrics).
- CEL: the CliqueSet name (a DNS-1035 label of at most 52 characters, so the gang Service
  `<name>-<gang index>` is a valid Service name); minAvailable <= replicas; startsAfter
  only with startupType Explicit, never naming its own clique, only naming cliques of the
  template; at most 5,000 pods per gang, 10,000 Cliques and 100,000 pods per CliqueSet,
  counted as they are made (`sizes`: a clique of a scaling group once per instance, an
  instance count and a clique's pods at their autoscaling maxReplicas where higher); no
  clique or group name with a digits-only part before a '-' (set `a` clique `b-2-c` and
  set `a-1-b` clique `c` would both name a Clique `a-1-b-2-c`); restartBackoff
  initialSeconds <= maxSeconds; no label or annotation key of the operator's in a pod
  template, and at most 256 of each; at most 4 Gang-scope resourceClaims,
  resourceClaims[].cliques naming cliques of the template, no claim name that a pod
  template's own spec.resourceClaims uses; autoscaling minReplicas <= maxReplicas; a
  scaling group's cliques naming cliques of the template, each clique in one group at most,
  no autoscaling on a clique of a group, no group named as a clique (HPAs are named after
  both), and in a set with scaling groups no clique name ending in '-' and digits
  (instance Cliques are `<set>-<gang>-<clique>-<instance>`).

What only the controller can see (a startsAfter cycle, the bytes of pod templates the
Cliques would store, `controllers.base.bounds`) is reported as condition
Degraded/InvalidSpec, never refused by the API server.

A pod template stays a plain `dict[str, Any]`: the operator never interprets a PodSpec
beyond the few fields it injects, and the canonical template hash (`cliques.hashing`)
works on exactly the JSON the user wrote.

The spec is split by topic: the clique templates in `cliquetemplate`, the scaling groups'
templates in `scalinggroup` (with the CliqueScalingGroup object), the claims in `claim`,
the policies (update, gang scheduling, failures, placement, autoscaling) in `policies`,
the status in `cliqueset_status`; here are the spec and the object that hold them.

Neighbours: `meta` (ObjectMeta, Condition), `clique` (the per-gang children).
"""

import enum
from typing import Annotated, ClassVar, Final

import msgspec

from cliques.api import labels, sizes
from cliques.api.claim import MAX_GANG_CLAIMS, MAX_SET_CLAIMS, CliqueSetClaim
from cliques.api.cliqueset_status import CliqueSetStatus
from cliques.api.cliquetemplate import MAX_CLIQUES, CliqueTemplate
from cliques.api.meta import ListMeta, ObjectMeta
from cliques.api.policies import (
    FailurePolicy,
    GangScheduling,
    NodeDrain,
    Placement,
    UpdateStrategy,
)
from cliques.api.scalinggroup import MAX_SCALING_GROUPS, ScalingGroup
from cliques.api.schema import AGE, INVALID, Column, Count, Resource, Rule, crd


class StartupType(enum.StrEnum):
    """`spec.startupType`: the order the cliques of a gang start in."""

    #: every clique at once
    ANY_ORDER = "AnyOrder"
    #: each after the one before it in the template has minAvailable ready pods
    IN_ORDER = "InOrder"
    #: each after the cliques in its startsAfter
    EXPLICIT = "Explicit"


class PodReadiness(enum.StrEnum):
    """`spec.podReadiness`: what a pod's Ready condition says (docs/gangs.md)."""

    #: its containers are ready (the kubelet's own judgement)
    POD = "Pod"
    #: its containers are ready and its gang is whole: every pod carries the readiness gate
    #: `cliques.dev/gang-ready`, which the operator sets (`controllers.features.gang_ready`)
    GANG = "Gang"


class SubdomainPolicy(enum.StrEnum):
    """`spec.subdomainPolicy`: the layout of the headless Services (also recorded on a
    gang's Cliques, `labels.ANNOTATION_SUBDOMAIN_POLICY`)."""

    #: one Service named after the CliqueSet
    SHARED = "Shared"
    #: one Service `<name>-<gang>` per gang
    UNIQUE_PER_GANG = "UniquePerGang"


# The sizes the CRD allows (schema maxima and CEL rules, declared with them below): one
# object cannot ask the operator for unbounded work or memory. The bounds of a clique
# template are in `cliquetemplate` (MAX_CLIQUE_PODS, MAX_CLIQUES), of scaling groups in
# `scalinggroup`, of claims in `claim`; the labels and annotations of a pod template are
# bounded in `shapes` (MAX_TEMPLATE_LABELS, MAX_TEMPLATE_ANNOTATIONS), the failurePolicy
# seconds and restarts in `policies`.
MAX_GANGS: Final = 10_000
MAX_GANG_PODS: Final = 5_000
#: Cliques in one CliqueSet (gangs x the Cliques of a gang) and pods in one CliqueSet (gangs x
#: the pods of a gang), a gang's counted by `sizes`: CEL rules on `spec`, checked on a scale
#: through the subresource too.
MAX_SET_CLIQUES: Final = 10_000
MAX_SET_PODS: Final = 100_000
#: Old revisions of the gang template a set keeps by default (`spec.revisionHistoryLimit`,
#: as a StatefulSet's), and at most.
DEFAULT_REVISION_HISTORY_LIMIT: Final = 10
MAX_REVISION_HISTORY_LIMIT: Final = 1_000


class CliqueSetTemplate(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """The gang template: its cliques, in the order `InOrder` starts them, and the scaling
    groups that replicate some of them inside each gang."""

    __crd__: ClassVar[msgspec.Meta] = crd(
        rules=[
            Rule(
                rule=(
                    "self.cliques.all(c, !has(c.startsAfter) "
                    "|| c.startsAfter.all(s, self.cliques.exists(o, o.name == s)))"
                ),
                message=(
                    "every spec.template.cliques[].startsAfter entry must name a clique of "
                    "spec.template.cliques"
                ),
                field_path=".cliques",
                reason=INVALID,
            ),
            Rule(
                rule=f"{sizes.cel_gang_pods('self')} <= {MAX_GANG_PODS}",
                message=(
                    f"a gang may have at most {MAX_GANG_PODS} pods (each clique's replicas, or "
                    "autoscaling.maxReplicas where higher, times the instances of its scaling "
                    "group: replicas, or autoscaling.maxReplicas where higher)"
                ),
                message_expression=(
                    f"'a gang may have at most {MAX_GANG_PODS} pods: the replicas of each "
                    "clique (or autoscaling.maxReplicas where higher) times the instances of its "
                    "scaling group (replicas, or autoscaling.maxReplicas where higher) is "
                    f"%d'.format([{sizes.cel_gang_pods('self')}])"
                ),
                field_path=".cliques",
                reason=INVALID,
            ),
            Rule(
                rule=(
                    "!has(self.scalingGroups) || self.scalingGroups.all(g, "
                    "g.cliques.all(n, self.cliques.exists(c, c.name == n)))"
                ),
                message=(
                    "every spec.template.scalingGroups[].cliques entry must name a clique of "
                    "spec.template.cliques"
                ),
                message_expression=(
                    "'every spec.template.scalingGroups[].cliques entry must name a clique of "
                    "spec.template.cliques: scaling groups %s name cliques the template "
                    "lacks'.format([self.scalingGroups.filter(g, !g.cliques.all(n, "
                    "self.cliques.exists(c, c.name == n))).map(g, g.name)])"
                ),
                field_path=".scalingGroups",
                reason=INVALID,
            ),
            Rule(
                rule=(
                    "!has(self.scalingGroups) || self.cliques.all(c, "
                    "self.scalingGroups.filter(g, c.name in g.cliques).size() <= 1)"
                ),
                message=(
                    "a clique may be in at most one scaling group "
                    "(spec.template.scalingGroups[].cliques)"
                ),
                message_expression=(
                    "'a clique may be in at most one scaling group "
                    "(spec.template.scalingGroups[].cliques): cliques %s are in more than "
                    "one'.format([self.cliques.filter(c, self.scalingGroups.filter(g, "
                    "c.name in g.cliques).size() > 1).map(c, c.name)])"
                ),
                field_path=".scalingGroups",
                reason=INVALID,
            ),
            Rule(
                rule=(
                    "!has(self.scalingGroups) || self.scalingGroups.all(g, "
                    "!self.cliques.exists(c, c.name == g.name))"
                ),
                message=(
                    "a spec.template.scalingGroups[].name must not be the name of a clique of "
                    "spec.template.cliques (the operator names HorizontalPodAutoscalers after "
                    "both)"
                ),
                message_expression=(
                    "'spec.template.scalingGroups[].name %s must not be the name of a clique of "
                    "spec.template.cliques (the operator names HorizontalPodAutoscalers after "
                    "both)'.format([self.scalingGroups.filter(g, self.cliques.exists(c, "
                    "c.name == g.name)).map(g, g.name)])"
                ),
                field_path=".scalingGroups",
                reason=INVALID,
            ),
            Rule(
                rule=(
                    "!has(self.scalingGroups) || self.cliques.all(c, !has(c.autoscaling) "
                    "|| !self.scalingGroups.exists(g, c.name in g.cliques))"
                ),
                message=(
                    "spec.template.cliques[].autoscaling is not allowed on a clique of a "
                    "scaling group: autoscale the group "
                    "(spec.template.scalingGroups[].autoscaling)"
                ),
                message_expression=(
                    "'spec.template.cliques[].autoscaling is not allowed on a clique of a "
                    "scaling group: autoscale the group (spec.template.scalingGroups[]"
                    ".autoscaling), not cliques %s'.format([self.cliques.filter(c, "
                    "has(c.autoscaling) && self.scalingGroups.exists(g, c.name in "
                    "g.cliques)).map(c, c.name)])"
                ),
                field_path=".cliques",
                reason=INVALID,
            ),
            Rule(
                rule=(
                    "!has(self.scalingGroups) || size(self.scalingGroups) == 0 "
                    "|| self.cliques.all(c, !c.name.matches('-[0-9]+$'))"
                ),
                message=(
                    "with spec.template.scalingGroups, a spec.template.cliques[].name must not "
                    "end in a '-' and digits: the Cliques of a group instance are named "
                    "<set>-<gang>-<clique>-<instance>"
                ),
                message_expression=(
                    "'with spec.template.scalingGroups, a spec.template.cliques[].name must not "
                    "end in a dash and digits (the Cliques of a group instance are named "
                    "<set>-<gang>-<clique>-<instance>): %s'.format([self.cliques.filter(c, "
                    "c.name.matches('-[0-9]+$')).map(c, c.name)])"
                ),
                field_path=".cliques",
                reason=INVALID,
            ),
        ]
    )

    cliques: Annotated[
        list[CliqueTemplate],
        crd(
            min_items=1,
            max_items=MAX_CLIQUES,
            list_type="map",
            list_map_keys=["name"],
            description="The cliques (roles) of every gang; InOrder starts them in this order.",
        ),
    ]
    scaling_groups: Annotated[
        list[ScalingGroup],
        crd(
            max_items=MAX_SCALING_GROUPS,
            list_type="map",
            list_map_keys=["name"],
            description=(
                "Cliques replicated together inside each gang (docs/scaling.md): every gang "
                "has replicas instances of a group, each a sub-gang with its own Cliques "
                "(<set>-<gang>-<clique>-<instance>), pods and leader. Each gang's instance "
                "count is its CliqueScalingGroup's spec.replicas (<set>-<gang>-<group>, with a "
                "scale subresource for kubectl scale and HPAs); replicas here is what a new "
                "gang starts with, and what the gangs follow when it changes (unless "
                "autoscaling is set)."
            ),
        ),
    ] = msgspec.field(default_factory=list)


#: `spec.replicas` as a CEL expression (the CRD's default where it is absent).
_GANGS: Final = "(has(self.replicas) ? self.replicas : 1)"
#: The Cliques and the pods of one gang as CEL expressions on `spec` (`sizes`).
_GANG_CLIQUES: Final = sizes.cel_gang_cliques("self.template")
_GANG_PODS: Final = sizes.cel_gang_pods("self.template")


class CliqueSetSpec(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """The desired state of a CliqueSet."""

    __crd__: ClassVar[msgspec.Meta] = crd(
        description="The desired state of a CliqueSet.",
        rules=[
            Rule(
                rule=(
                    "(has(self.startupType) && self.startupType == 'Explicit') || "
                    "self.template.cliques.all(c, !has(c.startsAfter) || "
                    "size(c.startsAfter) == 0)"
                ),
                message=(
                    "spec.template.cliques[].startsAfter is allowed only when spec.startupType "
                    "is Explicit"
                ),
                message_expression=(
                    "'spec.template.cliques[].startsAfter is allowed only when spec.startupType "
                    "is Explicit (it is ' + (has(self.startupType) ? self.startupType : "
                    "'AnyOrder') + ')'"
                ),
                field_path=".startupType",
                reason=INVALID,
            ),
            Rule(
                rule=f"{_GANGS} * {_GANG_CLIQUES} <= {MAX_SET_CLIQUES}",
                message=(
                    f"a CliqueSet may have at most {MAX_SET_CLIQUES} Cliques (spec.replicas x "
                    "the Cliques of a gang: one per clique, one per instance of its scaling "
                    "group for a clique of a group)"
                ),
                message_expression=(
                    f"'a CliqueSet may have at most {MAX_SET_CLIQUES} Cliques: spec.replicas x "
                    "the Cliques of a gang (one per clique, one per instance of its scaling "
                    "group: replicas, or autoscaling.maxReplicas where higher) is %d x %d = "
                    f"%d'.format([{_GANGS[1:-1]}, {_GANG_CLIQUES}, {_GANGS} * {_GANG_CLIQUES}])"
                ),
                field_path=".replicas",
                reason=INVALID,
            ),
            Rule(
                rule=f"{_GANGS} * {_GANG_PODS} <= {MAX_SET_PODS}",
                message=(
                    f"a CliqueSet may have at most {MAX_SET_PODS} pods (spec.replicas x the pods "
                    "of a gang, counting autoscaling.maxReplicas and scaling group instances)"
                ),
                message_expression=(
                    f"'a CliqueSet may have at most {MAX_SET_PODS} pods: spec.replicas x the pods "
                    "of a gang (the replicas of each clique, or autoscaling.maxReplicas where "
                    "higher, times the instances of its scaling group) is %d x %d = "
                    f"%d'.format([{_GANGS[1:-1]}, {_GANG_PODS}, {_GANGS} * {_GANG_PODS}])"
                ),
                field_path=".replicas",
                reason=INVALID,
            ),
            Rule(
                rule=(
                    "!has(self.resourceClaims) || "
                    f"self.resourceClaims.filter(c, c.scope == 'Gang').size() <= {MAX_GANG_CLAIMS}"
                ),
                message=(
                    f"at most {MAX_GANG_CLAIMS} spec.resourceClaims may have scope Gang (a "
                    f"PodGroup shares at most {MAX_GANG_CLAIMS} claims)"
                ),
                field_path=".resourceClaims",
                reason=INVALID,
            ),
            Rule(
                rule=(
                    "!has(self.resourceClaims) || self.resourceClaims.all(c, !has(c.cliques) "
                    "|| c.cliques.all(n, self.template.cliques.exists(q, q.name == n)))"
                ),
                message=(
                    "every spec.resourceClaims[].cliques entry must name a clique of "
                    "spec.template.cliques"
                ),
                field_path=".resourceClaims",
                reason=INVALID,
            ),
            Rule(
                rule=(
                    "!has(self.resourceClaims) || self.template.cliques.all(q, "
                    "!has(q.template.spec.resourceClaims) || "
                    "q.template.spec.resourceClaims.all(r, "
                    "!self.resourceClaims.exists(c, c.name == r.name)))"
                ),
                message=(
                    "a spec.resourceClaims[].name must not be the name of a claim in a clique's "
                    "pod template (spec.template.cliques[].template.spec.resourceClaims)"
                ),
                message_expression=(
                    "'spec.resourceClaims names %s are also claims of a clique pod template "
                    "(spec.template.cliques[].template.spec.resourceClaims): pick other "
                    "names'.format([self.resourceClaims.filter(c, self.template.cliques.exists("
                    "q, has(q.template.spec.resourceClaims) && "
                    "q.template.spec.resourceClaims.exists(r, r.name == c.name))).map(c, "
                    "c.name)])"
                ),
                field_path=".resourceClaims",
                reason=INVALID,
            ),
        ],
    )

    replicas: Annotated[
        Count,
        crd(
            maximum=MAX_GANGS,
            description=("Number of gangs (at most 10,000). The scale subresource points here."),
        ),
    ] = 1
    startup_type: Annotated[
        StartupType,
        crd(
            description=(
                "AnyOrder starts every clique of a gang at once; InOrder starts each clique "
                "after the one before it in spec.template.cliques has minAvailable ready pods; "
                "Explicit starts each clique after the cliques in its startsAfter."
            )
        ),
    ] = StartupType.ANY_ORDER
    pod_readiness: Annotated[
        PodReadiness,
        crd(
            description=(
                "What a pod's Ready condition says. Pod: its containers are ready. Gang: its "
                "containers are ready and its gang is whole (every pod of every clique of the "
                "gang present with its containers ready, in the gang's current template and "
                "restart): every pod carries the readiness gate cliques.dev/gang-ready, which "
                "the operator sets, so Services route only to whole gangs. Changing it rolls "
                "the set's pods (a readiness gate cannot be added to a running pod)."
            )
        ),
    ] = PodReadiness.POD
    update_strategy: Annotated[
        UpdateStrategy, crd(description="How a template change rolls out, gang by gang.")
    ] = msgspec.field(default_factory=UpdateStrategy)
    headless_service: Annotated[
        bool,
        crd(
            description=(
                "Headless Services that give every pod a stable DNS name "
                "(<hostname>.<service>.<namespace>.svc), laid out by subdomainPolicy."
            )
        ),
    ] = True
    #: How the headless Services are laid out: `Shared`, one for the whole CliqueSet, or
    #: `UniquePerGang`. None (left out): what the CliqueSet's gangs already use, `Shared`
    #: for a CliqueSet without gangs (`controllers.subdomains`). The CRD has no default
    #: for it on purpose: the API server would apply one to stored CliqueSets too.
    subdomain_policy: (
        Annotated[
            SubdomainPolicy,
            crd(
                description=(
                    "The layout of the headless Services. Shared: one Service named after the "
                    "CliqueSet, pod hostnames <clique>-<gang>-<pod index>. UniquePerGang: one "
                    "Service <name>-<gang> per gang, pod hostnames <clique>-<pod index>. A gang "
                    "keeps the layout it was created with: a change applies to gangs created "
                    "afterwards and never recreates pods. Left out: the layout the CliqueSet's "
                    "gangs already use, Shared for a CliqueSet without gangs (docs/operator.md)."
                )
            ),
        ]
        | None
    ) = None
    gang_scheduling: Annotated[
        GangScheduling,
        crd(description="How the pods of a gang are scheduled all-or-nothing (docs/gangs.md)."),
    ] = msgspec.field(default_factory=GangScheduling)
    failure_policy: Annotated[
        FailurePolicy, crd(description="What happens to a gang that stays below minAvailable.")
    ] = msgspec.field(default_factory=FailurePolicy)
    node_drain: Annotated[
        NodeDrain,
        crd(
            description=(
                "What a drained node does to the gangs: they move whole, and piecemeal "
                "evictions wait for them (docs/gangs.md)."
            )
        ),
    ] = msgspec.field(default_factory=NodeDrain)
    placement: (
        Annotated[
            Placement,
            crd(
                description=(
                    "Where a gang's pods go, compiled into pod affinity and anti-affinity added "
                    "to each pod's own (docs/gangs.md)."
                )
            ),
        ]
        | None
    ) = None
    resource_claims: Annotated[
        list[CliqueSetClaim],
        crd(
            max_items=MAX_SET_CLAIMS,
            list_type="map",
            list_map_keys=["name"],
            description=(
                "DRA claims the operator adds to the pods of some cliques (docs/gangs.md). A "
                "container asks for one with resources.claims [{name: <name>}]. Scope Pod: a "
                "claim per pod (a ResourceClaimTemplate); Gang: one claim per gang, shared by "
                "its pods (through the gang's PodGroup where the server has "
                "DRAWorkloadResourceClaims, else a ResourceClaim per gang); Set: one claim "
                "shared by every pod of the set. A change of a claim rolls the pods that get "
                "it; a change of a Gang claim makes each gang again whole."
            ),
        ),
    ] = msgspec.field(default_factory=list)
    revision_history_limit: Annotated[
        Count,
        crd(
            maximum=MAX_REVISION_HISTORY_LIMIT,
            description=(
                "How many old revisions of the gang template the set keeps as "
                "ControllerRevisions besides the current one, for rollout history and undo "
                "(docs/operator.md)."
            ),
        ),
    ] = DEFAULT_REVISION_HISTORY_LIMIT
    template: Annotated[CliqueSetTemplate, crd(description="The gang template.")]

    def clique(self, name: str) -> CliqueTemplate | None:
        """The clique template called `name`, or None."""
        for clique in self.template.cliques:
            if clique.name == name:
                return clique
        return None


class CliqueSet(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A CliqueSet object. `api_version` and `kind` are filled in when absent."""

    __crd__: ClassVar[msgspec.Meta] = crd(
        rules=[
            Rule(
                rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
                message=(
                    "metadata.name must be a DNS-1035 label (lower-case letters, digits and "
                    "'-', starting with a letter): it names the gangs' Services"
                ),
                reason=INVALID,
            ),
            Rule(
                rule=f"size(self.metadata.name) <= {labels.MAX_CLIQUESET_NAME_LENGTH}",
                message=(
                    "metadata.name must be at most "
                    f"{labels.MAX_CLIQUESET_NAME_LENGTH} characters, so that the gang "
                    f"Service name <name>-<gang index> fits in {labels.MAX_LABEL_LENGTH}"
                ),
                reason=INVALID,
            ),
        ]
    )

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CliqueSetSpec
    status: CliqueSetStatus | None = None

    def __post_init__(self) -> None:
        # Defaults of "" and a fill-in here, rather than defaults of the real values: with
        # omit_defaults a field at its default is left out, and an object must always
        # carry its apiVersion and kind. List items may arrive without them.
        if not self.api_version:
            self.api_version = labels.API_VERSION
        if not self.kind:
            self.kind = labels.KIND_CLIQUESET


class CliqueSetList(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """The body of a LIST of CliqueSets."""

    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[CliqueSet] = msgspec.field(default_factory=list)


RESOURCE: Final = Resource(
    root=CliqueSet,
    kind=labels.KIND_CLIQUESET,
    plural="cliquesets",
    short_names=("cqs",),
    description="A set of identical gangs of pods; each gang is one Clique per clique template.",
    columns=(
        Column(
            name="Replicas",
            type="integer",
            description="Desired number of gangs.",
            json_path=".spec.replicas",
        ),
        Column(
            name="Ready",
            type="integer",
            description="Gangs whose every clique has minAvailable ready pods.",
            json_path=".status.readyReplicas",
        ),
        Column(
            name="Updated",
            type="integer",
            description="Gangs running the current template.",
            json_path=".status.updatedReplicas",
        ),
        Column(
            name="Available",
            type="integer",
            description="Gangs ready and not being rolled.",
            json_path=".status.availableReplicas",
        ),
        Column(
            name="Status",
            type="string",
            description="Reason of the Available condition.",
            json_path='.status.conditions[?(@.type=="Available")].reason',
        ),
        Column(name="Startup", type="string", priority=1, json_path=".spec.startupType"),
        AGE,
    ),
)
