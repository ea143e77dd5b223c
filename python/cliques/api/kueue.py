"""Slim views of Kueue's objects the operator reads (kueue.x-k8s.io/v1beta2): a Workload,
for the conditions that say whether a gang's pod group is admitted and why not, and a
LocalQueue, for whether the queue a CliqueSet names exists (`controllers.kueue`)."""

from __future__ import annotations

import msgspec

from cliques.api.meta import ObjectMeta


class KueueCondition(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """`metav1.Condition` of a Workload, without its timestamps."""

    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""


class KueueWorkloadStatus(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    conditions: list[KueueCondition] = msgspec.field(default_factory=list)


class KueueWorkload(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A Kueue Workload: its metadata and conditions (QuotaReserved, Admitted, Evicted...)."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    status: KueueWorkloadStatus = msgspec.field(default_factory=KueueWorkloadStatus)


class LocalQueue(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A Kueue LocalQueue: its metadata."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
