"""Names shared by the operator and everything it creates: labels, annotations, env, naming.

Every string that appears on a Kubernetes object the operator writes lives here, so the
controllers (`cliques.controllers`), the informers' label selectors (`cliques.kube`) and the
tests agree on one spelling. Each label and annotation key is declared once, as an entry
of `NAMES` (the objects that carry it, what it says, the modules that write and read it),
and its constant is that entry's key. The naming helpers build the deterministic names of DESIGN §2
and refuse, with a `ValueError` naming the piece at fault, a name Kubernetes would reject:

    Clique   <cliqueset>-<gang index>-<clique name>     object name, <= 253
    Pod      <clique object name>-<pod index>           object name, <= 253
    hostname <clique name>-<gang index>-<pod index>     DNS-1123 label, <= 63 (Shared)
             <clique name>-<pod index>                  DNS-1123 label, <= 63 (UniquePerGang)
    Service  <cliqueset>                                DNS-1035 label, <= 63 (Shared)
             <cliqueset>-<gang index>                   DNS-1035 label, <= 63 (UniquePerGang)

A clique in a scaling group has one Clique per instance of the group in each gang; the
instance index follows the clique name (the CRD refuses clique names ending in `-<digits>`
in a set with scaling groups, so no two names meet):

    Clique   <cliqueset>-<gang index>-<clique name>-<instance>
    hostname <clique name>-<gang index>-<instance>-<pod index>   (Shared)
             <clique name>-<instance>-<pod index>                (UniquePerGang)
    CliqueScalingGroup  <cliqueset>-<gang index>-<group name>    object name, <= 253
    ControllerRevision  <cliqueset>-<revision hash>              object name, <= 253

The Service is the pods' subdomain: one per CliqueSet (`subdomainPolicy: Shared`), whose
pods' hostnames carry the gang so that they are unique in it, or one per gang
(`UniquePerGang`), whose pods' hostnames are unique within the gang only.

These names read back unambiguously: the indices have no '-', and a clique (or scaling
group) name has no part made only of digits before a '-' (the CRD's rule), so
`<set>-<gang>-<clique>` splits one way only. Every other name the operator makes
from user names and cuts, or joins where the join could be read two ways, is made by
`generated_name`, the one rule for them (docs/operator.md, "Names"): kept as is while it
is short and unambiguous, else cut and given `name_hash` of all its parts.

The CRD schema bounds the inputs (`MAX_CLIQUESET_NAME_LENGTH`, `MAX_CLIQUE_NAME_LENGTH`, int32
counts) so that these checks never fire for an object the API server accepted; they are the
last line of defence, not the validation users see. This module imports nothing from the
rest of `cliques` but the Rust core's FNV-1a.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, Literal

from cliques import _core

GROUP: Final = "cliques.dev"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND_CLIQUESET: Final = "CliqueSet"
KIND_CLIQUE: Final = "Clique"
KIND_SCALING_GROUP: Final = "CliqueScalingGroup"

#: The field manager for every server-side apply and update the operator sends.
FIELD_MANAGER: Final = "cliques-operator"


@dataclass(frozen=True, slots=True)
class Name:
    """One label or annotation key of the operator's (`NAMES`): where it goes, what it
    says, and the modules (under `cliques.`) that use it. `writers` put it on objects (and
    may read it too); `readers` only read it, or match on it in a selector. A unit test
    (tests/unit/test_label_registry.py) checks that every key the code spells is here and
    that these modules, and only these, use each constant; `scripts/gen_names_table.py`
    writes the table of them in docs/operator.md."""

    key: str
    kind: Literal["label", "annotation", "condition"]
    #: the kinds of object that carry it
    on: tuple[str, ...]
    meaning: str
    writers: tuple[str, ...]
    readers: tuple[str, ...] = ()


_NAMES: list[Name] = []


def _name(
    kind: Literal["label", "annotation", "condition"],
    suffix: str,
    *,
    on: tuple[str, ...],
    meaning: str,
    writers: tuple[str, ...],
    readers: tuple[str, ...] = (),
) -> str:
    key = f"{GROUP}/{suffix}"
    _NAMES.append(Name(key, kind, on, meaning, writers, readers))
    return key


def _label(suffix: str, **entry: Any) -> str:
    return _name("label", suffix, **entry)


def _annotation(suffix: str, **entry: Any) -> str:
    return _name("annotation", suffix, **entry)


def _condition(suffix: str, **entry: Any) -> str:
    return _name("condition", suffix, **entry)


_OWNED: Final = ("Clique", "Pod", "Service")
_GANG_OBJECTS: Final = (
    "Clique",
    "Pod",
    "Service",
    "CliqueScalingGroup",
    "HorizontalPodAutoscaler",
    "PodGroup",
    "ResourceClaim",
    "ResourceClaimTemplate",
)

# Labels on every object a CliqueSet owns (Cliques, Pods, Services, and the objects of its
# gang features).
LABEL_CLIQUESET: Final = _label(
    "cliqueset",
    on=(*_GANG_OBJECTS, "Workload", "ControllerRevision", "PodDisruptionBudget"),
    meaning="The CliqueSet the object belongs to.",
    writers=(
        "controllers.base.builders",
        "controllers.clique.bodies",
        "controllers.features.autoscaling",
        "controllers.features.claims",
        "controllers.features.drain",
        "controllers.features.podgroups",
        "controllers.features.revisions",
        "controllers.features.scaling",
        "controllers.features.workload",
    ),
    readers=(
        "controllers.base.executor",
        "controllers.clique.controller",
        "controllers.clique.planner",
        "controllers.clique.status",
        "controllers.cliqueset.controller",
        "controllers.cliqueset.status",
        "controllers.features.eviction_requests",
        "controllers.features.kueue",
        "controllers.features.placement",
        "kubectl.diff",
        "kubectl.fetch",
        "rollout.history",
    ),
)
LABEL_GANG_INDEX: Final = _label(
    "gang-index",
    on=_GANG_OBJECTS,
    meaning="The index of the gang the object belongs to.",
    writers=(
        "controllers.base.builders",
        "controllers.clique.bodies",
        "controllers.features.autoscaling",
        "controllers.features.claims",
        "controllers.features.podgroups",
        "controllers.features.scaling",
    ),
    readers=(
        "controllers.base.executor",
        "controllers.clique.controller",
        "controllers.clique.status",
        "controllers.cliqueset.planner",
        "controllers.features.eviction_requests",
        "controllers.features.gang_trees",
        "controllers.features.placement",
    ),
)
LABEL_CLIQUE: Final = _label(
    "clique",
    on=("Clique", "Pod"),
    meaning="The clique (role) name in the template.",
    writers=(
        "controllers.clique.bodies",
        "controllers.cliqueset.bodies",
    ),
    readers=(
        "controllers.base.executor",
        "controllers.clique.status",
        "controllers.features.placement",
    ),
)
LABEL_POD_INDEX: Final = _label(
    "pod-index",
    on=("Pod",),
    meaning="The pod's index in its Clique.",
    writers=("controllers.clique.bodies",),
    readers=(
        "controllers.base.executor",
        "controllers.clique.planner",
        "kubectl.status",
    ),
)
LABEL_TEMPLATE_HASH: Final = _label(
    "template-hash",
    on=("Clique", "Pod"),
    meaning="The canonical hash of the clique template the object was made from (or updated "
    "in place to).",
    writers=(
        "controllers.clique.bodies",
        "controllers.clique.planner",
        "controllers.cliqueset.planner",
        "controllers.cliqueset.restarts",
        "controllers.cliqueset.rollout",
        "controllers.features.inplace",
    ),
    readers=(
        "controllers.clique.controller",
        "controllers.clique.status",
        "controllers.cliqueset.controller",
        "controllers.features.gang_failures",
        "kubectl.diff",
        "kubectl.status",
    ),
)
LABEL_BUCKET: Final = _label(
    "bucket",
    on=(*_GANG_OBJECTS, "ControllerRevision", "PodDisruptionBudget"),
    meaning="The shard bucket of the CliqueSet, which operator process handles the object.",
    writers=(
        "controllers.base.builders",
        "controllers.clique.bodies",
        "controllers.features.autoscaling",
        "controllers.features.claims",
        "controllers.features.composite_groups",
        "controllers.features.drain",
        "controllers.features.gang_scheduling",
        "controllers.features.podgroups",
        "controllers.features.revisions",
        "controllers.features.scaling",
    ),
    readers=("operator.buckets",),
)
LABEL_SCALING_GROUP: Final = _label(
    "scaling-group",
    on=("Clique", "Pod", "PodGroup"),
    meaning="On the Cliques and pods of an instance of a scaling group: the group.",
    writers=(
        "controllers.clique.bodies",
        "controllers.features.composite_groups",
        "controllers.features.gang_trees",
        "controllers.features.scaling",
    ),
    readers=("controllers.features.gang_tree_parts",),
)
LABEL_GROUP_INDEX: Final = _label(
    "group-index",
    on=("Clique", "Pod", "PodGroup"),
    meaning="On the Cliques and pods of an instance of a scaling group: the instance.",
    writers=(
        "controllers.clique.bodies",
        "controllers.features.composite_groups",
        "controllers.features.gang_trees",
        "controllers.features.scaling",
    ),
    readers=(
        "controllers.clique.status",
        "controllers.features.podgroups",
    ),
)
LABEL_CLAIM: Final = _label(
    "claim",
    on=("ResourceClaim", "ResourceClaimTemplate"),
    meaning="The spec.resourceClaims entry the claim object was made from.",
    writers=("controllers.features.claims",),
)
LABEL_LEASE_ROLE: Final = _label(
    "lease",
    on=("Lease",),
    meaning="The role of an operator Lease: shard or member.",
    writers=("operator.shard_leases",),
)
LABEL_TOPOLOGY_PROBE: Final = _label(
    "probe",
    on=("Node",),
    meaning="A node label key no node carries: the topology key of the dry-run PodGroup "
    "that probes the TopologyAwareWorkloadScheduling gate. Never written on an object.",
    writers=("kube.gangapi",),
)

# Annotations.
ANNOTATION_HASH_ALGORITHM: Final = _annotation(
    "hash-algorithm",
    on=("Clique", "Pod"),
    meaning="The version of the template-hash algorithm that produced the template-hash label.",
    writers=(
        "controllers.clique.bodies",
        "controllers.clique.planner",
        "controllers.cliqueset.planner",
        "controllers.cliqueset.restarts",
        "controllers.cliqueset.rollout",
        "controllers.features.inplace",
    ),
)
ANNOTATION_PREVIOUS_HASHES: Final = _annotation(
    "previous-template-hashes",
    on=("Clique",),
    meaning="Hashes of its template under older hash algorithms (comma-separated, at most "
    "four), whose pods are re-labelled in place instead of recreated.",
    writers=(
        "controllers.cliqueset.restarts",
        "controllers.cliqueset.rollout",
    ),
    readers=("controllers.clique.planner",),
)
ANNOTATION_SUBDOMAIN: Final = _annotation(
    "subdomain",
    on=("Clique",),
    meaning="On a Clique of a gang with a headless Service: its pods' spec.subdomain.",
    writers=("controllers.features.subdomains",),
    readers=("controllers.clique.bodies",),
)
ANNOTATION_LEADER_ADDRESS: Final = _annotation(
    "leader-address",
    on=("Clique",),
    meaning="On a Clique of a gang with a headless Service: what CLIQUES_LEADER_ADDRESS holds.",
    writers=("controllers.features.subdomains",),
    readers=("controllers.clique.bodies",),
)
ANNOTATION_SUBDOMAIN_POLICY: Final = _annotation(
    "subdomain-policy",
    on=("Clique",),
    meaning="The subdomain policy its gang was made with (Shared: hostnames carry the gang "
    "index). Absent on the Cliques of older releases, whose gangs are UniquePerGang.",
    writers=("controllers.features.subdomains",),
    readers=("controllers.clique.bodies",),
)
ANNOTATION_WORKLOAD: Final = _annotation(
    "workload",
    on=("Clique", "PodGroup"),
    meaning="On a Clique whose gang is gang-scheduled: the Workload its pods reference (set "
    "when the gang's Cliques are made, and moved to the current one when all the gang's pods "
    "are made again: a pod's spec.workloadRef is immutable); on a PodGroup, the Workload it "
    "belongs to.",
    writers=(
        "controllers.cliqueset.planner",
        "controllers.cliqueset.restarts",
        "controllers.features.composite_groups",
        "controllers.features.gang_trees",
        "controllers.features.podgroups",
    ),
    readers=(
        "controllers.clique.bodies",
        "controllers.features.gang_scheduling",
    ),
)
ANNOTATION_POD_GROUP: Final = _annotation(
    "pod-group",
    on=("Clique",),
    meaning="On a Clique whose gang is gang-scheduled through PodGroups (Kubernetes 1.36 and "
    "later): the PodGroup its pods name in spec.schedulingGroup.podGroupName.",
    writers=(
        "controllers.cliqueset.planner",
        "controllers.cliqueset.restarts",
        "controllers.features.drain",
    ),
    readers=(
        "controllers.clique.bodies",
        "controllers.features.gang_scheduling",
        "controllers.features.gang_trees",
    ),
)
ANNOTATION_RESOURCE_CLAIMS: Final = _annotation(
    "resource-claims",
    on=("Pod",),
    meaning="On a pod template (and so its pods) of a CliqueSet with spec.resourceClaims: the "
    'claims that make its template hash, as JSON [{"name", "scope", "hash"}]: those its pods '
    "get and every Gang-scope one (a change of a gang's shared claim remakes the gang). The "
    "claim entries the operator adds to spec.resourceClaims are those it names.",
    writers=("controllers.features.claims",),
)
ANNOTATION_UPDATE: Final = _annotation(
    "update",
    on=("Clique",),
    meaning="On a Clique a roll gave a new template: Replace, or with updateStrategy.inPlace "
    "IfPossible and only container images changed, InPlace:<hash>,..., the template hashes "
    "its pods may be updated in place from.",
    writers=("controllers.cliqueset.restarts",),
    readers=(
        "controllers.cliqueset.rollout",
        "controllers.features.inplace",
    ),
)
ANNOTATION_IN_PLACE: Final = _annotation(
    "in-place-update",
    on=("Pod",),
    meaning="On a pod updated in place: the template hash it was updated to; it counts as "
    "ready for that template once its containers report the new images.",
    writers=("controllers.features.inplace",),
)
ANNOTATION_POD_GROUP_SPEC: Final = _annotation(
    "pod-group-spec",
    on=("PodGroup",),
    meaning="A hash of the fields the PodGroup was made with that the API server keeps "
    "immutable: when the wanted ones differ, it is made again.",
    writers=(
        "controllers.features.composite_groups",
        "controllers.features.podgroups",
    ),
)
ANNOTATION_BREACH_SINCE: Final = _annotation(
    "breach-since",
    on=("Clique",),
    meaning="failurePolicy RecreateGang: when the gang was first seen below minAvailable.",
    writers=(
        "controllers.features.drain",
        "controllers.features.gang_failures",
    ),
)
ANNOTATION_GANG_RESTARTS: Final = _annotation(
    "gang-restarts",
    on=("Clique", "Pod"),
    meaning="How many times the gang was recreated whole (failurePolicy RecreateGang, or a "
    "move off a drained node; pods of another count are deleted).",
    writers=(
        "controllers.clique.bodies",
        "controllers.cliqueset.planner",
        "controllers.features.drain",
        "controllers.features.gang_failures",
    ),
    readers=(
        "controllers.clique.controller",
        "controllers.clique.status",
        "controllers.features.eviction_requests",
        "kubectl.status",
    ),
)
ANNOTATION_LAST_RESTART: Final = _annotation(
    "last-restart",
    on=("Clique",),
    meaning="failurePolicy RecreateGang: when the gang was last recreated.",
    writers=("controllers.features.gang_failures",),
)
ANNOTATION_MOVED_AT: Final = _annotation(
    "moved-at",
    on=("Clique",),
    meaning="When the gang was last moved off a drained node: its new pods are made only "
    "some seconds after (a drain that evicts by name finds the name free meanwhile). A move "
    "off lost nodes only removes it: nothing evicts there.",
    writers=("controllers.features.drain",),
    readers=("kubectl.status",),
)
ANNOTATION_FORGIVEN_RESTARTS: Final = _annotation(
    "forgiven-restarts",
    on=("Clique",),
    meaning="How many of the gang's restarts no longer count towards maxGangRestarts: the "
    "gang stayed available long enough since (failurePolicy RecreateGang), or they were "
    "moves off drained nodes.",
    writers=(
        "controllers.features.drain",
        "controllers.features.gang_failures",
    ),
)
ANNOTATION_AVAILABLE_EPOCH: Final = _annotation(
    "available-epoch",
    on=("Clique",),
    meaning="On the first Clique of a gang (failurePolicy RecreateGang): the gang's epoch "
    "(restart count and template hashes, hashed) in which it was last seen available whole; "
    "only a gang that was can break.",
    writers=("controllers.features.gang_failures",),
)
ANNOTATION_INSTANCE: Final = _annotation(
    "instance",
    on=("Lease",),
    meaning="On a shard Lease: the instance token of the process that holds it.",
    writers=("operator.shard_leases",),
)
ANNOTATION_FINISHED_PODS: Final = _annotation(
    "finished-pods",
    on=("Clique",),
    meaning="How many pods finished in a row at each index (pod back-off).",
    writers=("controllers.clique.planner",),
)
ANNOTATION_RESTART_NODES: Final = _annotation(
    "restart-nodes",
    on=("Clique",),
    meaning=(
        "The gang restart count and the nodes its pods ran on before that restart: the "
        "pods made again prefer those nodes (their images and caches are there)."
    ),
    writers=("controllers.features.same_nodes", "controllers.features.drain"),
    readers=("kubectl.status",),
)
ANNOTATION_START_GATE: Final = _annotation(
    "start-gate",
    on=("Pod",),
    meaning="On a pod with a start gate: closed until the operator opens it (open) once the "
    "Cliques it starts after are Ready; its init container waits for that.",
    writers=("controllers.features.start_gate",),
)
ANNOTATION_STARTS_AFTER: Final = _annotation(
    "starts-after",
    on=("Pod",),
    meaning="On a pod with a start gate: the Cliques it starts after, comma-separated (for its "
    "logs).",
    writers=("controllers.features.start_gate",),
    readers=("kubectl.status",),
)
ANNOTATION_TEMPLATE_REPLICAS: Final = _annotation(
    "template-replicas",
    on=("CliqueScalingGroup",),
    meaning="The template replicas last applied to it, so a kubectl scale stands until the "
    "template changes.",
    writers=("controllers.features.scaling",),
)
ANNOTATION_HPA_SPEC: Final = _annotation(
    "hpa-spec",
    on=("HorizontalPodAutoscaler",),
    meaning="A hash of the spec the operator wrote: a changed template replaces the HPA's "
    "spec once, and the HPA's own changes stand.",
    writers=("controllers.features.autoscaling",),
)
ANNOTATION_KUEUE_REVISION: Final = _annotation(
    "kueue",
    on=("Pod",),
    meaning="In the pod template of a queued CliqueSet: the gang's revision for Kueue, part "
    "of each clique's template hash.",
    writers=("controllers.features.kueue",),
)

# Pod condition types the operator sets (and the readiness gates that name them).
CONDITION_GANG_READY: Final = _condition(
    "gang-ready",
    on=("Pod",),
    meaning="A pod condition and readiness gate (spec.podReadiness: Gang): True while the "
    "pod's gang is whole (every pod of every clique present with its containers ready, in "
    "the gang's current epoch), so the pod is Ready only then.",
    writers=("controllers.features.gang_ready",),
    readers=("api.pod",),
)

# The operator's eviction responder (Kubernetes 1.37+, alpha: lifecycle.k8s.io/v1alpha1).
LABEL_RESPONDER: Final = _label(
    "gang-mover",
    on=("Eviction",),
    meaning="The operator's eviction responder: named (priority 10000) in spec."
    "evictionResponders of the pods it makes outside PodGroups; kube-controller-manager "
    "labels each Eviction with its responders (value `responder`), and the operator "
    "watches the Evictions so labelled, moving the target pod's gang whole.",
    writers=("controllers.clique.bodies",),
    readers=("controllers.features.eviction_requests", "operator.preflight"),
)

#: Every label and annotation key (and pod condition type) of the operator's, in the order
#: declared.
NAMES: Final[tuple[Name, ...]] = tuple(_NAMES)

#: Label and annotation keys under this prefix, or under a subdomain of it
#: (`x.cliques.dev/`), are the operator's: it writes them on the objects it creates and acts
#: on what they say. A tenant's pod template may not carry them (`is_reserved`).
RESERVED_PREFIX: Final = f"{GROUP}/"
RESERVED_SUBDOMAIN: Final = f".{GROUP}/"

# Environment injected into every container of every pod.
ENV_SET: Final = "CLIQUES_SET"
ENV_GANG_INDEX: Final = "CLIQUES_GANG_INDEX"
ENV_CLIQUE: Final = "CLIQUES_CLIQUE"
ENV_POD_INDEX: Final = "CLIQUES_POD_INDEX"
ENV_CLIQUE_SIZE: Final = "CLIQUES_CLIQUE_SIZE"
ENV_LEADER_ADDRESS: Final = "CLIQUES_LEADER_ADDRESS"
#: In the pods of an instance of a scaling group: the group and the instance's index (the
#: leader address is then that of the instance's leader).
ENV_SCALING_GROUP: Final = "CLIQUES_SCALING_GROUP"
ENV_GROUP_INDEX: Final = "CLIQUES_GROUP_INDEX"

#: Longest DNS-1123 label: a hostname, a Service name, a label value.
MAX_LABEL_LENGTH: Final = 63
#: Longest object name (DNS-1123 subdomain).
MAX_OBJECT_NAME_LENGTH: Final = 253
#: Longest clique (role) name; the CRD enforces it.
MAX_CLIQUE_NAME_LENGTH: Final = 20
#: Longest CliqueSet name; the CRD enforces it. 52 = 63 - len("-") - len(str(2**31 - 1)),
#: so the gang Service `<cliqueset>-<gang index>` is a DNS-1035 label for every int32 index.
MAX_CLIQUESET_NAME_LENGTH: Final = 52

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def is_reserved(key: str) -> bool:
    """Whether a label or annotation key is the operator's: `cliques.dev/...` or
    `<anything>.cliques.dev/...`. The CRD's rule on pod template metadata is the same test
    (`startsWith` or `contains`), so the API server and the operator agree on every key."""
    return key.startswith(RESERVED_PREFIX) or RESERVED_SUBDOMAIN in key


def _check_index(what: str, index: int) -> None:
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"{what} must be a non-negative int, got {index!r}")


def _check(name: str, pattern: re.Pattern[str], limit: int, what: str) -> str:
    if len(name) > limit:
        raise ValueError(f"{what} {name!r} is {len(name)} characters long, more than {limit}")
    if not pattern.fullmatch(name):
        raise ValueError(f"{what} {name!r} is not a valid DNS name ({pattern.pattern})")
    return name


#: Characters of `name_hash` in a generated name: FNV-1a 64 of the parts, its last ten
#: decimal digits in Kubernetes' SafeEncodeString alphabet (about 33 bits).
NAME_HASH_LENGTH: Final = 10


def name_hash(*parts: str | int) -> str:
    """A hash of what a generated name stands for: all its parts, kept apart (joined by NUL,
    which no part holds, so `a` + `1-x` and `a-1` + `x` hash apart). `NAME_HASH_LENGTH`
    label-safe characters, the same on every run and machine."""
    value = _core.fnv1a_64("\0".join(str(p) for p in parts).encode())
    scale = 10**NAME_HASH_LENGTH
    return _core.safe_encode(scale + value % scale)[1:]


def generated_name(head: str, *tail: str | int, limit: int, hashed: bool = False) -> str:
    """The name of an object the operator makes from user names (`head`, usually the
    CliqueSet's, then `tail`), the one rule for every name it cuts or joins ambiguously:

    - `<head>-<tail...>` as is while it is shorter than `limit` and `hashed` is False: the
      caller passes `hashed=False` only where such names read back one way;
    - else `<head>-<hash>-<tail...>`, `hash` being `name_hash(head, *tail)`; `head` cut so
      that a name that did not fit is exactly `limit` long. A name cut is never one left
      as is (those are shorter), and two cut from different parts differ by their hash.

    `tail` stays whole (indices and hashes, short): it must leave room for a character of
    `head`.
    """
    rest = "".join(f"-{t}" for t in tail)
    plain = f"{head}{rest}"
    if not hashed and len(plain) < limit:
        return plain
    digest = name_hash(head, *tail)
    room = limit - len(rest) - len(digest) - 1
    if room < 1:
        raise ValueError(f"no room for {head!r} in a name of {limit} ending {rest!r}")
    return f"{head[:room]}-{digest}{rest}"


def clique_name(cliqueset: str, gang_index: int, clique: str) -> str:
    """The Clique object name `<cliqueset>-<gang index>-<clique>`: one way to read it back,
    since the CRD refuses a `clique` with a part made only of digits before a '-' (set `a`
    gang 1 with clique `0-b` and set `a-1` gang 0 with clique `b` would both be `a-1-0-b`).
    Not checked here: a set stored before that rule keeps its names."""
    _check_index("gang index", gang_index)
    # Both pieces are label values on every object of the gang, so each must be a label.
    _check(cliqueset, _DNS1123_LABEL, MAX_LABEL_LENGTH, "CliqueSet name")
    _check(clique, _DNS1123_LABEL, MAX_LABEL_LENGTH, "clique name")
    return _check(
        f"{cliqueset}-{gang_index}-{clique}",
        _DNS1123_SUBDOMAIN,
        MAX_OBJECT_NAME_LENGTH,
        "Clique name",
    )


def member_name(clique: str, instance: int | None) -> str:
    """A Clique's name within its gang: the clique name, and for an instance of a scaling
    group `<clique name>-<instance>` (its Clique is `<cliqueset>-<gang>-<member>`)."""
    if instance is None:
        return clique
    _check_index("instance index", instance)
    return f"{clique}-{instance}"


def scaling_group_name(cliqueset: str, gang_index: int, group: str) -> str:
    """The CliqueScalingGroup object name `<cliqueset>-<gang index>-<group>`."""
    return clique_name(cliqueset, gang_index, group)


def revision_name(cliqueset: str, revision_hash: str) -> str:
    """The ControllerRevision object name `<cliqueset>-<revision hash>` of one revision of a
    CliqueSet's gang template. The hash has no '-', so the name reads back from the right:
    two CliqueSets never make the same name."""
    if not revision_hash or "-" in revision_hash:
        raise ValueError(f"revision hash {revision_hash!r} must be non-empty, without '-'")
    _check(cliqueset, _DNS1123_LABEL, MAX_LABEL_LENGTH, "CliqueSet name")
    return _check(
        f"{cliqueset}-{revision_hash}",
        _DNS1123_SUBDOMAIN,
        MAX_OBJECT_NAME_LENGTH,
        "ControllerRevision name",
    )


def pod_name(clique_object_name: str, pod_index: int) -> str:
    """The Pod name `<clique object name>-<pod index>`."""
    _check_index("pod index", pod_index)
    return _check(
        f"{clique_object_name}-{pod_index}",
        _DNS1123_SUBDOMAIN,
        MAX_OBJECT_NAME_LENGTH,
        "Pod name",
    )


def pod_hostname(clique: str, pod_index: int, instance: int | None = None) -> str:
    """The pod's `spec.hostname`, `<clique>-<pod index>` (`<clique>-<instance>-<pod index>`
    in an instance of a scaling group): a DNS-1123 label."""
    _check_index("pod index", pod_index)
    host = f"{member_name(clique, instance)}-{pod_index}"
    return _check(host, _DNS1123_LABEL, MAX_LABEL_LENGTH, "pod hostname")


def shared_pod_hostname(
    clique: str, gang_index: int, pod_index: int, instance: int | None = None
) -> str:
    """The pod's `spec.hostname` under a Service shared by the whole CliqueSet,
    `<clique>-<gang index>-<pod index>` (`<clique>-<gang index>-<instance>-<pod index>` in
    an instance of a scaling group): a DNS-1123 label, unique within the CliqueSet (the
    indices have no '-', so the name reads back from the right)."""
    _check_index("gang index", gang_index)
    _check_index("pod index", pod_index)
    middle = str(gang_index) if instance is None else f"{gang_index}-{instance}"
    if instance is not None:
        _check_index("instance index", instance)
    return _check(
        f"{clique}-{middle}-{pod_index}", _DNS1123_LABEL, MAX_LABEL_LENGTH, "pod hostname"
    )


def set_service_name(cliqueset: str) -> str:
    """The headless Service shared by every gang of a CliqueSet: the CliqueSet's own name,
    a DNS-1035 label (the CRD requires it of CliqueSet names)."""
    return _check(cliqueset, _DNS1035_LABEL, MAX_LABEL_LENGTH, "CliqueSet Service name")


def gang_service_name(cliqueset: str, gang_index: int) -> str:
    """The gang's headless Service (and its pods' `spec.subdomain`): a DNS-1035 label."""
    _check_index("gang index", gang_index)
    return _check(
        f"{cliqueset}-{gang_index}", _DNS1035_LABEL, MAX_LABEL_LENGTH, "gang Service name"
    )


def pod_address(
    clique: str,
    pod_index: int,
    cliqueset: str,
    gang_index: int,
    namespace: str,
    instance: int | None = None,
) -> str:
    """The stable DNS name of a pod of a gang with its own Service:
    `<hostname>.<gang service>.<namespace>.svc`.

    This is what `CLIQUES_LEADER_ADDRESS` holds for pod 0 of the gang's first clique. The
    cluster domain is left off so the name resolves through the pod's search path in any
    cluster, whatever its domain.
    """
    return (
        f"{pod_hostname(clique, pod_index, instance)}."
        f"{gang_service_name(cliqueset, gang_index)}.{namespace}.svc"
    )


def shared_pod_address(
    clique: str,
    pod_index: int,
    cliqueset: str,
    gang_index: int,
    namespace: str,
    instance: int | None = None,
) -> str:
    """The stable DNS name of a pod under the CliqueSet's shared Service:
    `<clique>-<gang>-<pod index>.<cliqueset>.<namespace>.svc` (see `pod_address`)."""
    return (
        f"{shared_pod_hostname(clique, gang_index, pod_index, instance)}."
        f"{set_service_name(cliqueset)}.{namespace}.svc"
    )
