"""cliques.controllers.features.composite_groups: a gang with scaling groups as a CompositePodGroup
tree (Kubernetes 1.37, alpha): the layout (flat, nested, parts the gang does not need),
names that change with what the API server keeps immutable, the bodies, and the Workload
templates they link to."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import msgspec
import pytest

from cliques.api import labels
from cliques.api.cliqueset import CliqueSet
from cliques.controllers.features import composite_groups as cg
from cliques.controllers.features.podgroups import NAME_HASH, Shape

BASE = Shape(needed=0)
PREFILL = cg.GroupNeed("prefill", min_available=2, instance_pods=3, instances=3)
DECODE = cg.GroupNeed("decode", min_available=1, instance_pods=2, instances=2)
SPARE = cg.GroupNeed("spare", min_available=0, instance_pods=1, instances=2)
SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def cliqueset(name: str = "llama") -> CliqueSet:
    pod = {"spec": {"containers": [{"name": "m"}]}}
    return msgspec.convert(
        {
            "apiVersion": "cliques.dev/v1alpha1",
            "kind": "CliqueSet",
            "metadata": {"name": name, "namespace": "ns", "uid": "u-1"},
            "spec": {"replicas": 2, "template": {"cliques": [{"name": "leader", "template": pod}]}},
        },
        CliqueSet,
    )


def by_name(tree: list[cg.Member]) -> dict[str, cg.Member]:
    return {m.name: m for m in tree}


def test_flat_gang_is_its_one_groups_composite() -> None:
    tree = cg.members("llama", 4, [PREFILL], BASE)
    root, *kids = tree
    assert root.kind == cg.KIND_COMPOSITE and root.count == 2 and root.parent == ""
    assert root.template == cg.TEMPLATE_GANG and root.group == "prefill"
    assert root.name == f"llama-4-{root.fixed[:NAME_HASH]}"
    assert [k.instance for k in kids] == [0, 1, 2]
    for k in kids:
        assert k.kind == cg.KIND_POD_GROUP and k.parent == root.name and k.count == 3
        assert k.template == "instance-prefill" and k.group == "prefill"
        assert k.name == f"llama-4-prefill-{k.instance}-{k.fixed[:NAME_HASH]}"
    assert cg.pod_group_of(tree, "prefill", 1) == kids[1].name
    assert cg.pod_group_of(tree) == ""  # no cliques outside the group


def test_nested_gang_has_a_child_per_part_it_needs() -> None:
    tree = cg.members("llama", 0, [PREFILL, DECODE, SPARE], BASE, others=True, other_pods=1)
    root = tree[0]
    assert root.kind == cg.KIND_COMPOSITE and root.parent == "" and root.group == ""
    # the others' PodGroup, prefill's and decode's composites; spare is needed by none
    assert root.count == 3
    names = by_name(tree)
    children = [m for m in tree if m.parent == root.name]
    assert [(m.kind, m.group, m.template) for m in children] == [
        (cg.KIND_POD_GROUP, "", cg.TEMPLATE_OTHERS),
        (cg.KIND_COMPOSITE, "prefill", "group-prefill"),
        (cg.KIND_COMPOSITE, "decode", "group-decode"),
    ]
    others, prefill, decode = children
    assert others.count == 1 and others.instance is None
    assert cg.pod_group_of(tree) == others.name
    assert prefill.count == 2 and decode.count == 1
    assert prefill.name.startswith("llama-0-prefill-")
    for m in tree:
        if m.parent:
            assert names[m.parent].kind == cg.KIND_COMPOSITE
            assert tree.index(names[m.parent]) < tree.index(m)  # parents first
    decode_pgs = [m for m in tree if m.group == "decode" and m.kind == cg.KIND_POD_GROUP]
    assert [(m.parent, m.count, m.template) for m in decode_pgs] == [
        (decode.name, 2, "instance-decode")
    ] * 2
    # spare: a PodGroup per instance, of its own, with no composite and no template
    spare = [m for m in tree if m.group == "spare"]
    assert [(m.kind, m.parent, m.template, m.instance) for m in spare] == [
        (cg.KIND_POD_GROUP, "", "", 0),
        (cg.KIND_POD_GROUP, "", "", 1),
    ]
    assert len(names) == len(tree)  # every name is unique


def test_parts_that_need_nothing_are_left_out_of_the_tree() -> None:
    # cliques outside the group needing no pod: the group alone is counted
    tree = cg.members("llama", 0, [PREFILL], BASE, others=True, other_pods=0)
    root = tree[0]
    assert root.count == 1
    others = [m for m in tree if m.kind == cg.KIND_POD_GROUP and not m.group]
    assert [(m.parent, m.count, m.template) for m in others] == [("", 0, "")]
    # nothing needed at all: no composite, every group of its own
    tree = cg.members("llama", 0, [SPARE], BASE)
    assert all(m.kind == cg.KIND_POD_GROUP and not m.parent for m in tree)
    assert len(tree) == SPARE.instances


def test_instances_follow_the_gangs_count() -> None:
    one = cg.members("llama", 0, [dataclasses.replace(PREFILL, instances=1)], BASE)
    four = cg.members("llama", 0, [dataclasses.replace(PREFILL, instances=4)], BASE)
    assert one == four[:2]  # the same composite and first instance: names are stable


def test_names_change_with_what_cannot_change() -> None:
    def names(need: cg.GroupNeed, shape: Shape = BASE) -> list[str]:
        return [m.name for m in cg.members("llama", 0, [need], shape)]

    base = names(PREFILL)
    # minCount may change (v1beta1): a new per-instance need keeps every name
    more_pods = cg.GroupNeed("prefill", min_available=2, instance_pods=5, instances=3)
    assert names(more_pods) == base
    # minGroupCount may not: a new composite, and children naming it
    fewer = cg.GroupNeed("prefill", min_available=1, instance_pods=3, instances=3)
    assert not set(names(fewer)) & set(base)
    # nor the topology, priority class or disruption mode
    for shape in (
        Shape(needed=0, topology_key="rack"),
        Shape(needed=0, priority_class="high"),
        Shape(needed=0, disruption="Pod"),
    ):
        assert not set(names(PREFILL, shape)) & set(base)
    # a gang needing no pod of a part uses the basic policy: another hash
    assert cg.pod_group_fixed_hash(0, BASE) != cg.pod_group_fixed_hash(1, BASE)
    assert cg.pod_group_fixed_hash(1, BASE) == cg.pod_group_fixed_hash(7, BASE)


def test_longest_names_are_dns_subdomains() -> None:
    set_name = "a" * 52
    group = "g" * 20
    need = cg.GroupNeed(group, min_available=1, instance_pods=1, instances=100)
    tree = cg.members(set_name, 9999, [need], BASE, others=True, other_pods=1)
    for m in tree:
        assert len(m.name) <= 253 and SUBDOMAIN.match(m.name), m.name
    for name in (cg.group_template(group), cg.instance_template(group)):
        assert len(name) <= 63 and re.match(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", name)
    with pytest.raises(ValueError):
        cg.instance_name("llama", 0, "g", -1, "abc")


def test_composite_body() -> None:
    cqs = cliqueset()
    shape = Shape(needed=0, topology_key="topology.kubernetes.io/rack", priority_class="hi")
    root, first, *_ = cg.members("llama", 3, [PREFILL], shape)
    made = cg.composite_body(cqs, 3, root, "llama-w", shape, bucket="b7")
    assert made == {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {
            "name": root.name,
            "namespace": "ns",
            "labels": {
                labels.LABEL_CLIQUESET: "llama",
                labels.LABEL_GANG_INDEX: "3",
                labels.LABEL_BUCKET: "b7",
                labels.LABEL_SCALING_GROUP: "prefill",
            },
            "annotations": {
                labels.ANNOTATION_POD_GROUP_SPEC: root.fixed,
                labels.ANNOTATION_WORKLOAD: "llama-w",
            },
            "ownerReferences": [
                {
                    "apiVersion": "cliques.dev/v1alpha1",
                    "kind": "CliqueSet",
                    "name": "llama",
                    "uid": "u-1",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "workloadRef": {"workloadName": "llama-w", "templateName": "gang"},
            "schedulingPolicy": {"gang": {"minGroupCount": 2}},
            "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
            "priorityClassName": "hi",
            "disruptionMode": {"all": {}},
        },
    }
    with pytest.raises(ValueError):
        cg.composite_body(cqs, 3, first, "llama-w", shape, bucket="b7")  # a PodGroup


def test_pod_group_body_of_an_instance() -> None:
    cqs = cliqueset()
    shape = Shape(needed=0, topology_key="rack", disruption="Pod")
    root, _, second, _ = cg.members("llama", 3, [PREFILL], shape)
    made = cg.pod_group_body(cqs, 3, second, "llama-w", shape, bucket="b7")
    assert made["apiVersion"] == "scheduling.k8s.io/v1beta1" and made["kind"] == "PodGroup"
    assert made["metadata"]["name"] == second.name
    assert made["metadata"]["labels"] == {
        labels.LABEL_CLIQUESET: "llama",
        labels.LABEL_GANG_INDEX: "3",
        labels.LABEL_BUCKET: "b7",
        labels.LABEL_SCALING_GROUP: "prefill",
        labels.LABEL_GROUP_INDEX: "1",
    }
    assert made["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    # the topology is the gang's (its composite's), not each instance's
    assert made["spec"] == {
        "parentCompositePodGroupName": root.name,
        "workloadRef": {"workloadName": "llama-w", "templateName": "instance-prefill"},
        "schedulingPolicy": {"gang": {"minCount": 3}},
        "disruptionMode": {"single": {}},
    }
    assert cg.body(cqs, 3, second, "llama-w", shape, bucket="b7") == made
    assert cg.body(cqs, 3, root, "llama-w", shape, bucket="b7")["kind"] == "CompositePodGroup"


def test_nested_bodies_and_groups_of_their_own() -> None:
    cqs = cliqueset()
    tree = cg.members("llama", 0, [DECODE, SPARE], BASE, others=True, other_pods=2)
    bodies = {m.name: cg.body(cqs, 0, m, "llama-w", BASE, bucket="b") for m in tree}
    root = tree[0]
    decode = next(m for m in tree if m.kind == cg.KIND_COMPOSITE and m.group == "decode")
    spec = bodies[decode.name]["spec"]
    assert spec["parentCompositePodGroupName"] == root.name
    assert spec["workloadRef"]["templateName"] == "group-decode"
    assert "schedulingConstraints" not in spec
    others = bodies[cg.pod_group_of(tree)]
    assert others["spec"]["parentCompositePodGroupName"] == root.name
    assert others["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    assert labels.LABEL_SCALING_GROUP not in others["metadata"]["labels"]
    spare = bodies[cg.pod_group_of(tree, "spare", 1)]
    assert "parentCompositePodGroupName" not in spare["spec"]
    assert "workloadRef" not in spare["spec"]
    assert spare["metadata"]["annotations"][labels.ANNOTATION_WORKLOAD] == ""


def test_bodies_refuse_what_the_api_server_would() -> None:
    tree = cg.members("llama", 0, [PREFILL], BASE)
    with pytest.raises(ValueError, match="Workload"):
        cg.body(cliqueset(), 0, tree[1], "", BASE, bucket="b")  # a child needs a template
    no_uid = msgspec.structs.replace(
        cliqueset(), metadata=msgspec.structs.replace(cliqueset().metadata, uid="")
    )
    with pytest.raises(ValueError, match="uid"):
        cg.body(no_uid, 0, tree[0], "w", BASE, bucket="b")
    orphan = cg.Member(cg.KIND_COMPOSITE, "x", 1, template="")
    with pytest.raises(ValueError, match="template"):
        cg.composite_body(cliqueset(), 0, orphan, "w", BASE, bucket="b")


def _templates(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every template of a Workload spec by name, and check each composite has a child."""
    out: dict[str, dict[str, Any]] = {}

    def walk(composites: list[dict[str, Any]], depth: int) -> None:
        assert depth <= 4
        for c in composites:
            assert c.get("podGroupTemplates") or c.get("compositePodGroupTemplates")
            assert c["name"] not in out
            out[c["name"]] = c
            for p in c.get("podGroupTemplates", []):
                assert p["name"] not in out
                out[p["name"]] = p
            walk(c.get("compositePodGroupTemplates", []), depth + 1)

    assert set(spec) == {"compositePodGroupTemplates"}
    walk(spec["compositePodGroupTemplates"], 1)
    return out


@pytest.mark.parametrize(
    ("groups", "others", "other_pods"),
    [
        ([PREFILL], False, 0),
        ([PREFILL], True, 1),
        ([PREFILL, DECODE], False, 0),
        ([PREFILL, DECODE, SPARE], True, 2),
        ([SPARE, DECODE], True, 0),
    ],
)
def test_workload_templates_match_the_tree(
    groups: list[cg.GroupNeed], others: bool, other_pods: int
) -> None:
    shape = Shape(needed=0, topology_key="rack", priority_class="hi")
    spec = cg.workload_templates(groups, shape, others=others, other_pods=other_pods)
    templates = _templates(spec)
    tree = cg.members("llama", 0, groups, shape, others=others, other_pods=other_pods)
    for m in tree:
        if not m.template:
            continue
        t = templates[m.template]
        key = "minGroupCount" if m.kind == cg.KIND_COMPOSITE else "minCount"
        assert t["schedulingPolicy"]["gang"][key] == m.count
        assert t["priorityClassName"] == "hi"  # one priority in the whole Workload
        assert ("schedulingConstraints" in t) is (m.kind == cg.KIND_COMPOSITE and not m.parent)
    used = {m.template for m in tree if m.template}
    assert used <= set(templates)
    root = spec["compositePodGroupTemplates"][0]
    assert root["name"] == cg.TEMPLATE_GANG


def test_flat_workload_templates() -> None:
    assert cg.workload_templates([PREFILL], BASE) == {
        "compositePodGroupTemplates": [
            {
                "name": "gang",
                "schedulingPolicy": {"gang": {"minGroupCount": 2}},
                "disruptionMode": {"all": {}},
                "podGroupTemplates": [
                    {
                        "name": "instance-prefill",
                        "schedulingPolicy": {"gang": {"minCount": 3}},
                        "disruptionMode": {"all": {}},
                    }
                ],
            }
        ]
    }
    with pytest.raises(ValueError):
        cg.workload_templates([SPARE], BASE)  # no part needed: no composite to template


def test_wanted() -> None:
    on = frozenset({"composite", "topology"})
    assert cg.wanted(on, 1)
    assert not cg.wanted(frozenset({"topology"}), 1)  # not served
    assert not cg.wanted(on, 0)  # no scaling group: one PodGroup per gang
    assert not cg.wanted(on, 2, shared_claims=True)  # a composite has no resourceClaims
