"""The CliqueSet controller is woken by its HPAs' changes that its planner reads, and not
by their status alone: an HPA's controller rewrites the status of every HPA on every sync
(1,000 gangs autoscaled are 1,000 writes each 15 s). A CliqueScalingGroup's status write
wakes it: a plan that writes one leaves the set's own status to the next. Nor by a
PodGroup's status, which the scheduler writes as it places a gang. No cluster."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from cliques.api.hpa import HorizontalPodAutoscaler, HPASpec, HPAStatus
from cliques.api.meta import ObjectMeta, OwnerReference
from cliques.api.podgroup import (
    CompositePodGroup,
    GangPolicy,
    PodGroup,
    PodGroupSpec,
    SchedulingPolicy,
)
from cliques.api.scalinggroup import (
    CliqueScalingGroup,
    CliqueScalingGroupSpec,
    CliqueScalingGroupStatus,
)
from cliques.controllers.cliqueset.controller import CliqueSetController

from .test_cliqueset_settled import controller


def meta(generation: int) -> ObjectMeta:
    return ObjectMeta(
        name="llama-0-x",
        namespace="ns",
        uid="uid-x",
        generation=generation,
        resource_version=str(generation),
        labels={"cliques.dev/cliqueset": "llama"},
        owner_references=[
            OwnerReference(
                api_version="cliques.dev/v1alpha1",
                kind="CliqueSet",
                name="llama",
                uid="cqs-uid",
                controller=True,
            )
        ],
    )


def hpa(generation: int, desired: int) -> HorizontalPodAutoscaler:
    return HorizontalPodAutoscaler(
        metadata=meta(generation),
        spec=HPASpec(max_replicas=4),
        status=HPAStatus(current_replicas=1, desired_replicas=desired),
    )


def group(generation: int, ready: int) -> CliqueScalingGroup:
    return CliqueScalingGroup(
        metadata=meta(generation),
        spec=CliqueScalingGroupSpec(group_name="x", gang_index=0, replicas=generation),
        status=CliqueScalingGroupStatus(replicas=generation, ready_replicas=ready),
    )


def woken(ctl: CliqueSetController, kind: str, old: Any, new: Any) -> list[str]:
    keys: list[str] = []
    ctl.queue.add_after = lambda key, delay: keys.append(key)  # type: ignore[method-assign]
    ctl._on_child(kind, old, new)
    return keys


def test_an_hpa_status_alone_wakes_nothing_and_a_spec_change_does() -> None:
    ctl, _ = controller()
    old = hpa(1, 1)
    assert woken(ctl, "MODIFIED", old, hpa(1, 2)) == []
    assert woken(ctl, "MODIFIED", old, hpa(2, 1)) == ["ns/llama"]


@pytest.mark.parametrize("make", [hpa, group])
def test_creates_and_deletes_wake_the_set(make: Any) -> None:
    ctl, _ = controller()
    old = make(1, 1)
    assert woken(ctl, "ADDED", None, old) == ["ns/llama"]
    assert woken(ctl, "DELETED", old, old) == ["ns/llama"]


def test_a_scaling_group_status_wakes_the_set() -> None:
    ctl, _ = controller()
    assert woken(ctl, "MODIFIED", group(1, 1), group(1, 2)) == ["ns/llama"]


def test_a_label_or_annotation_change_wakes_the_set() -> None:
    ctl, _ = controller()
    old = hpa(1, 1)
    new = msgspec.structs.replace(old, metadata=msgspec.structs.replace(old.metadata))
    new.metadata.annotations = {"cliques.dev/hpa-spec": "other"}
    assert woken(ctl, "MODIFIED", old, new) == ["ns/llama"]


def pod_group(version: int, min_count: int, tags: dict[str, str] | None = None) -> PodGroup:
    meta_of = meta(1)
    meta_of = msgspec.structs.replace(
        meta_of, resource_version=str(version), labels=tags or meta_of.labels
    )
    spec = PodGroupSpec(scheduling_policy=SchedulingPolicy(gang=GangPolicy(min_count=min_count)))
    return PodGroup(metadata=meta_of, spec=spec)


@pytest.mark.parametrize("kind", [PodGroup, CompositePodGroup])
def test_a_pod_groups_status_alone_wakes_nothing_and_its_spec_or_labels_do(kind: Any) -> None:
    """The scheduler writes a PodGroup's status as it places the gang; a spec change (a
    minCount patch) moves no generation on a PodGroup, so the specs are compared."""
    ctl, _ = controller()

    def group_of(version: int, min_count: int, tags: dict[str, str] | None = None) -> Any:
        made = pod_group(version, min_count, tags)
        return kind(metadata=made.metadata, spec=made.spec)

    old = group_of(1, 3)
    assert woken(ctl, "MODIFIED", old, group_of(2, 3)) == []
    assert woken(ctl, "MODIFIED", old, group_of(2, 4)) == ["ns/llama"]
    tags = {**old.metadata.labels, "extra": "1"}
    assert woken(ctl, "MODIFIED", old, group_of(2, 3, tags)) == ["ns/llama"]
    assert woken(ctl, "DELETED", old, old) == ["ns/llama"]
