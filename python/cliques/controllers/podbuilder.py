"""Pure constructors of the objects the Clique controller creates: pods from a Clique.

A pod is the Clique's pod template plus what makes it one member of one gang: its
deterministic name, the cliques labels (with the bucket label used for sharding), the
template-hash label and algorithm annotation, hostname and subdomain for stable DNS, the
CLIQUES_* environment in every container, and a controller owner reference to its Clique.
The template is never mutated: containers that get env are shallow copies.
"""

from __future__ import annotations

from typing import Any

from cliques.api import labels
from cliques.api.clique import Clique

ANNOTATION_SUBDOMAIN = "cliques.dev/subdomain"
ANNOTATION_LEADER_ADDRESS = "cliques.dev/leader-address"
ANNOTATION_PREVIOUS_HASHES = "cliques.dev/previous-template-hashes"

#: Labels the CliqueSet controller puts on a Clique and the Clique controller copies to pods.
INHERITED_LABELS = (
    labels.LABEL_CLIQUESET,
    labels.LABEL_GANG_INDEX,
    labels.LABEL_CLIQUE,
    labels.LABEL_BUCKET,
)
_OUR_ENV = frozenset(
    (
        labels.ENV_SET,
        labels.ENV_GANG_INDEX,
        labels.ENV_CLIQUE,
        labels.ENV_POD_INDEX,
        labels.ENV_CLIQUE_SIZE,
        labels.ENV_LEADER_ADDRESS,
    )
)


def owner_reference(clique: Clique) -> dict[str, Any]:
    return {
        "apiVersion": clique.api_version,
        "kind": clique.kind,
        "name": clique.metadata.name,
        "uid": clique.metadata.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _with_env(container: dict[str, Any], env: list[dict[str, str]]) -> dict[str, Any]:
    own = [e for e in container.get("env") or () if e.get("name") not in _OUR_ENV]
    return {**container, "env": own + env}


def build_pod(clique: Clique, index: int, template_hash: str, algorithm: int) -> dict[str, Any]:
    """The Pod body for pod `index` of `clique`."""
    meta = clique.metadata
    spec = clique.spec
    clabels = meta.labels
    role = spec.clique_name
    template = spec.template
    tmeta = template.get("metadata") or {}
    pod_labels = dict(tmeta.get("labels") or {})
    for key in INHERITED_LABELS:
        if key in clabels:
            pod_labels[key] = clabels[key]
    pod_labels[labels.LABEL_POD_INDEX] = str(index)
    pod_labels[labels.LABEL_TEMPLATE_HASH] = template_hash
    annotations = dict(tmeta.get("annotations") or {})
    annotations[labels.ANNOTATION_HASH_ALGORITHM] = str(algorithm)

    env = [
        {"name": labels.ENV_SET, "value": clabels.get(labels.LABEL_CLIQUESET, "")},
        {"name": labels.ENV_GANG_INDEX, "value": str(spec.gang_index)},
        {"name": labels.ENV_CLIQUE, "value": role},
        {"name": labels.ENV_POD_INDEX, "value": str(index)},
        {"name": labels.ENV_CLIQUE_SIZE, "value": str(spec.replicas)},
    ]
    leader = meta.annotations.get(ANNOTATION_LEADER_ADDRESS)
    if leader:
        env.append({"name": labels.ENV_LEADER_ADDRESS, "value": leader})

    pod_spec = dict(template.get("spec") or {})
    pod_spec["containers"] = [_with_env(c, env) for c in pod_spec.get("containers") or ()]
    if pod_spec.get("initContainers"):
        pod_spec["initContainers"] = [_with_env(c, env) for c in pod_spec["initContainers"]]
    pod_spec["hostname"] = labels.pod_hostname(role, index)
    subdomain = meta.annotations.get(ANNOTATION_SUBDOMAIN)
    if subdomain:
        pod_spec["subdomain"] = subdomain

    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": labels.pod_name(meta.name, index),
            "namespace": meta.namespace,
            "labels": pod_labels,
            "annotations": annotations,
            "ownerReferences": [owner_reference(clique)],
        },
        "spec": pod_spec,
    }


def pod_index(name: str, pod_labels: dict[str, str]) -> int | None:
    """A pod's index: its label, else the number after the last '-' of its name."""
    raw = pod_labels.get(labels.LABEL_POD_INDEX)
    if raw is None:
        raw = name.rpartition("-")[2]
    try:
        value = int(raw)
    except ValueError:
        return None
    return value if value >= 0 else None
