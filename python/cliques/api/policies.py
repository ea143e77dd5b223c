"""How a CliqueSet's gangs are updated, scheduled, healed, placed and autoscaled: the
policy Structs of `CliqueSetSpec` and of its clique and scaling-group templates.

Part of the CliqueSet resource (`cliqueset`), with the same encoding rules; like the rest
of the API, their CRD schema is declared on the fields (`schema.crd`) and generated from
them (`crdgen`). Each set of values a field allows is a `StrEnum` (`GangBackend` for the
gang-scheduling backend, in `backends`): its members are the strings of the API, the CRD's
`enum` lists them in the order declared, and code compares a field with the members.
"""

import enum
from typing import Annotated, Any, ClassVar, Final

import msgspec

from cliques.api.backends import GangBackend
from cliques.api.schema import (
    INVALID,
    MAX_QUALIFIED_NAME_LENGTH,
    QUALIFIED_NAME,
    Count,
    Rule,
    crd,
)


class UpdateStrategyType(enum.StrEnum):
    """`updateStrategy.type`: how a template change rolls out."""

    #: gang by gang, at most `maxUnavailable` down at once
    ROLLING_UPDATE = "RollingUpdate"
    #: every gang at once
    RECREATE = "Recreate"


class InPlacePolicy(enum.StrEnum):
    """`updateStrategy.inPlace`: whether a change of images only keeps a gang's pods."""

    NEVER = "Never"
    IF_POSSIBLE = "IfPossible"


class GangDisruption(enum.StrEnum):
    """`gangScheduling.disruption`: how the scheduler may preempt a gang."""

    #: the whole gang or none of it
    GANG = "Gang"
    #: single pods
    POD = "Pod"


class DrainPolicy(enum.StrEnum):
    """`nodeDrain.policy`: what the operator does about a gang with a pod on a node being
    drained (cordoned, or tainted NoExecute with a taint its pod does not tolerate)."""

    #: the gang is made again whole elsewhere, paced by the rollout budget
    MOVE_GANGS = "MoveGangs"
    #: nothing: the pods are left to whoever evicts them
    NONE = "None"


class EvictionHold(enum.StrEnum):
    """`nodeDrain.holdEvictions`: how piecemeal evictions of a set's pods are held off
    while the operator moves their gangs."""

    #: a PodDisruptionBudget per set, owned by it, with `maxUnavailable: 0`
    POD_DISRUPTION_BUDGET = "PodDisruptionBudget"
    #: none: evictions go through (the user's own PDBs, if any, decide)
    NONE = "None"


class GangRestartPolicy(enum.StrEnum):
    """`failurePolicy.restartPolicy`: what happens to a gang below minAvailable."""

    #: the gang's pods deleted and made again, all of them
    RECREATE_GANG = "RecreateGang"
    #: the pods left to their own restartPolicy
    NONE = "None"


class PackMode(enum.StrEnum):
    """`placement.pack.mode`."""

    #: pods wait for room in the gang's domain
    REQUIRED = "Required"
    #: a scoring hint
    PREFERRED = "Preferred"


#: Upper bound of every `failurePolicy` duration (a day) and of `maxGangRestarts`.
MAX_FAILURE_SECONDS: Final = 86_400
MAX_GANG_RESTARTS: Final = 10_000
#: Upper bound of `updateStrategy.partition`: the most gangs a set may have (int32 room).
MAX_PARTITION: Final = 2**31 - 1


class UpdateStrategy(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """How a template change rolls out: gang by gang, at most `max_unavailable` down at once
    beyond the `max_surge` extra gangs made first (`controllers.cliqueset.surge`); with
    `in_place` IfPossible, a gang whose change is only container images keeps its pods
    (`cliques.hashing.in_place`); gangs below `partition` keep the template they run."""

    __crd__: ClassVar[msgspec.Meta] = crd(
        rules=[
            Rule(
                rule=(
                    "!has(self.maxSurge) || (type(self.maxSurge) == int ? self.maxSurge >= 0 "
                    ": string(self.maxSurge).matches('^[0-9]{1,10}%$'))"
                ),
                message="updateStrategy.maxSurge must be a number of gangs or a percent (25%)",
                field_path=".maxSurge",
                reason=INVALID,
            ),
            Rule(
                rule=(
                    "!has(self.maxUnavailable) || self.maxUnavailable > 0 || "
                    "(has(self.maxSurge) && (type(self.maxSurge) == int ? self.maxSurge > 0 "
                    ": !string(self.maxSurge).matches('^0+%$')))"
                ),
                message="updateStrategy.maxUnavailable may be 0 only with a maxSurge above 0",
                field_path=".maxUnavailable",
                reason=INVALID,
            ),
        ]
    )

    type: UpdateStrategyType = UpdateStrategyType.ROLLING_UPDATE
    max_unavailable: Annotated[
        int,
        crd(
            minimum=0,
            description=(
                "Gangs that may be down at once during a rolling update (0 only with a "
                "maxSurge above 0: then a roll never leaves fewer than replicas whole gangs)."
            ),
        ),
    ] = 1
    max_surge: Annotated[
        int | str,
        crd(
            description=(
                "Extra gangs a rolling update may make above replicas (a number, or a percent "
                "of replicas rounded up): each is made on the new template at the next index "
                "and, once available, stands in for an outdated gang the roll takes down; "
                "they are removed, highest index first, once every gang is updated and "
                "available (docs/operator.md)."
            )
        ),
    ] = 0
    in_place: Annotated[
        InPlacePolicy,
        crd(
            description=(
                "IfPossible: a gang whose pods differ from the new template only in container "
                "images is updated in place (same pods, nodes, IPs and DRA claims; the kubelet "
                "restarts the changed containers), gang by gang within maxUnavailable; any "
                "other change replaces the gang's pods. Never: a roll always replaces the pods "
                "(docs/operator.md)."
            )
        ),
    ] = InPlacePolicy.NEVER
    partition: Annotated[
        int,
        crd(
            minimum=0,
            maximum=MAX_PARTITION,
            description=(
                "Gangs with an index below the partition keep the template they run through a "
                "roll (a canary: set it to replicas - 1 to roll only the last gang); lowering "
                "it continues the roll (docs/operator.md)."
            ),
        ),
    ] = 0


class GangScheduling(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """How the pods of a gang are scheduled all-or-nothing (docs/gangs.md).

    `Workload`: through the scheduler's gang scheduling (a `scheduling.k8s.io` PodGroup per
    gang from Kubernetes 1.36, a v1alpha1 Workload on 1.35; the `GenericWorkload` gate);
    `None`: pod by pod; `Auto`: `Workload` where the cluster serves it, else `None`.
    `disruption`: how the scheduler may preempt a gang (PodGroups only): `Gang` whole or
    not at all, `Pod` pod by pod.
    """

    backend: Annotated[
        GangBackend,
        crd(
            description=(
                "Workload: through the scheduler's gang scheduling, so it binds a gang's pods "
                "all at once or none (scheduling.k8s.io v1beta1 or v1alpha2: a PodGroup per "
                "gang, Kubernetes 1.36+; v1alpha1: a Workload per CliqueSet, Kubernetes 1.35; "
                "with the GenericWorkload feature gate); None: pod by pod; Auto: Workload "
                "where the cluster serves it, else None."
            )
        ),
    ] = GangBackend.AUTO
    disruption: Annotated[
        GangDisruption,
        crd(
            description=(
                "How the scheduler may preempt a gang for a higher-priority one (with "
                "PodGroups, Kubernetes 1.36+): Gang takes the whole gang or none of it, Pod "
                "single pods. A change reaches a running gang when all its pods are next made "
                "again (a gang restart, a roll of all its cliques)."
            )
        ),
    ] = GangDisruption.GANG


#: A `failurePolicy` duration: at most a day.
Seconds = Annotated[int, crd(minimum=0, maximum=MAX_FAILURE_SECONDS)]


class RestartBackoff(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """The wait before a gang is recreated: `initial_seconds`, doubled per restart up to
    `max_seconds`."""

    __crd__: ClassVar[msgspec.Meta] = crd(
        rules=[
            Rule(
                rule=(
                    "!has(self.initialSeconds) || !has(self.maxSeconds) || "
                    "self.initialSeconds <= self.maxSeconds"
                ),
                # No messageExpression: string(int) makes the API server's CEL cost estimate
                # of the whole schema exceed its budget (the CRD is refused).
                message=(
                    "restartBackoff.initialSeconds must be less than or equal to "
                    "restartBackoff.maxSeconds"
                ),
                field_path=".initialSeconds",
                reason=INVALID,
            )
        ]
    )

    initial_seconds: Seconds = 10
    max_seconds: Seconds = 300


class FailurePolicy(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """What happens to a gang that stays below `minAvailable`."""

    restart_policy: Annotated[
        GangRestartPolicy,
        crd(
            description=(
                "RecreateGang deletes and recreates every pod of a gang that stayed below "
                "minAvailable for minAvailableBreachedSeconds; None leaves the pods to their "
                "own restartPolicy."
            )
        ),
    ] = GangRestartPolicy.NONE
    min_available_breached_seconds: Annotated[
        Seconds,
        crd(description="Seconds a gang may stay below minAvailable before it counts as failed."),
    ] = 30
    max_gang_restarts: Annotated[
        int,
        crd(
            minimum=0,
            maximum=MAX_GANG_RESTARTS,
            description=(
                "Recreations of one gang before it is reported GangFailed and left as it is."
            ),
        ),
    ] = 5
    restart_backoff: Annotated[
        RestartBackoff,
        crd(
            description=(
                "The wait before a recreation, doubled each time from initialSeconds up to "
                "maxSeconds."
            )
        ),
    ] = msgspec.field(default_factory=RestartBackoff)


#: A node label key naming a topology domain.
TopologyKey = Annotated[
    str,
    crd(
        min_length=1,
        max_length=MAX_QUALIFIED_NAME_LENGTH,
        pattern=QUALIFIED_NAME,
        description="A node label key, such as topology.kubernetes.io/zone.",
    ),
]


class PackPolicy(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """Every pod of a gang in one topology domain (one value of `topology_key`)."""

    topology_key: TopologyKey
    mode: Annotated[
        PackMode,
        crd(
            description=(
                "Required (pods wait for room in the gang's domain) or Preferred (a scoring hint)."
            )
        ),
    ] = PackMode.REQUIRED


class ExclusivePolicy(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """No two gangs of the CliqueSet share a topology domain (a value of `topology_key`)."""

    topology_key: TopologyKey


class Placement(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """Where a gang's pods go, compiled into pod (anti-)affinity
    (`cliques.controllers.features.placement`)."""

    pack: (
        Annotated[
            PackPolicy,
            crd(
                description=(
                    "Every pod of a gang in one topology domain (one value of topologyKey)."
                )
            ),
        ]
        | None
    ) = None
    exclusive: (
        Annotated[
            ExclusivePolicy,
            crd(description="No two gangs of this CliqueSet in one topology domain."),
        ]
        | None
    ) = None


class Autoscaling(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """An `autoscaling/v2` HorizontalPodAutoscaler the operator keeps for each gang's clique
    or scaling group (docs/scaling.md): between `min_replicas` and `max_replicas`, on
    `metrics` (MetricSpecs as in an HPA; none means the HPA's default, 80% average CPU
    utilization) with `behavior` (an HPA's, or its defaults). While it is set, the
    template's `replicas` is the initial value only: the HPA's choice stands. Its bound on
    `max_replicas` and the descriptions of both counts are declared where it is used
    (`autoscaling_of`)."""

    __crd__: ClassVar[msgspec.Meta] = crd(
        rules=[
            Rule(
                rule="(has(self.minReplicas) ? self.minReplicas : 1) <= self.maxReplicas",
                message=(
                    "autoscaling.minReplicas must be less than or equal to autoscaling.maxReplicas"
                ),
                field_path=".minReplicas",
                reason=INVALID,
            )
        ]
    )

    min_replicas: Count = 1
    max_replicas: Annotated[int, crd(minimum=1)]
    metrics: Annotated[
        list[dict[str, Any]],
        crd(
            max_items=16,
            description=(
                "MetricSpecs, as in an autoscaling/v2 HPA (checked by the API server when the "
                "operator writes the HPA). Empty or left out: the HPA's default, 80% average "
                "CPU utilization."
            ),
        ),
    ] = msgspec.field(default_factory=list)
    behavior: (
        Annotated[
            dict[str, Any],
            crd(
                description=(
                    "An autoscaling/v2 HPA's behavior (scale-up and scale-down policies); left "
                    "out, its defaults."
                )
            ),
        ]
        | None
    ) = None


def autoscaling_of(what: str, unit: str, most: int, described: str) -> msgspec.Meta:
    """The schema of an `autoscaling` field that scales `what` (the clique, the group) in
    `unit`s (pods, instances), at most `most` of them."""
    return crd(
        description=described,
        properties={
            "minReplicas": crd(description=f"The fewest {unit} the HPA may scale {what} to."),
            "maxReplicas": crd(
                maximum=most,
                description=f"The most {unit} the HPA may scale {what} to (at most {most:,}).",
            ),
        },
    )


class NodeDrain(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """What a drained node does to the set's gangs
    (docs/gangs.md#nodedrain-gangs-move-whole-off-drained-nodes): with `MoveGangs` each
    gang with a pod on a cordoned node (or one tainted NoExecute with a taint the pod does
    not tolerate) is made again whole elsewhere, surge first where `maxSurge` allows, paced
    by `maxUnavailable`; with `holdEvictions: PodDisruptionBudget` the Eviction API refuses
    piecemeal evictions of the set's pods meanwhile, so that `kubectl drain` waits for the
    operator's moves. With `policy: None` there is no budget either, whatever
    `holdEvictions` says."""

    policy: Annotated[
        DrainPolicy,
        crd(
            description=(
                "MoveGangs: a gang with a pod on a cordoned node, or on a node tainted "
                "NoExecute with a taint the pod does not tolerate, is made again whole "
                "elsewhere (surge first where maxSurge allows, else in place), paced by "
                "maxUnavailable. None: the operator does nothing about drains."
            )
        ),
    ] = DrainPolicy.MOVE_GANGS
    hold_evictions: Annotated[
        EvictionHold,
        crd(
            description=(
                "PodDisruptionBudget: a PodDisruptionBudget per set (maxUnavailable 0, owned by "
                "the set) makes the Eviction API refuse piecemeal evictions of its ready pods, "
                "so kubectl drain waits until the operator has moved their gangs (only with "
                "policy MoveGangs). None: no PodDisruptionBudget (use it with a "
                "PodDisruptionBudget of your own)."
            )
        ),
    ] = EvictionHold.POD_DISRUPTION_BUDGET
    lost_node_seconds: Annotated[
        int,
        crd(
            minimum=0,
            maximum=MAX_FAILURE_SECONDS,
            description=(
                "Seconds a node may stay not ready or unreachable (the node lifecycle's "
                "NoExecute taint) before each gang with a pod there that does not tolerate it "
                "for good is made again whole elsewhere, as off a drained node (only with "
                "policy MoveGangs)."
            ),
        ),
    ] = 60
