"""The scheduler's gang scheduling for a CliqueSet: its Workload, and on Kubernetes 1.35
(`scheduling.k8s.io/v1alpha1`) each pod's `spec.workloadRef` (pure; docs/gangs.md). From
1.36 on, the Workload is a template and each gang is a PodGroup (`controllers.podgroups`).

On v1alpha1: one Workload per CliqueSet and gang shape, owned by the CliqueSet (controller
reference, blockOwnerDeletion), with one pod group `gang` whose gang policy's `minCount` is the pods
a gang needs to be available (the sum of its cliques' `minAvailable`, which is every pod
unless `minAvailable` was lowered). Every gang is one replica of that group: a pod's
`workloadRef` is `{name: <workload>, podGroup: gang, podGroupReplicaKey: <gang index>}`,
and the scheduler applies the policy to each replica key separately: it binds none of a
gang's pods until `minCount` of them fit at once.

A Workload's pod groups are immutable, and so is a pod's `workloadRef`; the Workload is
therefore named `<cliqueset>-<short hash of the shape>` (the pod groups), so a new shape is
a new object, never an update. `decide` resolves `gangScheduling.backend` against what the
cluster serves (`cliques.kube.gangapi`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Final

from cliques.api import labels
from cliques.api.backends import GangBackend
from cliques.api.cliqueset import CliqueSet
from cliques.controllers.features import scaling
from cliques.controllers.features.gang_apis import POD_GROUP, GangAPIVersion

KIND: Final = "Workload"
#: The one pod group of a CliqueSet's Workload; gangs are its replica keys.
#: The scheduler's limit on pod groups per Workload (`WorkloadMaxPodGroups`).
MAX_POD_GROUPS: Final = 8
#: Hex digits of the shape hash in the Workload name.
HASH_LENGTH: Final = 10

# Reasons `decide` gives (condition reasons of the CliqueSet once wired).
REASON_WORKLOAD: Final = "WorkloadGangScheduling"
REASON_DISABLED: Final = "GangSchedulingDisabled"
REASON_UNAVAILABLE: Final = "WorkloadAPIUnavailable"


def min_count(cqs: CliqueSet) -> int:
    """The pods a gang needs at once: the sum of its cliques' effective minAvailable, those
    of a scaling group's cliques counted once per instance the gang needs (the group's
    `minAvailable`)."""
    lay = scaling.layout(cqs.spec)
    need = {c.name: c.effective_min_available for c in cqs.spec.template.cliques}
    total = sum(n for role, n in need.items() if role not in lay.group_of)
    for group in lay.groups:
        total += group.min_available * sum(need[r] for r in group.roles)
    return total


def pod_groups(cqs: CliqueSet) -> list[dict[str, Any]]:
    """The Workload's `spec.podGroups`: one group, gang policy with `min_count`, or the basic
    policy when a gang needs no pod at all (minCount must be positive)."""
    needed = min_count(cqs)
    policy: dict[str, Any] = {"gang": {"minCount": needed}} if needed > 0 else {"basic": {}}
    return [{"name": POD_GROUP, "policy": policy}]


def shape_hash(groups: list[dict[str, Any]]) -> str:
    """A short, stable hash of the pod groups (key order and spacing do not matter)."""
    canonical = json.dumps(groups, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:HASH_LENGTH]


def workload_name(cqs: CliqueSet) -> str:
    """`<cliqueset>-<shape hash>`: at most 52 + 1 + 10 characters, a DNS subdomain."""
    return f"{cqs.metadata.name}-{shape_hash(pod_groups(cqs))}"


def build_workload(cqs: CliqueSet, api: GangAPIVersion) -> dict[str, Any]:
    """The Workload body for `cqs` in `api`'s version (create it; it is never updated).
    From v1alpha2 on, its pod groups are templates (`podGroupTemplates`) the PodGroups link
    to (`GangAPIVersion.workload_groups`)."""
    meta = cqs.metadata
    if not meta.name or not meta.uid:
        raise ValueError("the CliqueSet needs a name and a uid to own its Workload")
    groups = pod_groups(cqs)
    if len(groups) > MAX_POD_GROUPS:  # pragma: no cover - one group today
        raise ValueError(f"{len(groups)} pod groups, more than {MAX_POD_GROUPS}")
    spec_groups = api.workload_groups(groups)
    return {
        "apiVersion": f"scheduling.k8s.io/{api.version}",
        "kind": KIND,
        "metadata": {
            "name": f"{meta.name}-{shape_hash(groups)}",
            "namespace": meta.namespace,
            "labels": {labels.LABEL_CLIQUESET: meta.name},
            "ownerReferences": [
                {
                    "apiVersion": cqs.api_version,
                    "kind": cqs.kind,
                    "name": meta.name,
                    "uid": meta.uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "controllerRef": {
                "apiGroup": labels.GROUP,
                "kind": labels.KIND_CLIQUESET,
                "name": meta.name,
            },
            **spec_groups,
        },
    }


def workload_ref(name: str, gang_index: int) -> dict[str, str]:
    """A pod's `spec.workloadRef`: gang `gang_index` of Workload `name`."""
    if gang_index < 0:
        raise ValueError(f"gang index must be non-negative, got {gang_index}")
    return {"name": name, "podGroup": POD_GROUP, "podGroupReplicaKey": str(gang_index)}


# ---- Which backend a CliqueSet gets ---------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """The backend in effect for a CliqueSet, and why (a condition reason and message)."""

    #: `WORKLOAD` or `NONE`, never `AUTO`
    backend: GangBackend
    reason: str
    message: str
    #: False when the user asked for `Workload` and the cluster cannot give it: the
    #: gang's pods should not be created (they would be scheduled one by one).
    satisfiable: bool = True


#: Why a set whose gangs share DRA claims is not gang-scheduled on Kubernetes 1.35.
SHARED_CLAIMS_ON_V1ALPHA1: Final = (
    "its pods share DRA claims (resourceClaims of scope Gang or Set), and the 1.35 scheduler "
    "(scheduling.k8s.io/v1alpha1) cannot bind a gang whose pods share a claim not yet "
    "allocated: each pod waits for the gang while its siblings wait for the claim being "
    "allocated (1.36 and later can)"
)
REASON_SHARED_CLAIMS: Final = "SharedClaimsUnsupported"


def decide(
    requested: GangBackend,
    api: GangAPIVersion,
    *,
    shared_claims: bool = False,
) -> Decision:
    """Resolve `gangScheduling.backend` given the gang API the cluster serves (`api`, none
    if not `api.served`); `shared_claims`: the set's pods share DRA claims, which not every
    version's scheduler binds (`SHARED_CLAIMS_ON_V1ALPHA1`).

    Auto falls back to None (pod-by-pod scheduling) and says so; an explicit Workload that
    the cluster cannot serve is unsatisfiable, never quietly downgraded.
    """
    why = f" ({api.detail})" if api.detail else ""
    wanted = GangBackend(requested)
    if wanted is GangBackend.NONE:
        return Decision(GangBackend.NONE, REASON_DISABLED, "gangScheduling.backend is None")
    if api.served and shared_claims and not api.binds_shared_claims:
        if wanted is GangBackend.AUTO:
            return Decision(
                GangBackend.NONE,
                REASON_SHARED_CLAIMS,
                f"gangs are scheduled pod by pod: {SHARED_CLAIMS_ON_V1ALPHA1}",
            )
        return Decision(
            GangBackend.NONE,
            REASON_SHARED_CLAIMS,
            f"gangScheduling.backend is Workload but {SHARED_CLAIMS_ON_V1ALPHA1}; set it to "
            "Auto or None",
            satisfiable=False,
        )
    if api.served:
        return Decision(GangBackend.WORKLOAD, REASON_WORKLOAD, api.scheduled_through())
    served = (
        "the cluster serves no gang-scheduling API (scheduling.k8s.io v1beta1, v1alpha2 or "
        "v1alpha1)"
    )
    if wanted is GangBackend.AUTO:
        return Decision(
            GangBackend.NONE,
            REASON_UNAVAILABLE,
            f"{served}{why}; gangs are scheduled pod by pod",
        )
    assert wanted is GangBackend.WORKLOAD, requested
    return Decision(
        GangBackend.NONE,
        REASON_UNAVAILABLE,
        f"gangScheduling.backend is Workload but {served}{why}",
        satisfiable=False,
    )
