"""PodGroups (Kubernetes 1.36 `v1alpha2`, 1.37 `v1beta1`): a group per gang named by the
hash of what the API server keeps immutable, every pod of a gang naming one group,
`minCount` patched where the API lets it change, a gang moving to a new group only when
all its pods are made again, groups no Clique names deleted; the Workload as their
template."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.meta import ObjectMeta, OwnerReference
from cliques.api.podgroup import GangPolicy, PodGroup, PodGroupSpec, SchedulingPolicy
from cliques.api.policies import GangScheduling
from cliques.api.workload import Workload
from cliques.controllers.clique import bodies as pod_bodies
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.features import gang_apis, podgroups, workload
from tests.support import bodies as support_bodies
from tests.unit.planner_fixtures import cliqueset, gangs, set_snapshot

NEEDED = 3  # a leader and two workers


def with_backend(backend: str = "Workload", **kw: Any):  # type: ignore[no-untyped-def]
    cqs = cliqueset(**kw)
    spec = msgspec.structs.replace(cqs.spec, gang_scheduling=GangScheduling(backend=backend))  # type: ignore[arg-type]
    return msgspec.structs.replace(cqs, spec=spec)


def _ref() -> list[OwnerReference]:
    return [
        OwnerReference(
            api_version="x", kind="CliqueSet", name="llama", uid="cqs-uid", controller=True
        )
    ]


def name_for(gang: int, version: str = "v1beta1", made_for: int = NEEDED) -> str:
    return podgroups.group_name(
        "llama", gang, podgroups.fixed_hash(gang_apis.of(version), made_for)
    )


def group(
    gang: int,
    version: str = "v1beta1",
    *,
    min_count: int = NEEDED,
    made_for: int | None = None,
    deleting: bool = False,
    workload_name: str = "llama-w",
) -> PodGroup:
    """The group of `gang` as the operator made it for `made_for` pods (default: min_count)."""
    made = min_count if made_for is None else made_for
    return PodGroup(
        metadata=ObjectMeta(
            name=name_for(gang, version, made),
            namespace="ns",
            uid=f"pg-{gang}-{made}",
            resource_version="7",
            owner_references=_ref(),
            annotations={
                labels.ANNOTATION_POD_GROUP_SPEC: podgroups.fixed_hash(gang_apis.of(version), made),
                labels.ANNOTATION_WORKLOAD: workload_name,
            },
            deletion_timestamp="2026-11-25T00:00:00Z" if deleting else None,
        ),
        spec=PodGroupSpec(scheduling_policy=SchedulingPolicy(gang=GangPolicy(min_count=min_count))),
    )


def named_gangs(
    n: int, version: str = "v1beta1", made_for: int = NEEDED, **kw: Any
) -> list[Clique]:
    """`gangs(n)` whose Cliques name their gang's group (made for `made_for` pods)."""
    out = []
    for c in gangs(n, **kw):
        name = name_for(c.spec.gang_index, version, made_for)
        meta = msgspec.structs.replace(
            c.metadata, annotations={**c.metadata.annotations, labels.ANNOTATION_POD_GROUP: name}
        )
        out.append(msgspec.structs.replace(c, metadata=meta))
    return out


def plan(  # type: ignore[no-untyped-def]
    cqs: Any,
    version: str = "v1beta1",
    cliques: list[Clique] | None = None,
    features: frozenset[str] = frozenset(),
    **kw: Any,
):
    api = gang_apis.of(version, features)
    snap = set_snapshot(cqs, cliques if cliques is not None else [], gang_api=api, **kw)
    return cliqueset_planner.plan(snap)


def kinds(actions: list[Any], kind: str) -> list[str]:
    return [a.name for a in actions if a.resource.kind == kind]


@pytest.mark.parametrize("version", ["v1alpha2", "v1beta1"])
def test_a_new_set_gets_its_workload_a_group_per_gang_and_cliques_naming_them(version: str) -> None:
    cqs = with_backend(replicas=2)
    out = plan(cqs, version)
    wl = workload.workload_name(cqs)
    assert kinds(out.creates, "Workload") == [wl]
    names = [name_for(0, version), name_for(1, version)]
    assert kinds(out.creates, "PodGroup") == names
    assert names[0].startswith("llama-0-") and len(names[0]) == len("llama-0-") + 8
    # pods may exist before their group (they wait for it): the Cliques come at once
    assert len(kinds(out.creates, "Clique")) == 4
    for c in out.creates:
        if c.resource.kind == "Clique":
            gang = c.body["spec"]["gangIndex"]
            assert c.body["metadata"]["annotations"][labels.ANNOTATION_POD_GROUP] == names[gang]
            assert labels.ANNOTATION_WORKLOAD not in c.body["metadata"]["annotations"]
    wl_body = next(c.body for c in out.creates if c.resource.kind == "Workload")
    assert wl_body["apiVersion"] == f"scheduling.k8s.io/{version}"
    assert wl_body["spec"]["podGroupTemplates"] == [
        {"name": "gang", "schedulingPolicy": {"gang": {"minCount": NEEDED}}}
    ]
    pg = next(c for c in out.creates if c.name == names[1])
    assert pg.resource.version == version and pg.resource.plural == "podgroups"
    body = pg.body
    assert body["spec"]["schedulingPolicy"] == {"gang": {"minCount": NEEDED}}
    owner = body["metadata"]["ownerReferences"][0]
    assert (owner["uid"], owner["controller"], owner["blockOwnerDeletion"]) == (
        "cqs-uid",
        True,
        True,
    )
    assert body["metadata"]["labels"][labels.LABEL_GANG_INDEX] == "1"
    assert body["metadata"]["labels"][labels.LABEL_BUCKET]
    if version == "v1beta1":
        assert body["spec"]["workloadRef"] == {"workloadName": wl, "templateName": "gang"}
    else:
        assert body["spec"]["podGroupTemplateRef"] == {
            "workload": {"workloadName": wl, "podGroupTemplateName": "gang"}
        }
    assert out.status is not None
    cond = next(c for c in out.status.conditions if c.type == "GangScheduling")
    assert cond.status == "True" and f"scheduling.k8s.io/{version} PodGroups" in cond.message


def test_pods_name_their_gangs_group() -> None:
    cqs = with_backend(replicas=2)
    body = support_bodies.clique_body(
        cqs,
        1,
        cqs.spec.template.cliques[1],
        template_hash="h",
        algorithm=1,
        bucket="0",
        pod_group="llama-1-abc",
    )
    pod = pod_bodies.pod_body(msgspec.convert(body, Clique), 0, "h", 1)
    assert pod["spec"]["schedulingGroup"] == {"podGroupName": "llama-1-abc"}
    assert "workloadRef" not in pod["spec"]


def test_a_clique_added_to_a_gang_names_the_gangs_group() -> None:
    cqs = with_backend(replicas=1, roles=(("leader", 1), ("worker", 2), ("extra", 1)))
    v = "v1alpha2"
    old = name_for(0, v, made_for=NEEDED)  # made for 3 pods; the gang now wants 4
    assert old != name_for(0, v, made_for=4)
    hashes = {"leader": "h1", "worker": "h1", "extra": "h1"}
    out = plan(cqs, v, named_gangs(1, v), pod_groups=[group(0, v)], hashes=hashes)
    extra = next(c for c in out.creates if c.name == "llama-0-extra")
    assert extra.body["metadata"]["annotations"][labels.ANNOTATION_POD_GROUP] == old


def test_a_resize_patches_min_count_on_v1beta1() -> None:
    # The gang grows from 1 + 2 to 1 + 4: the group follows, the pods keep naming it.
    cqs = with_backend(replicas=2, roles=(("leader", 1), ("worker", 4)))
    assert name_for(0, made_for=5) == name_for(0, made_for=NEEDED)  # one name for both
    out = plan(cqs, "v1beta1", named_gangs(2), pod_groups=[group(0), group(1)])
    patches = [p for p in out.patches if p.resource.kind == "PodGroup"]
    assert [p.name for p in patches] == [name_for(0), name_for(1)]
    assert patches[0].patch == {
        "metadata": {"resourceVersion": "7"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 5}}},
    }
    assert not kinds(out.deletes, "PodGroup") and not kinds(out.creates, "PodGroup")


def test_on_v1alpha2_a_resized_gang_keeps_its_group_until_all_its_pods_are_made_again() -> None:
    # minCount cannot change there. Shrunk 1 + 2 -> 1 + 1, the gang keeps the group it
    # names: a pod alone in a new group could never reach its minCount.
    v = "v1alpha2"
    cqs = with_backend(replicas=1, roles=(("leader", 1), ("worker", 1)))
    cliques = named_gangs(1, v)
    first = plan(cqs, v, cliques, pod_groups=[group(0, v)])
    assert not [
        a for a in [*first.creates, *first.deletes, *first.patches] if a.resource.kind == "PodGroup"
    ]
    # A roll of every clique of the gang (its pods all made again) moves it.
    rolled = with_image(cqs, "vllm:2")
    out = plan(
        rolled, v, cliques, pod_groups=[group(0, v)], hashes={"leader": "h2", "worker": "h2"}
    )
    moved = [p for p in out.patches if p.resource.kind == "Clique" and p.reason == "RollingUpdate"]
    assert len(moved) == 2
    for p in moved:
        op = next(o for o in p.patch if o["path"].endswith("cliques.dev~1pod-group"))
        assert op["value"] == name_for(0, v, made_for=2)
    # The next pass (the Cliques name the new group) makes it and lets the old one go.
    after = [
        msgspec.structs.replace(
            c,
            metadata=msgspec.structs.replace(
                c.metadata,
                annotations={
                    **c.metadata.annotations,
                    labels.ANNOTATION_POD_GROUP: name_for(0, v, 2),
                },
            ),
        )
        for c in cliques
    ]
    out = plan(rolled, v, after, pod_groups=[group(0, v)], hashes={"leader": "h2", "worker": "h2"})
    made = next(c for c in out.creates if c.resource.kind == "PodGroup")
    assert made.name == name_for(0, v, 2)
    assert made.body["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    assert kinds(out.deletes, "PodGroup") == [name_for(0, v)]


def test_a_roll_of_some_cliques_keeps_the_gangs_group() -> None:
    v = "v1alpha2"
    cqs = with_backend(replicas=1, roles=(("leader", 1), ("worker", 1)))
    out = plan(
        cqs, v, named_gangs(1, v), pod_groups=[group(0, v)], hashes={"leader": "h1", "worker": "h2"}
    )
    rolled = [p for p in out.patches if p.resource.kind == "Clique" and p.reason == "RollingUpdate"]
    assert len(rolled) == 1
    assert not any(o["path"].endswith("cliques.dev~1pod-group") for o in rolled[0].patch)


def test_a_matching_group_is_left_alone() -> None:
    cqs = with_backend(replicas=2)
    for version in ("v1alpha2", "v1beta1"):
        out = plan(
            cqs, version, named_gangs(2, version), pod_groups=[group(0, version), group(1, version)]
        )
        assert not [
            a for a in [*out.creates, *out.deletes, *out.patches] if a.resource.kind == "PodGroup"
        ]


def test_a_removed_gang_loses_its_group_once_its_cliques_are_gone() -> None:
    cqs = with_backend(replicas=1)
    # gang 1's Cliques are still there (being scaled down): its group stays
    during = plan(cqs, "v1beta1", named_gangs(2), pod_groups=[group(0), group(1)])
    assert not kinds(during.deletes, "PodGroup")
    after = plan(cqs, "v1beta1", named_gangs(1), pod_groups=[group(0), group(1)])
    removed = [d for d in after.deletes if d.resource.kind == "PodGroup"]
    assert [(d.name, d.reason) for d in removed] == [(name_for(1), "Unused")]


def test_backend_none_keeps_the_groups_its_gangs_still_name() -> None:
    cqs = with_backend("None", replicas=2)
    kept = plan(cqs, "v1beta1", named_gangs(2), pod_groups=[group(0), group(1)])
    assert not kinds(kept.deletes, "PodGroup")
    # new Cliques name no group
    fresh = plan(cqs, "v1beta1", [])
    assert not any(
        labels.ANNOTATION_POD_GROUP in c.body["metadata"]["annotations"]
        for c in fresh.creates
        if c.resource.kind == "Clique"
    )
    unnamed = plan(cqs, "v1beta1", gangs(2), pod_groups=[group(0), group(1)])
    assert kinds(unnamed.deletes, "PodGroup") == [name_for(0), name_for(1)]


def test_a_workload_a_group_links_to_is_kept() -> None:
    cqs = with_backend(replicas=1)
    current = workload.workload_name(cqs)

    def wl(name: str) -> Workload:
        return Workload(
            metadata=ObjectMeta(
                name=name, namespace="ns", uid=f"uid-{name}", owner_references=_ref()
            )
        )

    out = plan(
        cqs,
        "v1beta1",
        named_gangs(1),
        workloads=[wl(current), wl("llama-old"), wl("llama-older")],
        pod_groups=[group(0, workload_name="llama-old")],
    )
    assert kinds(out.deletes, "Workload") == ["llama-older"]


def test_min_count_follows_min_available() -> None:
    cqs = with_backend(replicas=1)
    tmpl = cqs.spec.template.cliques[1]
    lowered = msgspec.structs.replace(tmpl, min_available=1)
    spec = msgspec.structs.replace(
        cqs.spec,
        template=msgspec.structs.replace(
            cqs.spec.template, cliques=[cqs.spec.template.cliques[0], lowered]
        ),
    )
    cqs = msgspec.structs.replace(cqs, spec=spec)
    out = plan(cqs, "v1beta1")
    pg = next(c for c in out.creates if c.resource.kind == "PodGroup")
    assert pg.body["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}


def test_fixed_hash_leaves_min_count_out_only_where_it_may_change() -> None:
    assert podgroups.fixed_hash(gang_apis.of("v1beta1"), 3) == podgroups.fixed_hash(
        gang_apis.of("v1beta1"), 5
    )
    assert podgroups.fixed_hash(gang_apis.of("v1alpha2"), 3) != podgroups.fixed_hash(
        gang_apis.of("v1alpha2"), 5
    )
    assert podgroups.fixed_hash(gang_apis.of("v1beta1"), 0) != podgroups.fixed_hash(
        gang_apis.of("v1beta1"), 3
    )


def with_placement(cqs: Any, pack_mode: str = "Required", exclusive: bool = False) -> Any:
    from cliques.api.policies import ExclusivePolicy, PackPolicy, Placement

    where = Placement(
        pack=PackPolicy(topology_key="rack", mode=pack_mode),  # type: ignore[arg-type]
        exclusive=ExclusivePolicy(topology_key="zone") if exclusive else None,
    )
    return msgspec.structs.replace(cqs, spec=msgspec.structs.replace(cqs.spec, placement=where))


def _affinity(create: Any) -> dict[str, Any]:
    return dict(create.body["spec"]["template"]["spec"].get("affinity") or {})


def test_pack_required_goes_to_the_scheduler_where_the_server_keeps_topology() -> None:
    cqs = with_placement(with_backend(replicas=1), exclusive=True)
    out = plan(cqs, "v1beta1", features=frozenset({"topology"}))
    group = next(c for c in out.creates if c.resource.kind == "PodGroup")
    assert group.body["spec"]["schedulingConstraints"] == {"topology": [{"key": "rack"}]}
    for c in out.creates:
        if c.resource.kind == "Clique":
            affinity = _affinity(c)
            assert "podAffinity" not in affinity  # the scheduler packs
            assert "podAntiAffinity" in affinity  # exclusive stays an affinity term


def test_pack_stays_an_affinity_term_elsewhere() -> None:
    for version, features, mode in (
        ("v1beta1", frozenset(), "Required"),  # the gate is off
        ("v1beta1", frozenset({"topology"}), "Preferred"),  # not a constraint
        ("v1alpha1", frozenset({"topology"}), "Required"),  # no PodGroups
    ):
        cqs = with_placement(with_backend(replicas=1), pack_mode=mode)
        out = plan(cqs, version, features=features)
        groups = [c for c in out.creates if c.resource.kind == "PodGroup"]
        assert all("schedulingConstraints" not in g.body["spec"] for g in groups)
        if version == "v1alpha1":
            wl_name = workload.workload_name(cqs)
            wl = Workload(
                metadata=ObjectMeta(name=wl_name, namespace="ns", uid="w", owner_references=_ref())
            )
            out = plan(cqs, version, features=features, workloads=[wl])
        cliques = [c for c in out.creates if c.resource.kind == "Clique"]
        assert cliques and all("podAffinity" in _affinity(c) for c in cliques), version


def test_the_group_carries_priority_and_disruption() -> None:
    cqs = with_backend(replicas=1)
    worker = cqs.spec.template.cliques[1]
    tmpl = {**worker.template, "spec": {**worker.template["spec"], "priorityClassName": "high"}}
    spec = msgspec.structs.replace(
        cqs.spec,
        template=msgspec.structs.replace(
            cqs.spec.template,
            cliques=[cqs.spec.template.cliques[0], msgspec.structs.replace(worker, template=tmpl)],
        ),
    )
    cqs = msgspec.structs.replace(cqs, spec=spec)
    beta = next(c for c in plan(cqs, "v1beta1").creates if c.resource.kind == "PodGroup")
    assert beta.body["spec"]["priorityClassName"] == "high"
    assert beta.body["spec"]["disruptionMode"] == {"all": {}}
    alpha = next(c for c in plan(cqs, "v1alpha2").creates if c.resource.kind == "PodGroup")
    assert alpha.body["spec"]["disruptionMode"] == "PodGroup"

    pod_wise = msgspec.structs.replace(
        cqs,
        spec=msgspec.structs.replace(
            cqs.spec, gang_scheduling=GangScheduling(backend="Workload", disruption="Pod")
        ),
    )
    single = next(c for c in plan(pod_wise, "v1beta1").creates if c.resource.kind == "PodGroup")
    assert single.body["spec"]["disruptionMode"] == {"single": {}}
    # a change of disruption makes the group again (the field is immutable)
    made = podgroups.shape(cqs)  # the shape gang 0's group was made with
    # a change of disruption is a new group: the gang moves when its pods are made again
    assert podgroups.fixed_hash(gang_apis.of("v1beta1"), made) != podgroups.fixed_hash(
        gang_apis.of("v1beta1"), podgroups.shape(pod_wise)
    )
    out = plan(pod_wise, "v1beta1", named_gangs(1), pod_groups=[group(0)])
    assert not kinds(out.deletes, "PodGroup") and not kinds(out.creates, "PodGroup")


def with_image(cqs: Any, image: str) -> Any:
    cliques = []
    for c in cqs.spec.template.cliques:
        spec = {
            **c.template["spec"],
            "containers": [{**c.template["spec"]["containers"][0], "image": image}],
        }
        cliques.append(msgspec.structs.replace(c, template={**c.template, "spec": spec}))
    template = msgspec.structs.replace(cqs.spec.template, cliques=cliques)
    return msgspec.structs.replace(cqs, spec=msgspec.structs.replace(cqs.spec, template=template))
