"""Builders of CliqueSets, Cliques, Services, Pods and snapshots for the planner table tests."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec

from cliques.api import labels
from cliques.api.clique import Clique, CliqueSpec, CliqueStatus
from cliques.api.cliqueset import CliqueSet, CliqueSetSpec, CliqueSetTemplate
from cliques.api.cliquetemplate import CliqueTemplate
from cliques.api.meta import Condition, ObjectMeta, OwnerReference
from cliques.api.pod import Pod, PodCondition, PodStatus
from cliques.api.policies import UpdateStrategy
from cliques.api.service import Service
from cliques.controllers.cliqueset.planner import CliqueSetSnapshot

NOW = "2026-11-22T08:00:00Z"


def template(image: str = "vllm:1") -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "x"}},
        "spec": {"containers": [{"name": "m", "image": image}]},
    }


def cliqueset(
    replicas: int = 2,
    roles: tuple[tuple[str, int], ...] = (("leader", 1), ("worker", 2)),
    startup: str = "AnyOrder",
    strategy: str = "RollingUpdate",
    max_unavailable: int = 1,
    image: str = "vllm:1",
    generation: int = 1,
    subdomain_policy: str | None = None,
    headless_service: bool = True,
    partition: int = 0,
    max_surge: int | str = 0,
) -> CliqueSet:
    return CliqueSet(
        metadata=ObjectMeta(
            name="llama",
            namespace="ns",
            uid="cqs-uid",
            resource_version="10",
            generation=generation,
        ),
        spec=CliqueSetSpec(
            replicas=replicas,
            startup_type=startup,  # type: ignore[arg-type]
            update_strategy=UpdateStrategy(
                type=strategy,  # type: ignore[arg-type]
                max_unavailable=max_unavailable,
                partition=partition,
                max_surge=max_surge,
            ),
            subdomain_policy=subdomain_policy,  # type: ignore[arg-type]
            headless_service=headless_service,
            template=CliqueSetTemplate(
                cliques=[
                    CliqueTemplate(name=n, replicas=r, template=template(image)) for n, r in roles
                ]
            ),
        ),
    )


def clique(
    gang: int,
    role: str,
    *,
    replicas: int = 1,
    hash_: str = "h1",
    ready: bool = True,
    algorithm: int = 1,
    starts_after: list[str] | None = None,
    image: str = "vllm:1",
    annotations: dict[str, str] | None = None,
    status_hash: str | None = None,
    ready_reason: str = "MinAvailable",
    status_restarts: int | None = None,
) -> Clique:
    name = labels.clique_name("llama", gang, role)
    conds = [
        Condition(
            type="Started",
            status="True",
            reason="Started",
            last_transition_time=NOW,
            observed_generation=1,
        ),
        Condition(
            type="Ready",
            status="True" if ready else "False",
            reason=ready_reason
            if ready
            else ready_reason
            if ready_reason != "MinAvailable"
            else "Starting",
            last_transition_time=NOW,
            observed_generation=1,
        ),
    ]
    return Clique(
        metadata=ObjectMeta(
            name=name,
            namespace="ns",
            uid=f"uid-{name}",
            resource_version="5",
            generation=1,
            labels={
                labels.LABEL_CLIQUESET: "llama",
                labels.LABEL_GANG_INDEX: str(gang),
                labels.LABEL_CLIQUE: role,
                labels.LABEL_BUCKET: "7",
                labels.LABEL_TEMPLATE_HASH: hash_,
            },
            annotations={
                labels.ANNOTATION_HASH_ALGORITHM: str(algorithm),
                labels.ANNOTATION_SUBDOMAIN: f"llama-{gang}",
                labels.ANNOTATION_LEADER_ADDRESS: f"leader-0.llama-{gang}.ns.svc",
                **(annotations or {}),
            },
            owner_references=[
                OwnerReference(
                    api_version="cliques.dev/v1alpha1",
                    kind="CliqueSet",
                    name="llama",
                    uid="cqs-uid",
                    controller=True,
                )
            ],
        ),
        spec=CliqueSpec(
            clique_name=role,
            gang_index=gang,
            replicas=replicas,
            min_available=replicas,
            starts_after=starts_after or [],
            template=template(image),
        ),
        status=CliqueStatus(
            observed_generation=1,
            replicas=replicas,
            ready_replicas=replicas if ready else 0,
            updated_replicas=replicas,
            template_hash=status_hash if status_hash is not None else hash_,
            hash_algorithm=algorithm,
            gang_restarts=status_restarts
            if status_restarts is not None
            else int((annotations or {}).get(labels.ANNOTATION_GANG_RESTARTS, "0") or 0),
            conditions=conds,
        ),
    )


def pod(
    clique_obj: Clique,
    index: int,
    *,
    hash_: str = "h1",
    ready: bool = True,
    deleting: bool = False,
    phase: str = "Running",
) -> Pod:
    return Pod(
        metadata=ObjectMeta(
            name=f"{clique_obj.metadata.name}-{index}",
            namespace="ns",
            uid=f"pod-uid-{index}",
            resource_version="3",
            labels={labels.LABEL_POD_INDEX: str(index), labels.LABEL_TEMPLATE_HASH: hash_},
            deletion_timestamp=NOW if deleting else None,
            owner_references=[
                OwnerReference(
                    api_version="cliques.dev/v1alpha1",
                    kind="Clique",
                    name=clique_obj.metadata.name,
                    uid=clique_obj.metadata.uid,
                    controller=True,
                )
            ],
        ),
        status=PodStatus(
            phase=phase,
            conditions=[PodCondition(type="Ready", status="True" if ready else "False")],
        ),
    )


HASHES = {"leader": "h1", "worker": "h1"}


#: The fields of the gang features' views (`CliqueSetSnapshot.gangs`, `.kueue`, ...) that a
#: test may give `set_snapshot` as plain keywords: keyword -> (view, field).
VIEW_FIELDS: dict[str, tuple[str, str]] = {
    "gang_api": ("gangs", "api"),
    "workloads": ("gangs", "workloads"),
    "pod_groups": ("gangs", "groups"),
    "claims_served": ("claims", "served"),
    "claim_objects": ("claims", "objects"),
    "kueue_revision": ("kueue", "revision"),
    "kueue_served": ("kueue", "served"),
    "local_queues": ("kueue", "local_queues"),
    "kueue_workloads": ("kueue", "workloads"),
    "scaling_groups": ("scaling", "groups"),
    "hpas": ("scaling", "hpas"),
    "resize_served": ("inplace", "resize_served"),
    "revisions_served": ("revisions", "served"),
    "revisions": ("revisions", "revisions"),
}


def set_snapshot(cqs, cliques, **kw: Any) -> CliqueSetSnapshot:  # type: ignore[no-untyped-def]
    """A CliqueSet snapshot at NOW, with the desired hashes HASHES unless given; the
    features' view fields may be given as keywords (`VIEW_FIELDS`)."""
    kw.setdefault("hashes", dict(HASHES))
    views: dict[str, dict[str, Any]] = {}
    for key in [k for k in kw if k in VIEW_FIELDS]:
        view, name = VIEW_FIELDS[key]
        views.setdefault(view, {})[name] = kw.pop(key)
    snap = CliqueSetSnapshot(cliqueset=cqs, cliques=cliques, now=NOW, **kw)
    return dataclasses.replace(
        snap,
        **{v: dataclasses.replace(getattr(snap, v), **fields) for v, fields in views.items()},
    )


def gangs(n: int, **kw: Any) -> list:  # type: ignore[type-arg]
    out = []
    for g in range(n):
        out.append(clique(g, "leader", replicas=1, **kw))
        out.append(clique(g, "worker", replicas=2, **kw))
    return out


def services(n: int, names: list[str] | None = None) -> list[Service]:
    """The per-gang Services `llama-0 .. llama-<n-1>`, or the Services named `names`."""
    return [
        Service(
            metadata=ObjectMeta(
                name=name,
                namespace="ns",
                uid=f"svc-{g}",
                owner_references=[
                    OwnerReference(
                        api_version="x",
                        kind="CliqueSet",
                        name="llama",
                        uid="cqs-uid",
                        controller=True,
                    )
                ],
            )
        )
        for g, name in enumerate(names if names is not None else [f"llama-{g}" for g in range(n)])
    ]


def template_patched(plan) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(p.name for p in plan.patches if p.patch_type == "json")


def mark_available(cliques: list[Clique], lead: str = "leader") -> list[Clique]:
    """`cliques` with each gang's `lead` Clique recording that the gang was available
    whole in its current epoch (as the CliqueSet planner writes it under RecreateGang)."""
    from cliques.controllers.features import gang_failures

    by_gang: dict[int, dict[str, Clique]] = {}
    for c in cliques:
        by_gang.setdefault(c.spec.gang_index, {})[c.spec.clique_name] = c
    out = []
    for c in cliques:
        if c.spec.clique_name == lead:
            epoch = gang_failures.epoch_of(by_gang[c.spec.gang_index], lead)
            annotations = {**c.metadata.annotations, labels.ANNOTATION_AVAILABLE_EPOCH: epoch}
            meta = msgspec.structs.replace(c.metadata, annotations=annotations)
            out.append(msgspec.structs.replace(c, metadata=meta))
        else:
            out.append(c)
    return out
