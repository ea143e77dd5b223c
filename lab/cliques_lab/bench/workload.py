"""The benchmark workload (pure): shapes, CliqueSet manifests, the pod templates every
operator's workload shares (and their hash), the desired pod set, and how a phase's pod
events are judged (spurious creates/deletes, pods replaced)."""

from __future__ import annotations

import copy
import hashlib
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cliques import hashing

_SHAPE = re.compile(r"^(\d+)x(\d+)x(\d+)$")


@dataclass(frozen=True)
class Shape:
    """`SETSxGANGSxPODS`: SETS CliqueSets of GANGS gangs of PODS pods (1 leader + workers)."""

    sets: int
    gangs: int
    pods: int

    @classmethod
    def parse(cls, text: str) -> Shape:
        m = _SHAPE.match(text.strip())
        if not m:
            raise ValueError(f"shape {text!r} is not SETSxGANGSxPODS, e.g. 1x500x2")
        shape = cls(*(int(g) for g in m.groups()))
        if min(shape.sets, shape.gangs, shape.pods) < 1:
            raise ValueError(f"shape {text!r}: every number must be >= 1")
        return shape

    def __str__(self) -> str:
        return f"{self.sets}x{self.gangs}x{self.pods}"

    @property
    def total_pods(self) -> int:
        return self.sets * self.gangs * self.pods

    def names(self) -> list[str]:
        return [f"bench-{i}" for i in range(self.sets)]

    def roles(self) -> list[tuple[str, int]]:
        return [("leader", 1)] + ([("worker", self.pods - 1)] if self.pods > 1 else [])

    def desired_pods(self) -> set[str]:
        return {
            f"{cqs}-{g}-{role}-{i}"
            for cqs in self.names()
            for g in range(self.gangs)
            for role, n in self.roles()
            for i in range(n)
        }


def pod_template(role: str, image: str) -> dict[str, Any]:
    """The pod template of one role (`leader` or `worker`), the same for every operator:
    image, ports, requests and limits, tolerations; only the `role` label differs."""
    return {
        "metadata": {"labels": {"app": "bench", "role": role}},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": image,
                    "ports": [
                        {"name": "http", "containerPort": 8000},
                        {"name": "metrics", "containerPort": 9000},
                    ],
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "64Mi"},
                        "limits": {"memory": "128Mi"},
                    },
                    "env": [{"name": "MODEL", "value": "llama"}],
                },
                {"name": "sidecar", "image": "busybox:1.36"},
            ],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        },
    }


#: The gang-scheduling backend of the benchmark's CliqueSets unless told otherwise: None, so
#: that cliques schedules pod by pod as the peers do.
DEFAULT_GANG_SCHEDULING = "None"


def manifest(
    name: str,
    shape: Shape,
    image: str = "busybox:1.36",
    gang_scheduling: str = DEFAULT_GANG_SCHEDULING,
    subdomain_policy: str = "",
) -> dict[str, Any]:
    """The CliqueSet `name` of `shape`; `subdomain_policy` is left out when empty (the
    operator's default for a new CliqueSet, Shared)."""
    body: dict[str, Any] = {
        "apiVersion": "cliques.dev/v1alpha1",
        "kind": "CliqueSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": shape.gangs,
            "startupType": "AnyOrder",
            "gangScheduling": {"backend": gang_scheduling},
            "updateStrategy": {
                "type": "RollingUpdate",
                "maxUnavailable": max(1, shape.gangs // 10),
            },
            "template": {
                "cliques": [
                    {
                        "name": role,
                        "replicas": n,
                        "minAvailable": n,
                        "template": pod_template(role, image),
                    }
                    for role, n in shape.roles()
                ]
            },
        },
    }
    if subdomain_policy:
        body["spec"]["subdomainPolicy"] = subdomain_policy
    return body


def with_pod_readiness(body: dict[str, Any], readiness: str) -> dict[str, Any]:
    """`body` with `spec.podReadiness` set to `readiness` (`Gang`: pods Ready only in whole
    gangs, docs/gangs.md); as it is for "" (left out: the operator's default, Pod)."""
    if not readiness:
        return body
    return {**body, "spec": {**body["spec"], "podReadiness": readiness}}


def reordered(body: dict[str, Any]) -> dict[str, Any]:
    """The same desired state, spelled differently: map-lists and the cliques list in another
    order, quantities in other units. A canonical hash sees no change."""
    out = copy.deepcopy(body)
    cliques = out["spec"]["template"]["cliques"]
    cliques.reverse()
    for c in cliques:
        respell_template(c["template"])
    return out


def respell_template(template: dict[str, Any]) -> None:
    """Re-order and re-spell one pod template of `pod_template` in place (containers and
    ports reversed, quantities in other units): the same pod, written differently."""
    spec = template["spec"]
    spec["containers"].reverse()
    for ctr in spec["containers"]:
        if "ports" in ctr:
            ctr["ports"].reverse()
        if "resources" in ctr:
            ctr["resources"] = {
                "limits": {"memory": "134217728"},
                "requests": {"memory": "65536Ki", "cpu": "0.1"},
            }


#: The dev cluster's start model (`cliques_lab.devcluster.startmodel`): seconds of an image
#: pull on a node that lacks the image, and of a container's load at every start.
PULL_ANNOTATION = "start.stage.kwok.x-k8s.io/pull-seconds"
LOAD_ANNOTATION = "start.stage.kwok.x-k8s.io/load-seconds"


def with_start(
    templates: Mapping[str, dict[str, Any]], pull: float | None, load: float | None
) -> None:
    """Annotate each pod template (in place) with the pull and load seconds given (None:
    left out), so that the dev cluster starts its pods as a GPU node would."""
    marks = {
        key: format(value, "g")
        for key, value in ((PULL_ANNOTATION, pull), (LOAD_ANNOTATION, load))
        if value is not None
    }
    for template in templates.values():
        if marks:
            template.setdefault("metadata", {}).setdefault("annotations", {}).update(marks)


def pod_templates(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A CliqueSet manifest's pod templates by role (clique name)."""
    return {c["name"]: c["template"] for c in body["spec"]["template"]["cliques"]}


def templates_hash(templates: Mapping[str, Mapping[str, Any]]) -> str:
    """One digest of a workload's pod templates by role: the canonical hash of each
    (cliques.hashing, so spelling and order do not count) under its role name. Two
    operators' workloads schedule the same pods exactly when their digests are equal."""
    lines = sorted(f"{role}={hashing.template_hash(t)}" for role, t in templates.items())
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


@dataclass
class Judgement:
    spurious_creates: int
    spurious_deletes: int
    replaced: int


def judge(
    phase: str,
    added: list[str],
    deleted: list[str],
    desired: set[str],
    replaceable: frozenset[str] = frozenset(),
) -> Judgement:
    """Count what no correct operator would have done during `phase`; in a phase that
    replaces some pods only (the gang crash), `replaceable` names them: each may be
    replaced once, and any other create or delete is spurious."""
    adds, dels = Counter(added), Counter(deleted)
    outside = sum(n for name, n in adds.items() if name not in desired)
    if replaceable:
        return Judgement(
            sum(n for name, n in adds.items() if name not in replaceable)
            + sum(n - 1 for n in adds.values() if n > 1),
            sum(n for name, n in dels.items() if name not in replaceable)
            + sum(n - 1 for n in dels.values() if n > 1),
            len(dels),
        )
    if phase in ("apply", "pods-created", "pods-ready", "available"):
        return Judgement(outside + sum(n - 1 for n in adds.values() if n > 1), len(deleted), 0)
    if phase == "rolling-update":
        return Judgement(
            outside + sum(n - 1 for n in adds.values() if n > 1),
            sum(n - 1 for n in dels.values() if n > 1)
            + sum(n for name, n in dels.items() if name not in desired),
            len(dels),
        )
    if phase in ("steady-state", "reorder-apply", "in-place-update"):
        return Judgement(len(added), len(deleted), len(dels))
    return Judgement(0, 0, 0)  # delete: everything goes
