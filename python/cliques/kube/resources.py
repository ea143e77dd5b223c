"""Descriptors of the API resources cliques reads and writes, and their URL paths."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Resource:
    """One REST resource: enough to build its collection and item paths."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, sub: str = "") -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
            if sub:
                base += f"/{sub}"
        return base


PODS = Resource("", "v1", "pods", "Pod")
SERVICES = Resource("", "v1", "services", "Service")
EVENTS = Resource("", "v1", "events", "Event")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
PDBS = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget")
CONTROLLER_REVISIONS = Resource("apps", "v1", "controllerrevisions", "ControllerRevision")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
EVICTIONS = Resource("lifecycle.k8s.io", "v1alpha1", "evictions", "Eviction")
CLIQUESETS = Resource("cliques.dev", "v1alpha1", "cliquesets", "CliqueSet")
CLIQUES = Resource("cliques.dev", "v1alpha1", "cliques", "Clique")
SCALING_GROUPS = Resource("cliques.dev", "v1alpha1", "cliquescalinggroups", "CliqueScalingGroup")
HPAS = Resource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler")
RESOURCE_CLAIMS = Resource("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim")
RESOURCE_CLAIM_TEMPLATES = Resource(
    "resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate"
)
#: Kueue's objects the operator reads (docs/kueue.md).
KUEUE_WORKLOADS = Resource("kueue.x-k8s.io", "v1beta2", "workloads", "Workload")
LOCAL_QUEUES = Resource("kueue.x-k8s.io", "v1beta2", "localqueues", "LocalQueue")
