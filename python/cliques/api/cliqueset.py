"""The CliqueSet resource (`cliques.dev/v1alpha1`) as msgspec Structs.

A CliqueSet is what a user writes: `spec.replicas` gangs, each made of the cliques (roles)
listed in `spec.template.cliques`. The Structs mirror the CRD in
`deploy/crds/cliquesets.cliques.dev.yaml` field for field, with the same defaults, so a
CliqueSet decoded from a manifest that the API server has not defaulted yet reads the same
as one read back from the server; encoding omits the fields at their default, and the API
server fills them in again.

A pod template stays a plain `dict[str, Any]`: the operator never interprets a PodSpec
beyond the few fields it injects, and the canonical template hash (`cliques.hashing`)
works on exactly the JSON the user wrote.

Status Structs encode every field, zeros included: whichever way a controller writes the
status (a replace, a merge patch, a server-side apply), a count that falls to 0 is written
as 0 and not left at its old value.

Neighbours: `meta` (ObjectMeta, Condition), `clique` (the per-gang children).
"""

from typing import Any, Final, Literal

import msgspec

from cliques.api import labels
from cliques.api.meta import Condition, ListMeta, ObjectMeta

StartupType = Literal["AnyOrder", "InOrder", "Explicit"]
UpdateStrategyType = Literal["RollingUpdate", "Recreate"]
InPlacePolicy = Literal["Never", "IfPossible"]
GangSchedulingBackend = Literal["Auto", "Workload", "None"]
GangDisruption = Literal["Gang", "Pod"]
GangRestartPolicy = Literal["RecreateGang", "None"]
PackMode = Literal["Required", "Preferred"]
SubdomainPolicy = Literal["Shared", "UniquePerGang"]
ClaimScope = Literal["Pod", "Gang", "Set"]

STARTUP_ANY_ORDER: Final = "AnyOrder"
STARTUP_IN_ORDER: Final = "InOrder"
STARTUP_EXPLICIT: Final = "Explicit"

UPDATE_ROLLING: Final = "RollingUpdate"
UPDATE_RECREATE: Final = "Recreate"
IN_PLACE_NEVER: Final = "Never"
IN_PLACE_IF_POSSIBLE: Final = "IfPossible"

RESTART_RECREATE_GANG: Final = "RecreateGang"
RESTART_NONE: Final = "None"

SUBDOMAIN_SHARED: Final = "Shared"
SUBDOMAIN_PER_GANG: Final = "UniquePerGang"

SCOPE_POD: Final = "Pod"
SCOPE_GANG: Final = "Gang"
SCOPE_SET: Final = "Set"

PACK_REQUIRED: Final = "Required"
PACK_PREFERRED: Final = "Preferred"

# The condition types a CliqueSet reports, and the reasons the controllers give.
CONDITION_AVAILABLE: Final = "Available"
CONDITION_PROGRESSING: Final = "Progressing"
CONDITION_DEGRADED: Final = "Degraded"
REASON_INVALID_SPEC: Final = "InvalidSpec"

# The sizes the CRD allows (schema maxima and a CEL rule): one object cannot ask the
# operator for unbounded work or memory. tests/unit/test_api_crds.py ties them to the CRD.
MAX_GANGS: Final = 10_000
MAX_CLIQUE_PODS: Final = 1_000
MAX_GANG_PODS: Final = 5_000
#: Cliques in one CliqueSet (gangs x clique templates) and pods in one CliqueSet (gangs x the
#: pods of a gang): CEL rules on `spec`, checked on a scale through the subresource too.
MAX_SET_CLIQUES: Final = 10_000
MAX_SET_PODS: Final = 100_000
#: Labels and annotations in one pod template (`maxProperties`; it bounds the CEL rule
#: that refuses the operator's keys there).
MAX_TEMPLATE_LABELS: Final = 256
MAX_TEMPLATE_ANNOTATIONS: Final = 256
#: Upper bound of every `failurePolicy` duration (a day) and of `maxGangRestarts`.
MAX_FAILURE_SECONDS: Final = 86_400
MAX_GANG_RESTARTS: Final = 10_000
#: `spec.resourceClaims` entries, and Gang-scope ones (a PodGroup shares at most 4 claims,
#: `MaxPodGroupResourceClaims` in scheduling.k8s.io/v1beta1).
MAX_SET_CLAIMS: Final = 16
MAX_GANG_CLAIMS: Final = 4
#: Scaling groups in one gang template, and instances of one group in one gang.
MAX_SCALING_GROUPS: Final = 8
MAX_GROUP_INSTANCES: Final = 100


class UpdateStrategy(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """How a template change rolls out: gang by gang, at most `max_unavailable` down at once;
    with `in_place` IfPossible, a gang whose change is only container images keeps its pods
    (`cliques.hashing.in_place`)."""

    type: UpdateStrategyType = "RollingUpdate"
    max_unavailable: int = 1
    in_place: InPlacePolicy = "Never"


class GangScheduling(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """How the pods of a gang are scheduled all-or-nothing (docs/gangs.md).

    `Workload`: through the scheduler's gang scheduling (a `scheduling.k8s.io` PodGroup per
    gang from Kubernetes 1.36, a v1alpha1 Workload on 1.35; the `GenericWorkload` gate);
    `None`: pod by pod; `Auto`: `Workload` where the cluster serves it, else `None`.
    `disruption`: how the scheduler may preempt a gang (PodGroups only): `Gang` whole or
    not at all, `Pod` pod by pod.
    """

    backend: GangSchedulingBackend = "Auto"
    disruption: GangDisruption = "Gang"


class RestartBackoff(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """The wait before a gang is recreated: `initial_seconds`, doubled per restart up to
    `max_seconds`."""

    initial_seconds: int = 10
    max_seconds: int = 300


class FailurePolicy(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """What happens to a gang that stays below `minAvailable`."""

    #: RecreateGang: delete and recreate every pod of the gang; None: leave it to the pods.
    restart_policy: GangRestartPolicy = "None"
    #: How long a gang may stay below minAvailable before it counts as failed.
    min_available_breached_seconds: int = 30
    #: Recreations allowed before the gang is reported GangFailed and left as it is.
    max_gang_restarts: int = 5
    restart_backoff: RestartBackoff = msgspec.field(default_factory=RestartBackoff)


class PackPolicy(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """Every pod of a gang in one topology domain (one value of `topology_key`)."""

    topology_key: str
    mode: PackMode = "Required"


class ExclusivePolicy(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """No two gangs of the CliqueSet share a topology domain (a value of `topology_key`)."""

    topology_key: str


class Placement(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """Where a gang's pods go, compiled into pod (anti-)affinity
    (`cliques.controllers.placement`)."""

    pack: PackPolicy | None = None
    exclusive: ExclusivePolicy | None = None


class Autoscaling(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """An `autoscaling/v2` HorizontalPodAutoscaler the operator keeps for each gang's clique
    or scaling group (docs/scaling.md): between `min_replicas` and `max_replicas`, on
    `metrics` (MetricSpecs as in an HPA; none means the HPA's default, 80% average CPU
    utilization) with `behavior` (an HPA's, or its defaults). While it is set, the
    template's `replicas` is the initial value only: the HPA's choice stands."""

    min_replicas: int = 1
    max_replicas: int
    metrics: list[dict[str, Any]] = msgspec.field(default_factory=list)
    behavior: dict[str, Any] | None = None


class CliqueTemplate(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """One clique (role) of every gang: its pod count, readiness bar and pod template."""

    name: str
    replicas: int = 1
    #: Ready pods the clique needs to count as available; None means `replicas`.
    min_available: int | None = None
    #: Names of the cliques of the same gang this one waits for (startupType Explicit).
    starts_after: list[str] = msgspec.field(default_factory=list)
    #: A PodTemplateSpec (`metadata`, `spec`), kept as the JSON the user wrote.
    template: dict[str, Any]
    #: An HPA per gang on this clique's Clique (not for a clique in a scaling group).
    autoscaling: Autoscaling | None = None

    @property
    def effective_min_available(self) -> int:
        """`min_available`, or `replicas` where it is not set."""
        return self.replicas if self.min_available is None else self.min_available


class ScalingGroup(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """Cliques replicated together inside each gang (docs/scaling.md): every gang has
    `replicas` instances of them, each a sub-gang with its own index, Cliques, pods and
    leader. Each gang's instance count is its CliqueScalingGroup's `spec.replicas` (the
    scale subresource: `kubectl scale`, an HPA); `replicas` here is what a new gang starts
    with, and what the gangs follow when it changes (unless `autoscaling` is set)."""

    name: str
    #: the clique templates of each instance, in the order the template lists them
    cliques: list[str]
    replicas: int = 1
    #: instances a gang needs available to be available
    min_available: int = 1
    #: An HPA per gang on its CliqueScalingGroup.
    autoscaling: Autoscaling | None = None


class CliqueSetClaim(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A DRA ResourceClaim the operator gives the pods of some cliques (docs/gangs.md):
    one per pod (`Pod`), one per gang shared by its pods (`Gang`), or one for the whole set
    (`Set`). A container asks for it as `resources.claims: [{name: <name>}]`."""

    #: the pod-level claim name (a DNS label), unique in the set and in the pod templates
    name: str
    scope: ClaimScope
    #: the cliques whose pods get the claim; empty means every clique
    cliques: list[str] = msgspec.field(default_factory=list)
    #: a ResourceClaimTemplate's `metadata` and `spec` (resource.k8s.io/v1)
    template: dict[str, Any]

    def applies_to(self, clique: str) -> bool:
        """Whether the pods of clique `clique` get this claim."""
        return not self.cliques or clique in self.cliques


class CliqueSetTemplate(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """The gang template: its cliques, in the order `InOrder` starts them, and the scaling
    groups that replicate some of them inside each gang."""

    cliques: list[CliqueTemplate]
    scaling_groups: list[ScalingGroup] = msgspec.field(default_factory=list)


class CliqueSetSpec(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """The desired state of a CliqueSet."""

    replicas: int = 1
    startup_type: StartupType = "AnyOrder"
    update_strategy: UpdateStrategy = msgspec.field(default_factory=UpdateStrategy)
    headless_service: bool = True
    #: How the headless Services are laid out: `Shared`, one for the whole CliqueSet, or
    #: `UniquePerGang`. None (left out): what the CliqueSet's gangs already use, `Shared`
    #: for a CliqueSet without gangs (`controllers.subdomains`). The CRD has no default
    #: for it on purpose: the API server would apply one to stored CliqueSets too.
    subdomain_policy: SubdomainPolicy | None = None
    gang_scheduling: GangScheduling = msgspec.field(default_factory=GangScheduling)
    failure_policy: FailurePolicy = msgspec.field(default_factory=FailurePolicy)
    placement: Placement | None = None
    #: DRA claims the operator adds to the pods (`CliqueSetClaim`)
    resource_claims: list[CliqueSetClaim] = msgspec.field(default_factory=list)
    template: CliqueSetTemplate

    def clique(self, name: str) -> CliqueTemplate | None:
        """The clique template called `name`, or None."""
        for clique in self.template.cliques:
            if clique.name == name:
                return clique
        return None


class GangAdmission(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A gang Kueue has not admitted: `Queued` or `Evicted`, with Kueue's reason and
    message."""

    gang: int
    state: str
    reason: str = ""
    message: str = ""


class QueueStatus(msgspec.Struct, kw_only=True, rename="camel"):
    """How Kueue admits a queued CliqueSet's gangs (`kueue.x-k8s.io/queue-name`)."""

    name: str
    priority_class: str = ""
    #: gangs Kueue admitted (none of their pods held back by its gate)
    admitted_gangs: int = 0
    #: the first gangs that are not admitted, in gang order
    gangs: list[GangAdmission] = msgspec.field(default_factory=list)


class CliqueSetStatus(msgspec.Struct, kw_only=True, rename="camel"):
    """The observed state of a CliqueSet, computed from its Cliques by its own controller.

    Counts are in gangs: a gang is ready when every clique has `minAvailable` ready pods,
    updated when every clique runs the current template hash, available when ready and not
    being rolled.
    """

    observed_generation: int = 0
    replicas: int = 0
    ready_replicas: int = 0
    available_replicas: int = 0
    updated_replicas: int = 0
    #: gangs recreated whole by failurePolicy RecreateGang, in total
    gang_restarts: int = 0
    #: gangs on the current templates that their last roll updated in place (the same
    #: pods), and that it updated by replacing their pods (`updateStrategy.inPlace`)
    updated_in_place: int = 0
    updated_by_replacement: int = 0
    template_hash: str = ""
    hash_algorithm: int = 0
    #: The label selector of the CliqueSet's pods, serialized, for the scale subresource.
    selector: str = ""
    #: Kueue's admission of the gangs of a queued set (None: not queued)
    queue: QueueStatus | None = None
    conditions: list[Condition] = msgspec.field(default_factory=list)


class CliqueSet(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A CliqueSet object. `api_version` and `kind` are filled in when absent."""

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
