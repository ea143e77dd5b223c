"""The bodies of the objects the controllers create (pure): Cliques, gang Services, Pods.

- A Clique is one clique template of one gang: its deterministic name, the gang labels
  (with the bucket label used for sharding), the template-hash label and algorithm
  annotation, its gang's DNS layout annotations (subdomain, leader address, subdomain
  policy: `subdomains`), the `startsAfter` of its gang (and `startGate` when it is enforced
  after placement), and its pod template with the affinity of `spec.placement` for its
  gang (`placement`). The template's label and annotation keys under `cliques.dev/` are
  left out (`bounds.tenant_template`): they are the operator's.
- A headless Service publishes not-ready addresses and selects the pods of one gang, or of
  the whole CliqueSet for the shared one. It lists the ports the pod templates' containers
  declare (`service_ports`), each targeting its own number.
- A Pod is its Clique's pod template, without the template's `cliques.dev/` label and
  annotation keys, plus what makes it one member of one gang: its name,
  the labels its Clique inherited, the template-hash label and algorithm annotation,
  hostname and subdomain for stable DNS (the hostname carries the gang index under a
  shared Service), the CLIQUES_* environment in every container,
  `spec.schedulingGroup.podGroupName` naming the PodGroup its Clique records
  (`cliques.dev/pod-group`, from Kubernetes 1.36 on) or else `spec.workloadRef` to the
  Workload it records (`cliques.dev/workload`, 1.35), if any, and the start gate of a
  Clique that has one (`start_gate`).
  The template is never mutated: containers that get env are shallow copies.

Each body carries a controller owner reference to the object it belongs to
(`owner_reference`).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet, SubdomainPolicy
from cliques.api.cliquetemplate import CliqueTemplate
from cliques.controllers.base import bounds
from cliques.controllers.features import claims, kueue, placement, start_gate, workload

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


def owner_reference(owner: CliqueSet | Clique) -> dict[str, Any]:
    """The controller owner reference to `owner` (a deletion of the owner waits for it)."""
    return {
        "apiVersion": owner.api_version,
        "kind": owner.kind,
        "name": owner.metadata.name,
        "uid": owner.metadata.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def gang_labels(cqs: CliqueSet, gang: int, bucket: str) -> dict[str, str]:
    """The labels of every object of one gang."""
    return {
        labels.LABEL_CLIQUESET: cqs.metadata.name,
        labels.LABEL_GANG_INDEX: str(gang),
        labels.LABEL_BUCKET: bucket,
    }


def clique_body(
    cqs: CliqueSet,
    gang: int,
    tmpl: CliqueTemplate,
    *,
    starts_after: list[str],
    template_hash: str,
    algorithm: int,
    bucket: str,
    workload: str = "",
    pod_group: str = "",
    scheduler_packs: bool = False,
    layout: dict[str, str] | None = None,
    start_gates: bool = False,
    claims_via_group: bool = False,
    kueue_revision: str = "",
    member: str = "",
    member_labels: dict[str, str] | None = None,
    dependency_names: list[str] | None = None,
) -> dict[str, Any]:
    """The Clique of clique template `tmpl` in gang `gang`; `starts_after` are the roles
    (clique template names) it starts after, or `dependency_names` the Clique names (for a
    set with scaling groups, `scaling.dependencies`); `member` its name in the gang
    (`labels.member_name`: the role, or `<role>-<instance>` for an instance of a scaling
    group, whose `member_labels` say so); `workload` the Workload its gang uses (1.35),
    `pod_group` the PodGroup (1.36 on); `layout` its gang's DNS layout annotations
    (`subdomains`), none if None; `start_gates`: its start order is kept by start gates
    after placement (`startGate`); `claims_via_group`: its gang's PodGroup lists the
    gang's DRA claims (`claims.pod_claims`); `kueue_revision`: the gang's Kueue pod group
    revision (`kueue`), "" for a set Kueue does not queue."""
    name = cqs.metadata.name
    ns = cqs.metadata.namespace
    annotations = {labels.ANNOTATION_HASH_ALGORITHM: str(algorithm)}
    if workload:
        annotations[labels.ANNOTATION_WORKLOAD] = workload
    if pod_group:
        annotations[labels.ANNOTATION_POD_GROUP] = pod_group
    annotations.update(layout or {})
    deps = (
        dependency_names
        if dependency_names is not None
        else [labels.clique_name(name, gang, d) for d in starts_after]
    )
    return {
        "apiVersion": labels.API_VERSION,
        "kind": labels.KIND_CLIQUE,
        "metadata": {
            "name": labels.clique_name(name, gang, member or tmpl.name),
            "namespace": ns,
            "labels": {
                **gang_labels(cqs, gang, bucket),
                **(member_labels or {}),
                labels.LABEL_CLIQUE: tmpl.name,
                labels.LABEL_TEMPLATE_HASH: template_hash,
            },
            "annotations": annotations,
            "ownerReferences": [owner_reference(cqs)],
        },
        "spec": {
            "cliqueName": tmpl.name,
            "gangIndex": gang,
            "replicas": tmpl.replicas,
            "minAvailable": tmpl.effective_min_available,
            "startsAfter": deps,
            **({"startGate": True} if start_gates and deps else {}),
            "template": gang_template(
                cqs,
                gang,
                tmpl,
                scheduler_packs=scheduler_packs,
                claims_via_group=claims_via_group,
                kueue_revision=kueue_revision,
            ),
        },
    }


def gang_template(
    cqs: CliqueSet,
    gang: int,
    tmpl: CliqueTemplate,
    *,
    scheduler_packs: bool = False,
    claims_via_group: bool = False,
    kueue_revision: str = "",
) -> Any:
    """The pod template of clique template `tmpl` in gang `gang`: the user's without the
    operator's label and annotation keys (`bounds.tenant_template`), with the affinity
    `spec.placement` compiles to for that gang (`placement.gang_template`); without the
    pack term when the scheduler packs the gang (`scheduler_packs`: its PodGroup's topology
    constraint). The template hash is still taken of the user's template as stored
    (`placement.hash_basis`), so a set stored with such keys keeps its hash: leaving them
    out never rolls its gangs. With `spec.resourceClaims`, the claim entries of the
    clique's pods in that gang (`claims.resolve`). For a set queued by Kueue
    (`kueue_revision`), the gang's pod group (`kueue.resolve`)."""
    where = cqs.spec.placement
    if scheduler_packs and where is not None:
        where = msgspec.structs.replace(where, pack=None)
    placed = placement.gang_template(
        bounds.tenant_template(tmpl.template), where, cqs.metadata.name, gang
    )
    resolved = claims.resolve(placed, cqs, tmpl.name, gang, claims_via_group)
    if not kueue_revision:
        return resolved
    return kueue.resolve(resolved, cqs, tmpl.name, gang, kueue_revision)


#: Protocols a Service port may carry.
_PROTOCOLS = ("TCP", "UDP", "SCTP")
#: A name a Service port may take from a container port (an IANA service name, lower case).
_PORT_NAME = re.compile(r"^(?=.*[a-z])[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$")


def service_ports(cqs: CliqueSet) -> list[dict[str, Any]]:
    """The ports of the CliqueSet's headless Services: every port the containers of its pod
    templates declare, once per number and protocol, in template order. Each targets its
    own number, so the pods of every role resolve it, and is named after its container port
    (or `<protocol>-<number>` when that name is missing or taken); ports the API server
    would refuse are left out.

    Ports matter beyond DNS SRV records: kube-controller-manager's endpoint-slice controller
    groups a Service's slices by their ports and takes the stored slices of a Service
    without ports for a different group from the one it computes, so it rewrites every
    slice of such a Service on every sync. From about a thousand pods (ten slices) on, its
    own writes start the next sync: every slice is rewritten once a second, for as long as
    the Service exists."""
    out: list[dict[str, Any]] = []
    seen: set[tuple[int, str]] = set()
    names: set[str] = set()
    for tmpl in cqs.spec.template.cliques:
        spec = tmpl.template.get("spec")
        containers = spec.get("containers") if isinstance(spec, dict) else None
        for ctr in containers if isinstance(containers, list) else ():
            ports = ctr.get("ports") if isinstance(ctr, dict) else None
            for port in ports if isinstance(ports, list) else ():
                if not isinstance(port, dict):
                    continue
                number = port.get("containerPort")
                protocol = port.get("protocol", "TCP")
                if (
                    not isinstance(number, int)
                    or isinstance(number, bool)
                    or not 0 < number < 65536
                    or protocol not in _PROTOCOLS
                    or (number, protocol) in seen
                ):
                    continue
                name = port.get("name")
                if not isinstance(name, str) or not _PORT_NAME.match(name) or name in names:
                    name = f"{protocol.lower()}-{number}"
                    if name in names:  # a container port took this name for another number
                        continue
                seen.add((number, protocol))
                names.add(name)
                out.append(
                    {"name": name, "port": number, "protocol": protocol, "targetPort": number}
                )
    return out


def service_body(cqs: CliqueSet, gang: int | None, bucket: str) -> dict[str, Any]:
    """The headless Service of gang `gang`, or with `gang` None the one shared by every
    gang of the CliqueSet (its pods' subdomain)."""
    name = cqs.metadata.name
    selector = {labels.LABEL_CLIQUESET: name}
    if gang is None:
        svc_name = labels.set_service_name(name)
        svc_labels = {labels.LABEL_CLIQUESET: name, labels.LABEL_BUCKET: bucket}
    else:
        svc_name = labels.gang_service_name(name, gang)
        svc_labels = gang_labels(cqs, gang, bucket)
        selector[labels.LABEL_GANG_INDEX] = str(gang)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": svc_name,
            "namespace": cqs.metadata.namespace,
            "labels": svc_labels,
            "ownerReferences": [owner_reference(cqs)],
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": selector,
            **({"ports": ports} if (ports := service_ports(cqs)) else {}),
        },
    }


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
) -> dict[str, Any]:
    """The Pod body for pod `index` of `clique`. A Clique with `startGate` and
    `startsAfter` gives its pods a start gate (`start_gate`) of image `gate_image`, created
    open or closed as `gate_open` says."""
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
