"""Kueue in a dev cluster, as plain data: its configuration, CRDs and webhooks (no processes).

`addons_up` runs Kueue's manager (built from `gomod/kueue`) as a host process against the
cluster's kubeconfig; this module says how:

- Configuration (`render_config`): the `integrations.frameworks` to manage (default
  `pod`: plain pods and pod groups), `manageJobsWithoutQueueName: false`, a
  `managedJobsNamespaceSelector` that leaves out kube-system and Kueue's own namespace,
  internal certificate management off (the webhook server on 127.0.0.1 serves a
  certificate cliques makes, `certs`), metrics and health probes on loopback ports, no
  leader election, and the on-demand visibility API server off (it wants a certificate
  at a fixed in-container path and an aggregated API registration).
- CRDs (`crds`): read from the Kueue module's source in the Go module cache
  (`config/components/crd/bases`), never copied into this repository. They serve
  v1beta2 (the stored version) and v1beta1 without a conversion webhook.
- Webhooks (`webhook_configurations`): config/components/webhook/manifests.yaml with the
  namespace selectors its kustomization adds, each webhook called by URL at
  https://127.0.0.1:PORT/<its path> with the CA bundle instead of through a Service, only
  those of Kueue's own objects and of the enabled frameworks, under names of the cluster.
- `probe_flavor`: the ResourceFlavor whose dry-run create shows the webhooks answer.

The labels, annotation and scheduling gate of the pod integration are those of Kueue's
pkg/controller/constants and pkg/controller/jobs/pod/constants.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

#: Kueue's namespace, as its configuration names it (nothing of Kueue runs in it here, but
#: Kueue leaves it alone like kube-system).
NAMESPACE: Final = "kueue-system"
#: The pod labels Kueue copies onto each pod group's Workload: the operator finds a gang's
#: Workload by its CliqueSet, and its shard watches only its buckets.
LABELS_TO_COPY: Final = ("cliques.dev/cliqueset", "cliques.dev/bucket")
#: The frameworks Kueue manages unless told otherwise: plain pods and pod groups.
DEFAULT_FRAMEWORKS: Final = ("pod",)
#: Kueue's API group and the version its CRDs store.
GROUP: Final = "kueue.x-k8s.io"
API_VERSION: Final = f"{GROUP}/v1beta2"
#: The pod integration's names (Kueue's pkg/controller/jobs/pod/constants; the operator's
#: `controllers.kueue` has them too, but the dev cluster loads without the operator's
#: dependencies, for `cliques hash` on a base install).
QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
POD_GROUP_LABEL: Final = "kueue.x-k8s.io/pod-group-name"
POD_GROUP_TOTAL_COUNT: Final = "kueue.x-k8s.io/pod-group-total-count"
SCHEDULING_GATE: Final = "kueue.x-k8s.io/admission"
MANAGED_LABEL: Final = "kueue.x-k8s.io/managed"

CRD_DIR: Final = "config/components/crd/bases"
WEBHOOK_DIR: Final = "config/components/webhook"
_CONFIGURATION_KINDS: Final = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
#: Frameworks whose name is not `<group>/<kind>`: the group and resource they manage.
_BUILT_IN_FRAMEWORKS: Final[Mapping[str, tuple[str, str]]] = {
    "pod": ("", "pods"),
    "deployment": ("apps", "deployments"),
    "statefulset": ("apps", "statefulsets"),
}


@dataclass(frozen=True)
class Ports:
    """Kueue's loopback ports: webhook server, metrics (HTTPS) and health probes (HTTP)."""

    webhook: int
    metrics: int
    health: int


def render_config(
    ports: Ports, cert_dir: Path, frameworks: Sequence[str] = DEFAULT_FRAMEWORKS
) -> dict[str, Any]:
    """The `config.kueue.x-k8s.io/v1beta2` Configuration of an out-of-cluster manager."""
    if not frameworks:
        raise ValueError("Kueue needs at least one framework to manage (e.g. 'pod')")
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "manageJobsWithoutQueueName": False,
        "managedJobsNamespaceSelector": {"matchExpressions": [_not_system_namespaces()]},
        "internalCertManagement": {"enable": False},
        "webhook": {"host": "127.0.0.1", "port": ports.webhook, "certDir": str(cert_dir)},
        "metrics": {"bindAddress": f"127.0.0.1:{ports.metrics}"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{ports.health}"},
        "leaderElection": {"leaderElect": False},
        # cliques' gangs' Workloads carry their CliqueSet and bucket (docs/kueue.md).
        "integrations": {"frameworks": list(frameworks), "labelKeysToCopy": list(LABELS_TO_COPY)},
        "featureGates": {"VisibilityOnDemand": False},
    }


def _not_system_namespaces() -> dict[str, Any]:
    return {
        "key": "kubernetes.io/metadata.name",
        "operator": "NotIn",
        "values": ["kube-system", NAMESPACE],
    }


def config_text(config: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(config), sort_keys=False)


def ports_of(config: Mapping[str, Any]) -> Ports:
    """The ports a configuration of `render_config` names (ValueError if it is not one)."""
    try:
        return Ports(
            webhook=int(config["webhook"]["port"]),
            metrics=_port(config["metrics"]["bindAddress"]),
            health=_port(config["health"]["healthProbeBindAddress"]),
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"not a Kueue configuration of cliques: missing {exc}") from None


def _port(address: str) -> int:
    return int(str(address).rsplit(":", 1)[1])


def frameworks_of(config: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple((config.get("integrations") or {}).get("frameworks") or DEFAULT_FRAMEWORKS)


def load_documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def crds(source: Path) -> list[dict[str, Any]]:
    """Every CustomResourceDefinition of Kueue's config/components/crd/bases."""
    out: list[dict[str, Any]] = []
    for path in sorted((source / CRD_DIR).glob("*.yaml")):
        out.extend(d for d in load_documents(path) if d.get("kind") == "CustomResourceDefinition")
    if not out:
        raise FileNotFoundError(f"no CustomResourceDefinition in {source / CRD_DIR}")
    return out


def framework_resource(framework: str) -> tuple[str, str]:
    """`batch/job` -> ("batch", "jobs"), `pod` -> ("", "pods"): what a framework manages."""
    if framework in _BUILT_IN_FRAMEWORKS:
        return _BUILT_IN_FRAMEWORKS[framework]
    group, sep, kind = framework.rpartition("/")
    if not sep or not group or not kind:
        raise ValueError(f"unknown Kueue framework {framework!r}")
    return group, kind.lower() + "s"


def upstream_webhooks(source: Path) -> list[dict[str, Any]]:
    """Kueue's two webhook configurations from config/components/webhook, with the
    namespace selectors its kustomization's patches give some webhooks."""
    directory = source / WEBHOOK_DIR
    docs = [
        d
        for d in load_documents(directory / "manifests.yaml")
        if d.get("kind") in _CONFIGURATION_KINDS
    ]
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text(encoding="utf-8"))
    for entry in kustomization.get("patches") or []:
        if isinstance(entry, dict) and isinstance(entry.get("patch"), str):
            docs = [merge_webhook_patch(d, yaml.safe_load(entry["patch"])) for d in docs]
    if sorted(d["kind"] for d in docs) != sorted(_CONFIGURATION_KINDS):
        raise ValueError(f"{directory / 'manifests.yaml'} lacks a webhook configuration")
    return docs


def merge_webhook_patch(doc: Mapping[str, Any], patch: Any) -> dict[str, Any]:
    """A strategic-merge patch of a webhook configuration (webhooks merged by name, their
    fields replaced), as kustomize applies it; `doc` unchanged if the patch targets another."""
    out = copy.deepcopy(dict(doc))
    if not isinstance(patch, dict) or patch.get("kind") != doc.get("kind"):
        return out
    if (patch.get("metadata") or {}).get("name") != (doc.get("metadata") or {}).get("name"):
        return out
    hooks = {hook["name"]: hook for hook in out.get("webhooks") or []}
    for change in patch.get("webhooks") or []:
        hook = hooks.get(change.get("name"))
        if hook is not None:
            hook.update(copy.deepcopy({k: v for k, v in change.items() if k != "name"}))
    return out


def targets(hook: Mapping[str, Any]) -> set[tuple[str, str]]:
    """The (group, resource) pairs a webhook's rules name (`workloads/status` as
    `workloads`)."""
    found: set[tuple[str, str]] = set()
    for rule in hook.get("rules") or []:
        for group in rule.get("apiGroups") or []:
            for resource in rule.get("resources") or []:
                found.add((group, resource.split("/", 1)[0]))
    return found


def wanted(hook: Mapping[str, Any], frameworks: Sequence[str]) -> bool:
    """Whether a webhook serves Kueue's own objects or one of `frameworks`."""
    managed = {framework_resource(f) for f in frameworks}
    hit = targets(hook)
    return any(group == GROUP for group, _ in hit) or bool(hit & managed)


def webhook_configurations(
    upstream: Sequence[Mapping[str, Any]],
    name: str,
    port: int,
    ca_bundle: bytes,
    frameworks: Sequence[str] = DEFAULT_FRAMEWORKS,
) -> list[dict[str, Any]]:
    """The upstream configurations renamed `name`, with only the webhooks `wanted`, each
    called at https://127.0.0.1:`port`<its path> with `ca_bundle` (PEM)."""
    ca = base64.b64encode(ca_bundle).decode()
    out: list[dict[str, Any]] = []
    for doc in upstream:
        hooks = []
        for upstream_hook in doc.get("webhooks") or []:
            if not wanted(upstream_hook, frameworks):
                continue
            hook = copy.deepcopy(dict(upstream_hook))
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca}
            if ("", "pods") in targets(hook):
                hook["namespaceSelector"] = _excluding_system(hook.get("namespaceSelector"))
            hooks.append(hook)
        out.append(
            {
                "apiVersion": doc["apiVersion"],
                "kind": doc["kind"],
                "metadata": {"name": name, "labels": {"app.kubernetes.io/part-of": "cliques"}},
                "webhooks": hooks,
            }
        )
    return out


def _excluding_system(selector: Mapping[str, Any] | None) -> dict[str, Any]:
    """`selector` (a namespace selector) with kube-system and Kueue's namespace left out,
    as Kueue's kustomization has it for the pod webhooks."""
    out = copy.deepcopy(dict(selector or {}))
    expressions = out.setdefault("matchExpressions", [])
    excluded = {
        value
        for e in expressions
        if e.get("key") == "kubernetes.io/metadata.name" and e.get("operator") == "NotIn"
        for value in e.get("values") or []
    }
    if not {"kube-system", NAMESPACE} <= excluded:
        expressions.append(_not_system_namespaces())
    return out


def probe_flavor(name: str = "cliques-readiness-probe") -> dict[str, Any]:
    """A ResourceFlavor to create with dryRun: it goes through Kueue's mutating and
    validating webhooks, so it succeeds only when the API server reaches them."""
    return {"apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": name}}
