"""Powering a KWOK node off and on, as a lost machine: the patch that takes its node Lease.

kwok-controller renews each node's Lease in `kube-node-lease` and acts for a node only while
it holds that Lease (its status, its pods' status, their final deletes). A Lease held by
another identity that has not expired is left alone, so writing one with a day-long duration
powers the node off: no heartbeat, pods frozen as they were, deletes never finished. The
controller-manager's node lifecycle then marks the node `Unknown` after its grace period
(50 s by default) and taints it `node.kubernetes.io/unreachable:NoExecute`, as for a real
machine that stopped. Deleting the Lease powers it on again: kwok makes a new one and takes
the node back. Pure: the caller sends the patch (kubectl, or any client).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

#: The namespace of node Leases.
NODE_LEASE_NAMESPACE: Final = "kube-node-lease"
#: The holder that powers a node off (anything but kwok-controller's own identity).
POWERED_OFF_HOLDER: Final = "cliques-dev-cluster/powered-off"
#: How long the powered-off hold lasts: longer than any test or benchmark.
POWERED_OFF_SECONDS: Final = 86_400


def power_off_patch(now: datetime | None = None) -> dict[str, Any]:
    """The merge patch of a node's Lease that takes it from kwok-controller."""
    when = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {
        "spec": {
            "holderIdentity": POWERED_OFF_HOLDER,
            "leaseDurationSeconds": POWERED_OFF_SECONDS,
            "renewTime": when,
        }
    }
