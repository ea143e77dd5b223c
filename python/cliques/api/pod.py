"""A slim, read-only view of a core/v1 Pod: the few fields the operator reads.

A worker decodes every pod of its buckets on every list and watch event, so this view
holds only what the Clique controller needs (identity, labels, owner, deletion, where the
pod runs, whether it is ready, its containers' images, CPU and memory and their statuses,
for in-place updates) and the taints it tolerates (the CliqueSet controller's drains), and
msgspec skips everything else in the JSON without building it.
The operator never writes a Pod from this Struct: it creates pods from the Clique's
template (a dict) with its labels and env added.
"""

import sys
from typing import Final

import msgspec

from cliques.api import labels
from cliques.api.meta import EqualValues, ListMeta, ObjectMeta, intern_strings

PHASE_PENDING: Final = "Pending"
PHASE_RUNNING: Final = "Running"
PHASE_SUCCEEDED: Final = "Succeeded"
PHASE_FAILED: Final = "Failed"
PHASE_UNKNOWN: Final = "Unknown"


class PodCondition(msgspec.Struct, kw_only=True, gc=False, omit_defaults=True, rename="camel"):
    """`corev1.PodCondition`, without its timestamps; the message is the scheduler's why
    of a pod it cannot place (PodScheduled=False)."""

    type: str
    status: str
    reason: str = ""
    message: str = ""


class Resources(msgspec.Struct, kw_only=True, gc=False, omit_defaults=True, rename="camel"):
    """`corev1.ResourceRequirements` without its claims: quantities as the API spells them."""

    requests: dict[str, str] = msgspec.field(default_factory=dict)
    limits: dict[str, str] = msgspec.field(default_factory=dict)


class ContainerImage(msgspec.Struct, kw_only=True, gc=False, omit_defaults=True, rename="camel"):
    """A container of a pod's spec: its name, image and resources (what an in-place update
    changes)."""

    name: str = ""
    image: str = ""
    resources: Resources = msgspec.field(default_factory=Resources)


class SchedulingGate(msgspec.Struct, kw_only=True, gc=False, omit_defaults=True, rename="camel"):
    name: str = ""


class ReadinessGate(msgspec.Struct, kw_only=True, gc=False, omit_defaults=True, rename="camel"):
    condition_type: str = ""


class Toleration(msgspec.Struct, kw_only=True, gc=False, omit_defaults=True, rename="camel"):
    """`corev1.Toleration`: which taints the pod tolerates (a drained node's NoExecute
    taints, `controllers.features.drain`)."""

    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class PodSpec(msgspec.Struct, kw_only=True, gc=False, omit_defaults=True, rename="camel"):
    """The PodSpec fields the operator reads."""

    hostname: str = ""
    subdomain: str = ""
    node_name: str = ""
    containers: list[ContainerImage] = msgspec.field(default_factory=list)
    init_containers: list[ContainerImage] = msgspec.field(default_factory=list)
    #: What holds the pod back from scheduling (Kueue's admission gate, until its gang
    #: is admitted).
    scheduling_gates: list[SchedulingGate] = msgspec.field(default_factory=list)
    #: The conditions besides its containers' readiness that its Ready waits for (the
    #: operator's `cliques.dev/gang-ready`, with `podReadiness: Gang`).
    readiness_gates: list[ReadinessGate] = msgspec.field(default_factory=list)
    #: The taints it tolerates (whether a NoExecute taint on its node drains it).
    tolerations: list[Toleration] = msgspec.field(default_factory=list)


class Waiting(msgspec.Struct, kw_only=True, gc=False, omit_defaults=True, rename="camel"):
    reason: str = ""
    message: str = ""


class ContainerState(msgspec.Struct, kw_only=True, gc=False, omit_defaults=True, rename="camel"):
    waiting: Waiting | None = None


class ContainerStatus(msgspec.Struct, kw_only=True, gc=False, omit_defaults=True, rename="camel"):
    """What the kubelet reports of a container: the image it runs, whether it is ready,
    and why it waits (ImagePullBackOff, CrashLoopBackOff...)."""

    name: str = ""
    image: str = ""
    image_id: str = msgspec.field(default="", name="imageID")
    ready: bool = False
    restart_count: int = 0
    state: ContainerState = msgspec.field(default_factory=ContainerState)
    #: The requests and limits the container runs with (None: the kubelet reports none).
    resources: Resources | None = None


class PodStatus(msgspec.Struct, kw_only=True, gc=False, omit_defaults=True, rename="camel"):
    """The PodStatus fields the operator reads."""

    phase: str = ""
    conditions: list[PodCondition] = msgspec.field(default_factory=list)
    pod_ip: str = msgspec.field(default="", name="podIP")
    container_statuses: list[ContainerStatus] = msgspec.field(default_factory=list)


class Pod(msgspec.Struct, kw_only=True, gc=False, omit_defaults=True, rename="camel"):
    """A Pod, slim: metadata, a few spec fields, its readiness and its containers."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)

    @property
    def is_ready(self) -> bool:
        """The pod has condition Ready=True and is not being deleted."""
        if self.metadata.deletion_timestamp is not None:
            return False
        return any(c.type == "Ready" and c.status == "True" for c in self.status.conditions)

    @property
    def gang_gated(self) -> bool:
        """The pod carries the readiness gate `cliques.dev/gang-ready` (`podReadiness:
        Gang`): its Ready waits for its gang to be whole."""
        return any(
            g.condition_type == labels.CONDITION_GANG_READY for g in self.spec.readiness_gates
        )

    @property
    def containers_ready(self) -> bool:
        """The pod is ready by its own containers, as the operator judges it (start order,
        availability, breaches): condition ContainersReady=True for a pod with the gang
        gate, whose Ready also waits for its gang to be whole (`gang_gated`), else Ready
        (the kubelet's judgement, the same thing for a pod without readiness gates). Never
        for a pod being deleted."""
        if not self.gang_gated:
            return self.is_ready
        if self.metadata.deletion_timestamp is not None:
            return False
        return self.condition("ContainersReady") == "True"

    def condition(self, type_: str) -> str:
        """The status ("True", "False", "Unknown") of the pod's condition `type_`, "" if it
        has none."""
        for c in self.status.conditions:
            if c.type == type_:
                return c.status
        return ""

    @property
    def gang_ready(self) -> str:
        """The status of the pod's `cliques.dev/gang-ready` condition ("" if it has none,
        which a readiness gate reads as False)."""
        return self.condition(labels.CONDITION_GANG_READY)

    @property
    def is_unschedulable(self) -> bool:
        """The scheduler found no node for the pod (condition PodScheduled=False, reason
        Unschedulable): it stays Pending until room appears."""
        return any(
            c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
            for c in self.status.conditions
        )

    @property
    def unschedulable_why(self) -> str:
        """What the scheduler says of a pod it cannot place ("" for one it can)."""
        for c in self.status.conditions:
            if c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable":
                return c.message
        return ""

    @property
    def is_terminal(self) -> bool:
        """The pod has finished (Succeeded or Failed) and will not run again."""
        return self.status.phase in (PHASE_SUCCEEDED, PHASE_FAILED)


class PodList(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """The body of a LIST of Pods."""

    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[Pod] = msgspec.field(default_factory=list)


class SharedParts:
    """Makes Pods decoded for a cache share one copy of each distinct container list,
    condition list, toleration list, container status list, gate list, finalizer list and
    annotation map (the empty ones included), and one string of each namespace, node,
    subdomain and phase.

    The pods of a clique have the same containers (images, CPU and memory), tolerations
    and annotations, and pods in the same state the same conditions and container
    statuses, yet each decoded Pod held its own lists of Structs: about 1.6 of a cached
    Pod's 4.1 KB for the containers and conditions alone. Called on each decoded Pod (an
    informer's `transform`), this swaps each of those parts for an equal one already seen,
    keyed by the field and its JSON, so two parts share only when they are of the same
    field and equal. Cached Pods are read-only to the operator (it never writes a Pod from
    this Struct), which is what makes sharing safe. At most `limit` distinct parts are
    remembered; past it the table starts over, which costs sharing, never correctness.
    """

    def __init__(self, limit: int = 65536) -> None:
        self.limit = limit
        self._parts = EqualValues(limit)

    def __call__(self, pod: Pod) -> Pod:
        meta, spec, status = pod.metadata, pod.spec, pod.status
        intern_strings(meta)
        intern = sys.intern
        spec.subdomain = intern(spec.subdomain)
        spec.node_name = intern(spec.node_name)
        status.phase = intern(status.phase)
        shared = self._parts.shared
        # Empty ones too: a decoded empty list is a list of its own (56 bytes) per field.
        spec.containers = shared(spec.containers, b"c")
        spec.init_containers = shared(spec.init_containers, b"i")
        spec.scheduling_gates = shared(spec.scheduling_gates, b"g")
        spec.readiness_gates = shared(spec.readiness_gates, b"r")
        spec.tolerations = shared(spec.tolerations, b"t")
        status.conditions = shared(status.conditions, b"k")
        status.container_statuses = shared(status.container_statuses, b"s")
        meta.annotations = shared(meta.annotations, b"a")
        meta.finalizers = shared(meta.finalizers, b"f")
        return pod

    def __len__(self) -> int:
        return len(self._parts)
