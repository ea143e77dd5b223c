"""The HorizontalPodAutoscalers of a CliqueSet's gangs, planned (pure) (docs/scaling.md).

- **One HPA per gang and target**, where the template asks for `autoscaling`: a clique
  outside the scaling groups (target: the gang's Clique of it, scaled through the Clique's
  scale subresource) or a scaling group (target: the gang's CliqueScalingGroup). The HPA is
  named after its target, labelled with the set, the gang and the bucket, and owned by the
  CliqueSet.
- **The operator never fights it**: it sets the HPA's bounds, metrics and behaviour, never
  the target's replicas (`cliqueset_rollout` leaves an autoscaled clique's replicas alone,
  `scaling.spec_patch` an autoscaled group's).
- **Kept as written**: the API server fills in defaults (a CPU metric where none is given,
  the behaviour's policies), so what the operator wrote is compared through a hash of it
  in `ANNOTATION_SPEC`; a changed template replaces the HPA's spec once.
- `minReplicas` is at least 1 (an HPA takes 0 only where the server has the alpha
  `HPAScaleToZero` gate) and at least the target's `minAvailable` (the API server refuses
  a scale below it). A group whose `minAvailable` is 0 scales to zero by hand
  (`kubectl scale cqsg/<name> --replicas 0`).
- An HPA no target asks for any more (autoscaling removed, a gang or clique removed) is
  deleted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from cliques.api import labels
from cliques.api.cliqueset import CliqueSet
from cliques.api.hpa import HorizontalPodAutoscaler
from cliques.api.policies import Autoscaling
from cliques.controllers.base.actions import pointer_key
from cliques.controllers.features import scaling

#: On an HPA the operator made: a hash of the spec it wrote.
ANNOTATION_SPEC: Final = labels.ANNOTATION_HPA_SPEC


@dataclass(frozen=True, slots=True)
class Target:
    """What one HPA scales: a Clique or a CliqueScalingGroup of one gang."""

    kind: str
    name: str
    gang: int
    autoscaling: Autoscaling
    #: the fewest replicas the target may have (its `minAvailable`: the API server refuses
    #: a scale below it, so an HPA asking for fewer would fail every rescale)
    floor: int = 1


def targets(cqs: CliqueSet, lay: scaling.Layout) -> list[Target]:
    """Every HPA target of the set's gangs `0..replicas-1`, gang by gang."""
    name = cqs.metadata.name
    per_gang: list[tuple[str, str, Autoscaling, int]] = []
    for clique in cqs.spec.template.cliques:
        if clique.autoscaling is not None and clique.name not in lay.group_of:
            floor = clique.effective_min_available
            per_gang.append((labels.KIND_CLIQUE, clique.name, clique.autoscaling, floor))
    for group in cqs.spec.template.scaling_groups:
        if group.autoscaling is not None:
            floor = group.min_available
            per_gang.append((labels.KIND_SCALING_GROUP, group.name, group.autoscaling, floor))
    if not per_gang:
        return []
    for _, piece, _, _ in per_gang if cqs.spec.replicas else ():
        # the longest name is valid, so every one is (`labels` checks it)
        labels.clique_name(name, cqs.spec.replicas - 1, piece)
    return [
        Target(kind, f"{name}-{gang}-{piece}", gang, auto, floor)
        for gang in range(cqs.spec.replicas)
        for kind, piece, auto, floor in per_gang
    ]


def spec_of(target: Target) -> dict[str, Any]:
    """The `autoscaling/v2` HPA spec for `target`."""
    auto = target.autoscaling
    spec: dict[str, Any] = {
        "scaleTargetRef": {
            "apiVersion": labels.API_VERSION,
            "kind": target.kind,
            "name": target.name,
        },
        "minReplicas": max(1, auto.min_replicas, target.floor),
        "maxReplicas": max(1, auto.max_replicas, target.floor),
    }
    if auto.metrics:
        spec["metrics"] = auto.metrics
    if auto.behavior is not None:
        spec["behavior"] = auto.behavior
    return spec


def spec_hash(spec: dict[str, Any]) -> str:
    """A short hash of an HPA spec as the operator writes it, its target's name left out
    (the HPA carries it in its own): the HPAs of one clique or group in every gang share
    it, so a plan hashes once per template."""
    ref = spec.get("scaleTargetRef") or {}
    canonical = json.dumps(
        {**spec, "scaleTargetRef": {**ref, "name": ""}}, sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def body(cqs: CliqueSet, target: Target, bucket: str, owner: dict[str, Any]) -> dict[str, Any]:
    """The HPA of `target`."""
    spec = spec_of(target)
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": target.name,
            "namespace": cqs.metadata.namespace,
            "labels": {
                labels.LABEL_CLIQUESET: cqs.metadata.name,
                labels.LABEL_GANG_INDEX: str(target.gang),
                labels.LABEL_BUCKET: bucket,
            },
            "annotations": {ANNOTATION_SPEC: spec_hash(spec)},
            "ownerReferences": [owner],
        },
        "spec": spec,
    }


@dataclass
class HPAPlan:
    """Bodies to create, (name, JSON patch) to send, (name, uid) to delete."""

    creates: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    patches: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)
    deletes: list[tuple[str, str]] = field(default_factory=list)


def plan(
    cqs: CliqueSet,
    lay: scaling.Layout,
    hpas: Iterable[HorizontalPodAutoscaler],
    bucket: str,
    owner: dict[str, Any],
) -> HPAPlan:
    """The HPAs `targets` asks for made, their specs kept as written, the others deleted."""
    out = HPAPlan()
    have = {h.metadata.name: h for h in hpas}
    wanted: set[str] = set()
    #: (kind, autoscaling, floor) -> the hash of its HPAs' spec
    hashes: dict[tuple[str, int, int], str] = {}
    for target in targets(cqs, lay):
        wanted.add(target.name)
        hpa = have.get(target.name)
        if hpa is None:
            out.creates.append((target.name, body(cqs, target, bucket, owner)))
            continue
        if hpa.metadata.deletion_timestamp is not None:
            continue
        key = (target.kind, id(target.autoscaling), target.floor)
        written = hashes.get(key)
        if written is None:
            written = hashes[key] = spec_hash(spec_of(target))
        if hpa.metadata.annotations.get(ANNOTATION_SPEC) != written:
            spec = spec_of(target)
            ops: list[dict[str, Any]] = [
                {"op": "test", "path": "/metadata/uid", "value": hpa.metadata.uid},
                {"op": "replace", "path": "/spec", "value": spec},
            ]
            if hpa.metadata.annotations:
                path = "/metadata/annotations/" + pointer_key(ANNOTATION_SPEC)
                ops.append({"op": "add", "path": path, "value": written})
            else:  # (no annotations at all: the map itself is added)
                value = {ANNOTATION_SPEC: written}
                ops.append({"op": "add", "path": "/metadata/annotations", "value": value})
            out.patches.append((target.name, ops))
    for name, hpa in sorted(have.items()):
        if name not in wanted and hpa.metadata.deletion_timestamp is None:
            out.deletes.append((name, hpa.metadata.uid))
    return out
