"""A slim, read-only view of a lifecycle.k8s.io/v1alpha1 Eviction (Kubernetes 1.37+, alpha,
gate `EvictionRequestAPI`): what the operator reads as a responder
(`controllers.features.eviction_requests`).

Users ask for a pod's eviction with an EvictionRequest; kube-controller-manager's
evictionrequest-controller turns the requests of one pod into one Eviction, copies the pod's
`spec.evictionResponders` (plus the default `imperative-eviction.k8s.io/evictor` at
priority 100) into `status.targetResponders`, and makes one of them `Active` at a time,
highest priority first. The active responder reports in `status.responders[]` through the
`evictions/status` subresource: `heartbeatTime` at least every 20 minutes (else the next
responder takes over), and `completionTime` when it is done. Decoded here: the Eviction's
identity and owners (its EvictionRequests), its target pod, and the requesters, target
responders and responder statuses; its conditions are left out. The operator never creates
or deletes an Eviction.
"""

from __future__ import annotations

from typing import Final

import msgspec

from cliques.api.meta import ListMeta, ObjectMeta

GROUP: Final = "lifecycle.k8s.io"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
#: The kind of an Eviction's owners: the EvictionRequests it answers.
REQUEST_KIND: Final = "EvictionRequest"
#: `ResponderStateType`: what the evictionrequest-controller assigns each target responder.
ACTIVE: Final = "Active"
CANCELED: Final = "Canceled"
COMPLETED: Final = "Completed"
INTERRUPTED: Final = "Interrupted"
#: A requester's intent that asks no more (all withdrawn: the eviction is canceled).
WITHDRAWN: Final = "Withdrawn"
#: The priority of the operator's responder (`labels.LABEL_RESPONDER`) in the pods it
#: makes outside PodGroups: the one the API asks of a pod's managing controller (10000:
#: room above for preemption, below for fallbacks; 0-999 is for *.k8s.io).
RESPONDER_PRIORITY: Final = 10000
#: The default responder the controller adds last for a pod (priority 100).
DEFAULT_RESPONDER: Final = "imperative-eviction.k8s.io/evictor"


class PodReference(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    name: str = ""
    uid: str = ""


class EvictionTarget(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    pod: PodReference | None = None


class EvictionSpec(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    target: EvictionTarget = msgspec.field(default_factory=EvictionTarget)


class Requester(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    name: str = ""
    intent: str = ""


class TargetResponder(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    name: str = ""
    priority: int = 0
    state: str = ""


class ResponderStatus(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    name: str = ""
    start_time: str | None = None
    heartbeat_time: str | None = None
    expected_completion_time: str | None = None
    completion_time: str | None = None
    message: str | None = None


class EvictionStatus(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    requesters: list[Requester] = msgspec.field(default_factory=list)
    target_responders: list[TargetResponder] = msgspec.field(default_factory=list)
    responders: list[ResponderStatus] = msgspec.field(default_factory=list)


class Eviction(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """An Eviction, slim: its target pod and its responders."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: EvictionSpec = msgspec.field(default_factory=EvictionSpec)
    status: EvictionStatus = msgspec.field(default_factory=EvictionStatus)

    def state_of(self, responder: str) -> str:
        """The state the controller gives `responder` ("" where it is not a target one)."""
        return next((r.state for r in self.status.target_responders if r.name == responder), "")

    def status_of(self, responder: str) -> ResponderStatus | None:
        return next((r for r in self.status.responders if r.name == responder), None)

    def requests(self) -> list[str]:
        """The names of the EvictionRequests it answers (its owners)."""
        return sorted(r.name for r in self.metadata.owner_references if r.kind == REQUEST_KIND)

    def withdrawn(self) -> bool:
        """Every requester has withdrawn (the controller then cancels the eviction)."""
        found = self.status.requesters
        return bool(found) and all(r.intent == WITHDRAWN for r in found)


class EvictionList(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[Eviction] = msgspec.field(default_factory=list)
