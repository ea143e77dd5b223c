"""The API permissions the operator uses, in one place.

`deploy/operator/rbac.yaml` (cluster-wide) and `deploy/namespaced/rbac.yaml` (one namespace)
grant exactly these; `tests/unit/test_rbac.py` checks the files against them and the in-cluster
end-to-end test asks the API server (`kubectl auth can-i`) that the shipped ServiceAccount may
do each of them and nothing else. A new API call in the operator means a new line here.

Where each comes from:

- informers list and watch CliqueSets, Cliques, Pods and Services;
- the executors create, patch (relabel, rolling update) and delete Cliques and Pods, create
  and delete Services, and patch the `status` of CliqueSets and Cliques, re-reading the object
  (`get`) when a status write meets a conflict;
- a create whose name is taken reads the holder (`get` on Cliques, Pods and Services) and
  adopts an orphan with a `patch` of its owner references;
- owner references with `blockOwnerDeletion: true` need `update` on the owner's `finalizers`
  subresource when the `OwnerReferencesPermissionEnforcement` admission plugin is on;
- the event recorder creates core/v1 Events;
- each gang template a CliqueSet rolls to is recorded as an `apps/v1` ControllerRevision
  it owns: listed and watched, created, renumbered with a `patch`, deleted beyond the
  set's `revisionHistoryLimit` (and read and adopted as any taken name is);
- with gang scheduling, the Workloads, PodGroups and (Kubernetes 1.37, alpha, a gang with
  scaling groups) CompositePodGroups of `scheduling.k8s.io` are listed and watched, created
  and deleted, a PodGroup's `minCount` patched (and read and adopted as any taken name is);
- gang-aware drain (`controllers.features.drain`): Nodes are listed and watched (their
  cordons and taints; a namespaced Role grants none, and the operator then leaves drains
  alone), and each CliqueSet's PodDisruptionBudget is listed, watched, created, patched and
  deleted (and read and adopted as any taken name is);
- EvictionRequests (`controllers.features.eviction_requests`, Kubernetes 1.37+, alpha): the
  Evictions that name the operator's responder are listed and watched, and it reports on
  them through their `status` subresource (`patch`: heartbeat, message, completion);
- shard and member Leases (with `--leases`) are listed, created, patched, replaced and
  deleted in the lease namespace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Rule:
    """One RBAC policy rule: verbs on resources (or subresources) of one API group."""

    group: str
    resource: str
    verbs: tuple[str, ...]

    def as_policy_rule(self) -> dict[str, list[str]]:
        return {"apiGroups": [self.group], "resources": [self.resource], "verbs": list(self.verbs)}


#: On the objects it reconciles: cluster-wide (a ClusterRole) or in the one namespace it
#: watches (`--namespace`, a Role).
WORKLOAD: Final = (
    Rule("cliques.dev", "cliquesets", ("get", "list", "watch")),
    Rule("cliques.dev", "cliquesets/status", ("patch",)),
    Rule("cliques.dev", "cliquesets/finalizers", ("update",)),
    Rule("cliques.dev", "cliques", ("get", "list", "watch", "create", "patch", "delete")),
    Rule("cliques.dev", "cliques/status", ("patch",)),
    Rule("cliques.dev", "cliques/finalizers", ("update",)),
    Rule(
        "cliques.dev",
        "cliquescalinggroups",
        ("get", "list", "watch", "create", "patch", "delete"),
    ),
    Rule("cliques.dev", "cliquescalinggroups/status", ("patch",)),
    Rule(
        "autoscaling",
        "horizontalpodautoscalers",
        ("get", "list", "watch", "create", "patch", "delete"),
    ),
    Rule("apps", "controllerrevisions", ("get", "list", "watch", "create", "patch", "delete")),
    Rule("", "pods", ("get", "list", "watch", "create", "patch", "delete")),
    Rule("", "pods/resize", ("patch",)),
    Rule("", "pods/status", ("patch",)),
    Rule("", "services", ("get", "list", "watch", "create", "patch", "delete")),
    Rule("", "events", ("create",)),
    Rule("scheduling.k8s.io", "workloads", ("get", "list", "watch", "create", "patch", "delete")),
    Rule("scheduling.k8s.io", "podgroups", ("get", "list", "watch", "create", "patch", "delete")),
    Rule(
        "scheduling.k8s.io",
        "compositepodgroups",
        ("get", "list", "watch", "create", "patch", "delete"),
    ),
    Rule(
        "resource.k8s.io", "resourceclaims", ("get", "list", "watch", "create", "patch", "delete")
    ),
    Rule(
        "resource.k8s.io",
        "resourceclaimtemplates",
        ("get", "list", "watch", "create", "patch", "delete"),
    ),
    Rule("kueue.x-k8s.io", "workloads", ("get", "list", "watch")),
    Rule("kueue.x-k8s.io", "localqueues", ("get", "list", "watch")),
    Rule("", "nodes", ("get", "list", "watch")),
    Rule(
        "policy",
        "poddisruptionbudgets",
        ("get", "list", "watch", "create", "patch", "delete"),
    ),
    Rule("lifecycle.k8s.io", "evictions", ("get", "list", "watch")),
    Rule("lifecycle.k8s.io", "evictions/status", ("patch",)),
)

#: On its Leases, in the lease namespace (a Role).
LEASES: Final = (
    Rule("coordination.k8s.io", "leases", ("list", "create", "patch", "update", "delete")),
)

#: Every verb of the RBAC vocabulary for resources, for the checks that the rest is denied.
ALL_VERBS: Final = (
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
)


def policy_rules(rules: tuple[Rule, ...]) -> list[dict[str, list[str]]]:
    """`rules` as the `rules:` list of a Role or ClusterRole."""
    return [rule.as_policy_rule() for rule in rules]
