"""Scaling groups, pure (`controllers.scaling`): the layout of a set's template, the members
of a gang and their names, labels and start order, the instance counts, the
CliqueScalingGroup bodies, patches and statuses; and the helpers around them
(`labels.member_name`, hostnames, `subdomains.member_annotations`, `workload.min_count`).

The set used throughout: `frontend`, a scaling group `prefill` of `pleader` (1 pod) and
`pworker` (2 pods) with 2 instances per gang of which 1 must be available, and `decode`,
autoscaled. The planner with it is in test_scaling_planner, the HPAs in test_autoscaling."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.meta import ObjectMeta
from cliques.api.policies import Autoscaling
from cliques.api.scalinggroup import (
    CliqueScalingGroup,
    CliqueScalingGroupSpec,
    CliqueScalingGroupStatus,
    ScalingGroup,
)
from cliques.controllers.base import startup
from cliques.controllers.cliqueset import rollout as cliqueset_rollout
from cliques.controllers.features import scaling, subdomains, workload

from .planner_fixtures import NOW, clique, cliqueset

ROLES = (("frontend", 1), ("pleader", 1), ("pworker", 2), ("decode", 1))
HASHES = {"frontend": "hf", "pleader": "hl", "pworker": "hw", "decode": "hd"}
SELECTOR = (
    "cliques.dev/cliqueset=llama,cliques.dev/gang-index={gang},cliques.dev/scaling-group=prefill"
)


def prefill_set(
    replicas: int = 2,
    *,
    startup_type: str = "InOrder",
    policy: str | None = "UniquePerGang",
    group_replicas: int = 2,
    min_available: int = 1,
    group_cliques: tuple[str, ...] = ("pleader", "pworker"),
    decode_autoscaling: Autoscaling | None = None,
    group_autoscaling: Autoscaling | None = None,
    generation: int = 1,
) -> CliqueSet:
    """The set of this module: frontend, the prefill group (pleader, pworker), decode
    (autoscaled between 1 and 4 pods unless `decode_autoscaling` says otherwise)."""
    cqs = cliqueset(
        replicas=replicas,
        roles=ROLES,
        startup=startup_type,
        subdomain_policy=policy,
        generation=generation,
    )
    cqs.spec.template.scaling_groups = [
        ScalingGroup(
            name="prefill",
            cliques=list(group_cliques),
            replicas=group_replicas,
            min_available=min_available,
            autoscaling=group_autoscaling,
        )
    ]
    cqs.spec.template.cliques[3].autoscaling = decode_autoscaling or Autoscaling(
        min_replicas=1, max_replicas=4
    )
    return cqs


def member_clique(
    gang: int,
    role: str,
    instance: int | None = None,
    *,
    group: str = "prefill",
    replicas: int | None = None,
    ready: bool = True,
    hash_: str | None = None,
    ready_reason: str = "MinAvailable",
    deleting: bool = False,
) -> Clique:
    """A Clique of gang `gang` (`planner_fixtures.clique`) for `role`, and for an instance
    of a scaling group `<set>-<gang>-<role>-<instance>` with the group's labels."""
    size = replicas if replicas is not None else dict(ROLES).get(role, 1)
    base = clique(
        gang,
        role,
        replicas=size,
        ready=ready,
        hash_=hash_ if hash_ is not None else HASHES.get(role, "h1"),
        ready_reason=ready_reason,
    )
    if instance is None and not deleting:
        return base
    name = labels.clique_name("llama", gang, labels.member_name(role, instance))
    extra = (
        {labels.LABEL_SCALING_GROUP: group, labels.LABEL_GROUP_INDEX: str(instance)}
        if instance is not None
        else {}
    )
    meta = msgspec.structs.replace(
        base.metadata,
        name=name,
        uid=f"uid-{name}",
        labels={**base.metadata.labels, **extra},
        deletion_timestamp=NOW if deleting else None,
    )
    return msgspec.structs.replace(base, metadata=meta)


def gang_members(
    gang: int,
    instances: int = 2,
    *,
    ready_instances: tuple[int, ...] | None = None,
    plain_ready: bool = True,
) -> list[Clique]:
    """Every Clique of one gang of `prefill_set`: frontend, `instances` instances of the
    group (Ready: those in `ready_instances`, all by default), decode."""
    ready = set(range(instances)) if ready_instances is None else set(ready_instances)
    out = [member_clique(gang, "frontend", ready=plain_ready)]
    for role in ("pleader", "pworker"):
        out += [member_clique(gang, role, i, ready=i in ready) for i in range(instances)]
    out.append(member_clique(gang, "decode", ready=plain_ready))
    return out


def scaling_group_object(
    gang: int,
    replicas: int,
    *,
    min_available: int = 1,
    applied: str | None = "2",
    deleting: bool = False,
    status: CliqueScalingGroupStatus | None = None,
) -> CliqueScalingGroup:
    """The CliqueScalingGroup of `prefill` in gang `gang`, with `replicas` instances and the
    template replicas last applied `applied`."""
    name = labels.scaling_group_name("llama", gang, "prefill")
    return CliqueScalingGroup(
        metadata=ObjectMeta(
            name=name,
            namespace="ns",
            uid=f"uid-{name}",
            resource_version="7",
            generation=3,
            annotations=(
                {scaling.ANNOTATION_TEMPLATE_REPLICAS: applied} if applied is not None else {}
            ),
            deletion_timestamp=NOW if deleting else None,
        ),
        spec=CliqueScalingGroupSpec(
            group_name="prefill", gang_index=gang, replicas=replicas, min_available=min_available
        ),
        status=status,
    )


# -- layout and members ------------------------------------------------------------------


def test_layout_places_the_grouped_roles_and_the_autoscaled_ones() -> None:
    lay = scaling.layout(prefill_set().spec)
    assert lay.roles == ("frontend", "pleader", "pworker", "decode")
    assert dict(lay.group_of) == {"pleader": "prefill", "pworker": "prefill"}
    assert lay.groups == (
        scaling.Group("prefill", ("pleader", "pworker"), replicas=2, min_available=1),
    )
    assert lay.autoscaled == frozenset({"decode"})
    assert lay.group("prefill") is lay.groups[0]
    assert lay.group("decode") is None


def test_layout_of_a_set_without_groups_is_empty() -> None:
    lay = scaling.layout(cliqueset().spec)
    assert lay.groups == () and dict(lay.group_of) == {} and lay.autoscaled == frozenset()
    assert lay.roles == ("leader", "worker")
    assert scaling.wanted_members(lay, {}) == {
        "leader": scaling.Member("leader", "leader"),
        "worker": scaling.Member("worker", "worker"),
    }


def test_layout_caps_min_available_and_marks_an_autoscaled_group() -> None:
    cqs = prefill_set(
        group_replicas=1, min_available=3, group_autoscaling=Autoscaling(max_replicas=5)
    )
    (group,) = scaling.layout(cqs.spec).groups
    assert group.min_available == 1
    assert group.autoscaled


def test_an_autoscaled_clique_of_a_group_is_not_scaled_as_a_clique() -> None:
    # (refused by the CRD; the group's count is its scale, never the Clique's replicas)
    cqs = prefill_set()
    cqs.spec.template.cliques[1].autoscaling = Autoscaling(max_replicas=3)
    assert scaling.layout(cqs.spec).autoscaled == frozenset({"decode"})


def test_wanted_members_in_template_order_a_grouped_role_once_per_instance() -> None:
    lay = scaling.layout(prefill_set().spec)
    members = scaling.wanted_members(lay, {"prefill": 2})
    assert list(members) == [
        "frontend",
        "pleader-0",
        "pleader-1",
        "pworker-0",
        "pworker-1",
        "decode",
    ]
    assert members["pworker-1"] == scaling.Member("pworker-1", "pworker", "prefill", 1)
    assert members["frontend"] == scaling.Member("frontend", "frontend")
    assert list(scaling.wanted_members(lay, {"prefill": 0})) == ["frontend", "decode"]
    assert "pleader-2" in scaling.wanted_members(lay, {"prefill": 3})


def test_member_names_and_clique_names() -> None:
    assert labels.member_name("pworker", None) == "pworker"
    assert labels.member_name("pworker", 1) == "pworker-1"
    assert labels.clique_name("llama", 0, labels.member_name("pworker", 1)) == "llama-0-pworker-1"
    assert labels.scaling_group_name("llama", 3, "prefill") == "llama-3-prefill"
    with pytest.raises(ValueError):
        labels.member_name("pworker", -1)


def test_instance_of_and_member_of_read_the_labels() -> None:
    grouped = member_clique(1, "pworker", 1)
    assert grouped.metadata.name == "llama-1-pworker-1"
    assert scaling.instance_of(grouped) == 1
    assert scaling.member_of(grouped) == "pworker-1"
    plain = member_clique(1, "frontend")
    assert scaling.instance_of(plain) is None
    assert scaling.member_of(plain) == "frontend"
    odd = msgspec.structs.replace(
        grouped,
        metadata=msgspec.structs.replace(
            grouped.metadata, labels={**grouped.metadata.labels, labels.LABEL_GROUP_INDEX: "x"}
        ),
    )
    assert scaling.instance_of(odd) is None


def test_member_labels_place_an_instance() -> None:
    assert scaling.member_labels(scaling.Member("frontend", "frontend")) == {}
    assert scaling.member_labels(scaling.Member("pworker-1", "pworker", "prefill", 1)) == {
        "cliques.dev/scaling-group": "prefill",
        "cliques.dev/group-index": "1",
    }


def test_selector_of_a_group_in_a_gang() -> None:
    assert scaling.selector("llama", 1, "prefill") == SELECTOR.format(gang=1)


# -- start order ---------------------------------------------------------------------------


def _deps(cqs: CliqueSet, role: str, instance: int | None, gang: int = 0) -> list[str]:
    lay = scaling.layout(cqs.spec)
    return scaling.dependencies(lay, startup.dependencies(cqs.spec), "llama", gang, role, instance)


def test_in_order_a_grouped_clique_waits_for_its_own_instance() -> None:
    cqs = prefill_set(startup_type="InOrder")
    assert _deps(cqs, "frontend", None) == []
    assert _deps(cqs, "pleader", 1) == ["llama-0-frontend"]
    assert _deps(cqs, "pworker", 0) == ["llama-0-pleader-0"]
    assert _deps(cqs, "pworker", 1, gang=1) == ["llama-1-pleader-1"]
    # after a grouped clique: through the instances the gang needs (minAvailable 1)
    assert _deps(cqs, "decode", None) == ["llama-0-pworker-0"]


def test_a_plain_clique_waits_for_min_available_instances() -> None:
    cqs = prefill_set(startup_type="InOrder", group_replicas=3, min_available=2)
    assert _deps(cqs, "decode", None) == ["llama-0-pworker-0", "llama-0-pworker-1"]
    none_needed = prefill_set(startup_type="InOrder", min_available=0)
    assert _deps(none_needed, "decode", None) == []


def test_explicit_start_order_with_a_group() -> None:
    cqs = prefill_set(startup_type="Explicit", group_replicas=3, min_available=2)
    by_name = {c.name: c for c in cqs.spec.template.cliques}
    by_name["pleader"].starts_after = ["frontend"]
    by_name["pworker"].starts_after = ["pleader", "frontend"]
    by_name["decode"].starts_after = ["pleader", "frontend"]
    assert _deps(cqs, "pleader", 2) == ["llama-0-frontend"]
    assert _deps(cqs, "pworker", 2) == ["llama-0-pleader-2", "llama-0-frontend"]
    assert _deps(cqs, "decode", None) == [
        "llama-0-pleader-0",
        "llama-0-pleader-1",
        "llama-0-frontend",
    ]


def test_a_clique_of_one_group_waits_for_the_needed_instances_of_another() -> None:
    cqs = prefill_set(startup_type="Explicit")
    cqs.spec.template.scaling_groups.append(
        ScalingGroup(name="dgroup", cliques=["decode"], replicas=3, min_available=2)
    )
    cqs.spec.template.cliques[3].autoscaling = None
    cqs.spec.template.cliques[3].starts_after = ["pworker"]
    assert _deps(cqs, "decode", 2) == ["llama-0-pworker-0"]
    cqs.spec.template.cliques[1].starts_after = ["decode"]
    assert _deps(cqs, "pleader", 1) == ["llama-0-decode-0", "llama-0-decode-1"]


# -- leaders ------------------------------------------------------------------------------------


def test_lead_member_and_leader_role() -> None:
    lay = scaling.layout(prefill_set().spec)
    assert scaling.lead_member(lay) == "frontend"
    assert scaling.leader_role(lay) == ("frontend", False)
    assert scaling.instance_leader(lay, "prefill") == "pleader"
    assert scaling.instance_leader(lay, "nope") == ""


def test_a_gang_made_only_of_a_group_is_led_by_instance_0() -> None:
    cqs = cliqueset(roles=(("pleader", 1), ("pworker", 2)))
    cqs.spec.template.scaling_groups = [
        ScalingGroup(name="prefill", cliques=["pleader", "pworker"])
    ]
    lay = scaling.layout(cqs.spec)
    assert scaling.lead_member(lay) == "pleader-0"
    assert scaling.leader_role(lay) == ("pleader", True)


def _layout_of(cqs: CliqueSet, gang: int, policy: str) -> dict[str, str]:
    return subdomains.new_gang_annotations(cqs, gang, policy)


@pytest.mark.parametrize(
    ("policy", "member", "leader"),
    [
        pytest.param(
            "UniquePerGang",
            scaling.Member("pworker-1", "pworker", "prefill", 1),
            "pleader-1-0.llama-1.ns.svc",
            id="per-gang-instance",
        ),
        pytest.param(
            "UniquePerGang",
            scaling.Member("pleader-0", "pleader", "prefill", 0),
            "pleader-0-0.llama-1.ns.svc",
            id="per-gang-instance-leader-itself",
        ),
        pytest.param(
            "UniquePerGang",
            scaling.Member("decode", "decode"),
            "frontend-0.llama-1.ns.svc",
            id="per-gang-plain",
        ),
        pytest.param(
            "Shared",
            scaling.Member("pworker-1", "pworker", "prefill", 1),
            "pleader-1-1-0.llama.ns.svc",
            id="shared-instance",
        ),
        pytest.param(
            "Shared",
            scaling.Member("decode", "decode"),
            "frontend-1-0.llama.ns.svc",
            id="shared-plain",
        ),
    ],
)
def test_member_annotations_name_the_instance_leader(
    policy: str, member: scaling.Member, leader: str
) -> None:
    cqs = prefill_set(policy=policy)
    lay = scaling.layout(cqs.spec)
    layout = _layout_of(cqs, 1, policy)
    got = subdomains.member_annotations(cqs, 1, layout, lay, member)
    assert got[labels.ANNOTATION_LEADER_ADDRESS] == leader
    assert got[labels.ANNOTATION_SUBDOMAIN] == layout[labels.ANNOTATION_SUBDOMAIN]
    assert got[labels.ANNOTATION_SUBDOMAIN_POLICY] == policy


def test_member_annotations_without_groups_or_service_are_the_layout() -> None:
    plain = cliqueset()
    layout = _layout_of(plain, 0, "Shared")
    member = scaling.Member("worker", "worker")
    assert (
        subdomains.member_annotations(plain, 0, layout, scaling.layout(plain.spec), member)
        == layout
    )
    cqs = prefill_set()
    grouped = scaling.Member("pworker-1", "pworker", "prefill", 1)
    assert subdomains.member_annotations(cqs, 0, {}, scaling.layout(cqs.spec), grouped) == {}


def test_an_instance_leader_address_is_its_pod_0_hostname() -> None:
    # UniquePerGang: <clique>-<instance>-<pod>; Shared: <clique>-<gang>-<instance>-<pod>
    assert labels.pod_hostname("pleader", 0, 1) == "pleader-1-0"
    assert labels.pod_hostname("pleader", 0) == "pleader-0"
    assert labels.shared_pod_hostname("pleader", 2, 0, 1) == "pleader-2-1-0"
    assert labels.shared_pod_hostname("pleader", 2, 0) == "pleader-2-0"
    assert labels.pod_address("pleader", 0, "llama", 2, "ns", 1) == "pleader-1-0.llama-2.ns.svc"
    assert labels.shared_pod_address("pleader", 0, "llama", 2, "ns", 1) == (
        "pleader-2-1-0.llama.ns.svc"
    )
    with pytest.raises(ValueError):
        labels.shared_pod_hostname("pleader", 2, 0, -1)


# -- instance counts -----------------------------------------------------------------------


def test_instance_count_is_the_objects_replicas() -> None:
    lay = scaling.layout(prefill_set().spec)
    members = gang_members(0, instances=2)
    assert scaling.instance_counts(lay, {"prefill": scaling_group_object(0, 5)}, members) == {
        "prefill": 5
    }
    assert scaling.instance_counts(lay, {"prefill": scaling_group_object(0, 0)}, members) == {
        "prefill": 0
    }


def test_without_the_object_the_count_is_the_instances_that_exist() -> None:
    lay = scaling.layout(prefill_set().spec)  # template: 2
    three = gang_members(0, instances=3)
    assert scaling.instance_counts(lay, {}, three) == {"prefill": 3}
    # the highest instance counts (a gap is still an instance to make)
    only_2 = [c for c in three if scaling.instance_of(c) in (None, 2)]
    assert scaling.instance_counts(lay, {}, only_2) == {"prefill": 3}
    one = gang_members(0, instances=1)
    assert scaling.instance_counts(lay, {}, one) == {"prefill": 1}


def test_without_the_object_or_instances_the_count_is_the_templates() -> None:
    lay = scaling.layout(prefill_set(group_replicas=4, min_available=1).spec)
    plain_only = [member_clique(0, "frontend"), member_clique(0, "decode")]
    assert scaling.instance_counts(lay, {}, plain_only) == {"prefill": 4}
    assert scaling.instance_counts(lay, {}, []) == {"prefill": 4}


def test_instances_being_deleted_or_of_another_group_do_not_count() -> None:
    lay = scaling.layout(prefill_set().spec)
    members = [
        *gang_members(0, instances=1),
        member_clique(0, "pleader", 4, deleting=True),
        member_clique(0, "pleader", 6, group="other"),
    ]
    assert scaling.instance_counts(lay, {}, members) == {"prefill": 1}


def test_an_object_being_deleted_falls_back_to_the_instances() -> None:
    lay = scaling.layout(prefill_set().spec)
    gone = {"prefill": scaling_group_object(0, 7, deleting=True)}
    assert scaling.instance_counts(lay, gone, gang_members(0, instances=3)) == {"prefill": 3}
    assert scaling.instance_counts(lay, gone, []) == {"prefill": 2}


# -- the CliqueScalingGroup objects --------------------------------------------------------


OWNER: dict[str, Any] = {
    "apiVersion": "cliques.dev/v1alpha1",
    "kind": "CliqueSet",
    "name": "llama",
    "uid": "cqs-uid",
    "controller": True,
    "blockOwnerDeletion": True,
}


def test_object_body() -> None:
    cqs = prefill_set(group_replicas=2, min_available=2)
    (group,) = scaling.layout(cqs.spec).groups
    body = scaling.object_body(cqs, 1, group, 3, "7", OWNER)
    assert body == {
        "apiVersion": "cliques.dev/v1alpha1",
        "kind": "CliqueScalingGroup",
        "metadata": {
            "name": "llama-1-prefill",
            "namespace": "ns",
            "labels": {
                labels.LABEL_CLIQUESET: "llama",
                labels.LABEL_GANG_INDEX: "1",
                labels.LABEL_BUCKET: "7",
                labels.LABEL_SCALING_GROUP: "prefill",
            },
            "annotations": {scaling.ANNOTATION_TEMPLATE_REPLICAS: "2"},
            "ownerReferences": [OWNER],
        },
        "spec": {"groupName": "prefill", "gangIndex": 1, "replicas": 3, "minAvailable": 2},
    }
    # made with fewer instances than the template needs: minAvailable kept at most replicas
    small = scaling.object_body(cqs, 1, group, 1, "7", OWNER)
    assert small["spec"]["replicas"] == 1 and small["spec"]["minAvailable"] == 1
    # the body decodes as the API type
    obj = msgspec.convert(body, CliqueScalingGroup)
    assert obj.spec.replicas == 3 and obj.kind == "CliqueScalingGroup"


def _group(replicas: int = 2, min_available: int = 1, autoscaled: bool = False) -> scaling.Group:
    return scaling.Group("prefill", ("pleader", "pworker"), replicas, min_available, autoscaled)


def test_spec_patch_nothing_when_the_template_was_applied() -> None:
    assert scaling.spec_patch(scaling_group_object(0, 2, applied="2"), _group(2)) is None


def test_spec_patch_a_kubectl_scale_stands_until_the_template_changes() -> None:
    scaled = scaling_group_object(0, 5, applied="2")
    assert scaling.spec_patch(scaled, _group(2)) is None


def test_spec_patch_applies_a_changed_template_replicas_once() -> None:
    scaled = scaling_group_object(0, 5, applied="2")
    patch = scaling.spec_patch(scaled, _group(3))
    assert patch == {
        "metadata": {
            "resourceVersion": "7",
            "annotations": {scaling.ANNOTATION_TEMPLATE_REPLICAS: "3"},
        },
        "spec": {"replicas": 3},
    }
    # once applied, a later kubectl scale stands
    applied = scaling_group_object(0, 3, applied="3")
    assert scaling.spec_patch(applied, _group(3)) is None
    rescaled = scaling_group_object(0, 6, applied="3")
    assert scaling.spec_patch(rescaled, _group(3)) is None


def test_spec_patch_records_the_template_when_the_count_is_already_there() -> None:
    patch = scaling.spec_patch(scaling_group_object(0, 3, applied="2"), _group(3))
    assert patch == {
        "metadata": {
            "resourceVersion": "7",
            "annotations": {scaling.ANNOTATION_TEMPLATE_REPLICAS: "3"},
        }
    }
    # an object without the annotation (made by hand) takes the template's count
    bare = scaling.spec_patch(scaling_group_object(0, 5, applied=None), _group(2))
    assert bare is not None and bare["spec"] == {"replicas": 2}


def test_spec_patch_never_sets_the_replicas_of_an_autoscaled_group() -> None:
    hpa_chosen = scaling_group_object(0, 5, applied="2")
    assert scaling.spec_patch(hpa_chosen, _group(3, autoscaled=True)) is None


def test_spec_patch_min_available_follows_the_template_capped_at_replicas() -> None:
    grown = scaling.spec_patch(scaling_group_object(0, 4, applied="3"), _group(3, 2))
    assert grown == {"metadata": {"resourceVersion": "7"}, "spec": {"minAvailable": 2}}
    # scaled to 1 by hand: the object's minAvailable stays 1, not the template's 2
    one = scaling_group_object(0, 1, applied="3", min_available=1)
    assert scaling.spec_patch(one, _group(3, 2)) is None
    # a template that goes down to 1 instance takes minAvailable down with it
    down = scaling.spec_patch(
        scaling_group_object(0, 3, applied="3", min_available=3), _group(1, 1)
    )
    assert down is not None
    assert down["spec"] == {"replicas": 1, "minAvailable": 1}
    # under autoscaling, capped at the HPA's count
    auto = scaling_group_object(0, 2, applied="4", min_available=1)
    got = scaling.spec_patch(auto, _group(4, 3, autoscaled=True))
    assert got == {"metadata": {"resourceVersion": "7"}, "spec": {"minAvailable": 2}}


def _instances(gang: int, members: list[Clique], count: int) -> tuple[int, int, int]:
    """The prefill group's (made, Ready, current) instances of a gang, as the rollout's
    verdict reads them for the CliqueScalingGroup's status."""
    cqs = prefill_set()
    ctx = cliqueset_rollout.context(cqs, HASHES, startup.dependencies(cqs.spec), 1)
    by_member = {scaling.member_of(c): c for c in members}
    facts = cliqueset_rollout.judge(gang, by_member, ctx, {}, {"prefill": count}).facts
    ((group, *stats),) = facts.instances
    assert group == "prefill"
    return (stats[0], stats[1], stats[2])


def test_the_verdict_counts_made_ready_and_updated_instances() -> None:
    members = [
        *(member_clique(1, r, 0) for r in ("pleader", "pworker")),
        member_clique(1, "pleader", 1, ready=False),  # not Ready
        member_clique(1, "pworker", 1, hash_="old"),  # outdated
        member_clique(1, "pleader", 2),  # instance 2 is half made
        member_clique(1, "pleader", 3),
        member_clique(1, "pworker", 3, deleting=True),  # going: not made
    ]
    assert _instances(1, members, 4) == (2, 1, 1)
    # only the instances below the count are counted
    assert _instances(1, members, 1) == (1, 1, 1)


def test_an_instance_with_pods_still_coming_is_not_updated() -> None:
    worker = member_clique(0, "pworker", 0)
    assert worker.status is not None
    short = msgspec.structs.replace(
        worker, status=msgspec.structs.replace(worker.status, updated_replicas=1)
    )
    assert _instances(0, [member_clique(0, "pleader", 0), short], 1) == (1, 1, 0)


def test_object_status_reports_the_instances_and_the_selector() -> None:
    assert scaling.object_status("llama", 1, "prefill", (2, 1, 1), 9) == {
        "observedGeneration": 9,
        "replicas": 2,
        "readyReplicas": 1,
        "updatedReplicas": 1,
        "selector": SELECTOR.format(gang=1),
    }


def test_plan_objects_makes_one_per_gang_with_the_gangs_count() -> None:
    cqs = prefill_set(replicas=2, min_available=1)
    lay = scaling.layout(cqs.spec)
    counts = {0: {"prefill": 3}, 1: {"prefill": 2}}
    out = scaling.plan_objects(cqs, lay, [], counts, {}, "7", OWNER)
    assert [n for n, _ in out.creates] == ["llama-0-prefill", "llama-1-prefill"]
    assert [b["spec"]["replicas"] for _, b in out.creates] == [3, 2]
    assert out.patches == out.statuses == out.deletes == []


def test_plan_objects_keeps_status_and_deletes_the_unused() -> None:
    cqs = prefill_set(replicas=1)
    lay = scaling.layout(cqs.spec)
    status = CliqueScalingGroupStatus(
        observed_generation=3,
        replicas=2,
        ready_replicas=2,
        updated_replicas=2,
        selector=SELECTOR.format(gang=0),
    )
    objects = [
        scaling_group_object(0, 2, status=status),
        scaling_group_object(1, 2),  # gang 1 is gone
        scaling_group_object(2, 2, deleting=True),  # already going
    ]
    counts = {0: {"prefill": 2}}
    out = scaling.plan_objects(cqs, lay, objects, counts, {0: {"prefill": (2, 2, 2)}}, "7", OWNER)
    assert out.creates == [] and out.patches == [] and out.statuses == []
    assert out.deletes == [("llama-1-prefill", "uid-llama-1-prefill")]
    # an instance not Ready any more: one status patch
    out = scaling.plan_objects(cqs, lay, objects, counts, {0: {"prefill": (2, 1, 2)}}, "7", OWNER)
    assert out.statuses == [
        (
            "llama-0-prefill",
            {
                "status": {
                    "observedGeneration": 3,
                    "replicas": 2,
                    "readyReplicas": 1,
                    "updatedReplicas": 2,
                    "selector": SELECTOR.format(gang=0),
                }
            },
        )
    ]


def test_plan_objects_leaves_an_object_being_deleted_alone() -> None:
    cqs = prefill_set(replicas=1, group_replicas=3)
    lay = scaling.layout(cqs.spec)
    going = scaling_group_object(0, 1, applied="2", deleting=True)
    out = scaling.plan_objects(cqs, lay, [going], {0: {"prefill": 1}}, {}, "7", OWNER)
    assert out.creates == out.patches == out.statuses == out.deletes == []


def test_plan_objects_without_groups_deletes_every_object() -> None:
    cqs = cliqueset(replicas=2)
    lay = scaling.layout(cqs.spec)
    objects = [scaling_group_object(0, 2), scaling_group_object(1, 2)]
    out = scaling.plan_objects(cqs, lay, objects, {}, {}, "7", OWNER)
    assert out.creates == []
    assert [n for n, _ in out.deletes] == ["llama-0-prefill", "llama-1-prefill"]


# -- the Workload's minimum ------------------------------------------------------------------


def test_min_count_counts_a_groups_cliques_once_per_needed_instance() -> None:
    # frontend 1 + decode 1 + minAvailable 1 x (pleader 1 + pworker 2)
    assert workload.min_count(prefill_set(group_replicas=2, min_available=1)) == 5
    assert workload.min_count(prefill_set(group_replicas=3, min_available=2)) == 8
    assert workload.min_count(prefill_set(group_replicas=3, min_available=0)) == 2
    cqs = prefill_set(group_replicas=3, min_available=2)
    cqs.spec.template.cliques[2].min_available = 1  # pworker needs 1 of its 2 pods
    assert workload.min_count(cqs) == 1 + 1 + 2 * (1 + 1)
    # without groups: the sum of the cliques' minAvailable, as before
    assert workload.min_count(cliqueset(roles=(("leader", 1), ("worker", 2)))) == 3
