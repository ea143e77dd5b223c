"""The Pods the Clique controller creates (pure).

A Pod is its Clique's pod template, without the template's `cliques.dev/` label and
annotation keys, plus what makes it one member of one gang: its name, the labels its Clique
inherited, the template-hash label and algorithm annotation, hostname and subdomain for
stable DNS (the hostname carries the gang index under a shared Service), the CLIQUES_*
environment in every container, `spec.schedulingGroup.podGroupName` naming the PodGroup its
Clique records (`cliques.dev/pod-group`, from Kubernetes 1.36 on) or else `spec.workloadRef`
to the Workload it records (`cliques.dev/workload`, 1.35), if any, else, where the cluster
serves Evictions, the operator's eviction responder (`spec.evictionResponders`,
`features.eviction_requests`), and the start gate of a Clique that has one (`start_gate`).
The template is never mutated: containers that get env are shallow copies.
"""

from __future__ import annotations

from typing import Any

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import SubdomainPolicy
from cliques.api.eviction import RESPONDER_PRIORITY
from cliques.controllers.base.builders import owner_reference
from cliques.controllers.features import start_gate, workload

#: Labels the CliqueSet controller puts on a Clique and the Clique controller copies to pods.
INHERITED_LABELS = (
    labels.LABEL_CLIQUESET,
    labels.LABEL_GANG_INDEX,
    labels.LABEL_CLIQUE,
    labels.LABEL_BUCKET,
    labels.LABEL_SCALING_GROUP,
    labels.LABEL_GROUP_INDEX,
)
_OUR_ENV = frozenset(
    (
        labels.ENV_SET,
        labels.ENV_GANG_INDEX,
        labels.ENV_CLIQUE,
        labels.ENV_POD_INDEX,
        labels.ENV_CLIQUE_SIZE,
        labels.ENV_LEADER_ADDRESS,
        labels.ENV_SCALING_GROUP,
        labels.ENV_GROUP_INDEX,
    )
)


def _tenant_keys(values: Any) -> dict[str, Any]:
    """A copy of a template's labels or annotations without the operator's keys."""
    if not isinstance(values, dict):
        return {}
    return {k: v for k, v in values.items() if not labels.is_reserved(k)}


def _with_env(container: dict[str, Any], env: list[dict[str, str]]) -> dict[str, Any]:
    own = [e for e in container.get("env") or () if e.get("name") not in _OUR_ENV]
    return {**container, "env": own + env}


def pod_body(
    clique: Clique,
    index: int,
    template_hash: str,
    algorithm: int,
    *,
    gate_image: str = "",
    gate_open: bool = True,
    responder: bool = False,
) -> dict[str, Any]:
    """The Pod body for pod `index` of `clique`. A Clique with `startGate` and
    `startsAfter` gives its pods a start gate (`start_gate`) of image `gate_image`, created
    open or closed as `gate_open` says. With `responder` (the cluster serves Evictions),
    a pod in no PodGroup names the operator's eviction responder (`eviction_requests`)."""
    meta = clique.metadata
    spec = clique.spec
    clabels = meta.labels
    role = spec.clique_name
    template = spec.template
    tmeta = template.get("metadata") or {}
    # The operator's keys are its own: a template's copy of one (a Clique stored before the
    # CRD refused them) never reaches a pod, where the operator would act on it.
    pod_labels = _tenant_keys(tmeta.get("labels"))
    for key in INHERITED_LABELS:
        if key in clabels:
            pod_labels[key] = clabels[key]
    pod_labels[labels.LABEL_POD_INDEX] = str(index)
    pod_labels[labels.LABEL_TEMPLATE_HASH] = template_hash
    annotations = _tenant_keys(tmeta.get("annotations"))
    annotations[labels.ANNOTATION_HASH_ALGORITHM] = str(algorithm)
    restarts = meta.annotations.get(labels.ANNOTATION_GANG_RESTARTS)
    if restarts:
        annotations[labels.ANNOTATION_GANG_RESTARTS] = restarts

    env = [
        {"name": labels.ENV_SET, "value": clabels.get(labels.LABEL_CLIQUESET, "")},
        {"name": labels.ENV_GANG_INDEX, "value": str(spec.gang_index)},
        {"name": labels.ENV_CLIQUE, "value": role},
        {"name": labels.ENV_POD_INDEX, "value": str(index)},
        {"name": labels.ENV_CLIQUE_SIZE, "value": str(spec.replicas)},
    ]
    leader = meta.annotations.get(labels.ANNOTATION_LEADER_ADDRESS)
    if leader:
        env.append({"name": labels.ENV_LEADER_ADDRESS, "value": leader})
    group = clabels.get(labels.LABEL_SCALING_GROUP)
    instance_label = clabels.get(labels.LABEL_GROUP_INDEX, "")
    instance = int(instance_label) if group and instance_label.isdigit() else None
    if group and instance is not None:
        env.append({"name": labels.ENV_SCALING_GROUP, "value": group})
        env.append({"name": labels.ENV_GROUP_INDEX, "value": str(instance)})

    pod_spec = dict(template.get("spec") or {})
    pod_spec["containers"] = [_with_env(c, env) for c in pod_spec.get("containers") or ()]
    if pod_spec.get("initContainers"):
        pod_spec["initContainers"] = [_with_env(c, env) for c in pod_spec["initContainers"]]
    if meta.annotations.get(labels.ANNOTATION_SUBDOMAIN_POLICY) == SubdomainPolicy.SHARED:
        pod_spec["hostname"] = labels.shared_pod_hostname(role, spec.gang_index, index, instance)
    else:
        pod_spec["hostname"] = labels.pod_hostname(role, index, instance)
    subdomain = meta.annotations.get(labels.ANNOTATION_SUBDOMAIN)
    if subdomain:
        pod_spec["subdomain"] = subdomain
    if spec.start_gate and spec.starts_after and gate_image:
        start_gate.add(
            pod_spec,
            annotations,
            image=gate_image,
            starts_after=spec.starts_after,
            open_now=gate_open,
        )
    pod_group = meta.annotations.get(labels.ANNOTATION_POD_GROUP)
    gang_workload = meta.annotations.get(labels.ANNOTATION_WORKLOAD)
    if pod_group:
        pod_spec["schedulingGroup"] = {"podGroupName": pod_group}
    elif gang_workload:
        pod_spec["workloadRef"] = workload.workload_ref(gang_workload, spec.gang_index)
    elif responder:
        # (the API refuses responders on a pod in a PodGroup). Not part of the template
        # hash: pods made before keep their gang, and are not replaced for lacking it.
        pod_spec["evictionResponders"] = [
            *(
                r
                for r in pod_spec.get("evictionResponders") or ()
                if r.get("name") != labels.LABEL_RESPONDER
            ),
            {"name": labels.LABEL_RESPONDER, "priority": RESPONDER_PRIORITY},
        ]

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
