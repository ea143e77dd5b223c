"""metrics-server in a dev cluster, as plain data: how kwokctl is asked to run it, how KWOK
simulates the usage it reports, and how to read it back (no processes).

kwokctl runs metrics-server as one more component of the cluster (`--enable
metrics-server`: the `enableMetricsServer` option) from the binary built from
`gomod/metrics-server` (`metricsServerBinary`, never a download), and registers its
APIService `v1beta1.metrics.k8s.io` from the `manifests/base` kustomization of the
metrics-server module's source in the Go module cache (`metricsServerManifests`; kwokctl
builds it with `kubectl kustomize`, drops the Deployment and points the Service at the
process on 127.0.0.1). It must be chosen when the cluster is created: kwokctl starts only the
components it was created with.

With metrics-server enabled, kwokctl gives kwok-controller its default `Metric`
(`metrics-resource`: a kubelet's /metrics/resource per node, at
/metrics/nodes/<node>/metrics/resource) and `ClusterResourceUsage` (`usage-from-annotation`:
a pod's CPU and memory usage are the quantities in its annotations `USAGE_CPU_ANNOTATION`
and `USAGE_MEMORY_ANNOTATION`, else 1m and 1Mi), both as kwok v0.8.0's
kustomize/metrics/{resource,usage} have them. metrics-server finds a node's path in the node
annotation `RESOURCE_METRICS_PATH_ANNOTATION`, which kwokctl's own nodes carry and cliques'
nodes get from `node_annotations`. It scrapes every `RESOLUTION_SECONDS`, so a new reading
shows within about twice that.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

#: The metrics-server module's kustomization that holds its APIService and Service.
MANIFEST_DIR: Final = "manifests/base"
APISERVICE: Final = "v1beta1.metrics.k8s.io"
USAGE_CPU_ANNOTATION: Final = "kwok.x-k8s.io/usage-cpu"
USAGE_MEMORY_ANNOTATION: Final = "kwok.x-k8s.io/usage-memory"
RESOURCE_METRICS_PATH_ANNOTATION: Final = "metrics.k8s.io/resource-metrics-path"
#: kwokctl's `--metric-resolution` for metrics-server.
RESOLUTION_SECONDS: Final = 15

_QUANTITY = re.compile(r"^(?P<number>[0-9]+(?:\.[0-9]+)?)(?P<suffix>n|u|m|k|M|G|)$")
_CPU_SUFFIXES: Final[Mapping[str, Decimal]] = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
}


def kwokctl_options(binary: Path, source: Path) -> dict[str, Any]:
    """The KwokctlConfiguration options that run metrics-server from `binary` with the
    APIService of the metrics-server module at `source`."""
    return {
        "enableMetricsServer": True,
        "metricsServerBinary": str(binary),
        "metricsServerManifests": [str(source / MANIFEST_DIR)],
    }


def with_metrics_server(config: Mapping[str, Any], binary: Path, source: Path) -> dict[str, Any]:
    """A copy of a KwokctlConfiguration (`kwok.kwokctl_configuration`) that also runs
    metrics-server."""
    out = copy.deepcopy(dict(config))
    out.setdefault("options", {}).update(kwokctl_options(binary, source))
    return out


def node_metrics_path(node: str) -> str:
    """Where kwok-controller serves node `node`'s kubelet /metrics/resource."""
    return f"/metrics/nodes/{node}/metrics/resource"


def node_annotations(node: str) -> dict[str, str]:
    return {RESOURCE_METRICS_PATH_ANNOTATION: node_metrics_path(node)}


def pod_metrics_path(namespace: str, pod: str) -> str:
    """The metrics API path of one pod's usage (`kubectl get --raw`)."""
    return f"/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods/{pod}"


def cpu_cores(quantity: str) -> Decimal:
    """A CPU quantity as metrics-server and annotations write it (`500m`, `499871234n`,
    `2`) in cores; ValueError for anything else."""
    match = _QUANTITY.match(quantity.strip())
    if match is None:
        raise ValueError(f"not a CPU quantity: {quantity!r}")
    return Decimal(match.group("number")) * _CPU_SUFFIXES[match.group("suffix")]


def pod_cpu_cores(pod_metrics: Mapping[str, Any]) -> Decimal:
    """The CPU usage of a PodMetrics object: the sum over its containers, in cores."""
    containers = pod_metrics.get("containers") or []
    return sum(
        (cpu_cores(str((c.get("usage") or {}).get("cpu", "0"))) for c in containers), Decimal(0)
    )
