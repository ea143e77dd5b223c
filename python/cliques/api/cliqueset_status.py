"""The status of a CliqueSet (`cliques.dev/v1alpha1`) as msgspec Structs: its counts of
gangs, its template hash, Kueue's admission of its gangs, and the conditions it reports.

Part of the CliqueSet resource (`cliqueset`), its CRD schema declared on the fields
(`schema.crd`) and generated from them (`crdgen`). Status Structs encode every field,
zeros included: whichever way a controller writes the status (a replace, a merge patch, a
server-side apply), a count that falls to 0 is written as 0 and not left at its old value.
"""

import enum
from typing import Annotated, ClassVar, Final

import msgspec

from cliques.api.meta import CONDITIONS, Condition
from cliques.api.schema import Count, Count64, crd

# The condition types a CliqueSet reports, and the reasons the controllers give.
CONDITION_AVAILABLE: Final = "Available"
CONDITION_PROGRESSING: Final = "Progressing"
CONDITION_DEGRADED: Final = "Degraded"
REASON_INVALID_SPEC: Final = "InvalidSpec"


class AdmissionState(enum.StrEnum):
    """Where a gang Kueue has not admitted stands (`status.queue.gangs[].state`)."""

    #: waiting for quota
    QUEUED = "Queued"
    #: admitted once, then evicted
    EVICTED = "Evicted"


class GangAdmission(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A gang Kueue has not admitted: `Queued` or `Evicted`, with Kueue's reason and
    message."""

    gang: Count
    state: AdmissionState
    reason: Annotated[str, crd(max_length=256)] = ""
    message: Annotated[str, crd(max_length=32768)] = ""


class QueueStatus(msgspec.Struct, kw_only=True, rename="camel"):
    """How Kueue admits a queued CliqueSet's gangs (`kueue.x-k8s.io/queue-name`)."""

    name: Annotated[str, crd(max_length=253, description="The LocalQueue.")]
    priority_class: Annotated[
        str,
        crd(
            max_length=253,
            description="The WorkloadPriorityClass (kueue.x-k8s.io/priority-class).",
        ),
    ] = ""
    #: gangs Kueue admitted (none of their pods held back by its gate)
    admitted_gangs: Annotated[Count, crd(description="Gangs Kueue admitted.")] = 0
    gangs: Annotated[
        list[GangAdmission],
        crd(
            max_items=20,
            description="The first gangs Kueue has not admitted, in gang order.",
        ),
    ] = msgspec.field(default_factory=list)


class CliqueSetStatus(msgspec.Struct, kw_only=True, rename="camel"):
    """The observed state of a CliqueSet, computed from its Cliques by its own controller.

    Counts are in gangs: a gang is ready when every clique has `minAvailable` ready pods,
    updated when every clique runs the current template hash, available when ready and not
    being rolled.
    """

    __crd__: ClassVar[msgspec.Meta] = crd(
        description=(
            "The observed state of a CliqueSet, computed from its Cliques. Counts are in gangs."
        )
    )

    observed_generation: Count64 = 0
    replicas: Count = 0
    surge_replicas: Annotated[
        Count,
        crd(
            description=(
                "Surge gangs a rolling update keeps above spec.replicas (updateStrategy."
                "maxSurge); not counted in replicas, readyReplicas, availableReplicas or "
                "updatedReplicas."
            )
        ),
    ] = 0
    ready_replicas: Count = 0
    available_replicas: Count = 0
    updated_replicas: Count = 0
    gang_restarts: Annotated[
        Count64,
        crd(description="Gangs recreated whole by failurePolicy RecreateGang, in total."),
    ] = 0
    #: gangs on the current templates that their last roll updated in place (the same
    #: pods), and that it updated by replacing their pods (`updateStrategy.inPlace`)
    updated_in_place: Annotated[
        Count,
        crd(
            description=(
                "Gangs on the current template whose last roll kept their pods "
                "(updateStrategy.inPlace)."
            )
        ),
    ] = 0
    updated_by_replacement: Annotated[
        Count,
        crd(description="Gangs on the current template whose last roll replaced their pods."),
    ] = 0
    template_hash: Annotated[
        str,
        crd(max_length=63, description="The canonical hash of the current gang template."),
    ] = ""
    hash_algorithm: Annotated[
        Count,
        crd(description="The version of the hash algorithm that computed templateHash."),
    ] = 0
    current_revision: Annotated[
        str,
        crd(
            max_length=253,
            description=(
                "The ControllerRevision that records the set's current gang template (the one "
                "new and rolled gangs get); its revision number is the highest of the set's "
                "(docs/operator.md)."
            ),
        ),
    ] = ""
    selector: Annotated[
        str,
        crd(
            description=("The label selector of this CliqueSet's pods, for the scale subresource.")
        ),
    ] = ""
    #: Kueue's admission of the gangs of a queued set (None: not queued)
    queue: (
        Annotated[
            QueueStatus,
            crd(
                description=(
                    "How Kueue admits the gangs of a set labelled kueue.x-k8s.io/queue-name."
                )
            ),
        ]
        | None
    ) = None
    conditions: Annotated[list[Condition], CONDITIONS] = msgspec.field(default_factory=list)
