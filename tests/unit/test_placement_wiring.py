"""spec.placement wired into the CliqueSet planner: each gang's Cliques carry their gang's
affinity, the hash of a set without placement is unchanged, a change of placement rolls,
and a placement whose pods could never schedule is an InvalidSpec."""

from __future__ import annotations

import msgspec

from cliques.api import labels
from cliques.api.policies import ExclusivePolicy, PackPolicy, Placement
from cliques.controllers.base.revision import Hasher
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.features import placement
from tests.support import bodies as support_bodies
from tests.unit.planner_fixtures import cliqueset, gangs, set_snapshot, template

RACK = "topology.kubernetes.io/rack"
PLACED = Placement(pack=PackPolicy(topology_key=RACK), exclusive=ExclusivePolicy(topology_key=RACK))


def placed(**kw: object):  # type: ignore[no-untyped-def]
    cqs = cliqueset(**kw)  # type: ignore[arg-type]
    return msgspec.structs.replace(cqs, spec=msgspec.structs.replace(cqs.spec, placement=PLACED))


def test_clique_body_carries_its_gangs_affinity() -> None:
    cqs = placed()
    tmpl = cqs.spec.template.cliques[1]
    body = support_bodies.clique_body(cqs, 2, tmpl, template_hash="h", algorithm=1, bucket="0")
    affinity = body["spec"]["template"]["spec"]["affinity"]
    pack = affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert pack == [placement.pack_term("llama", 2, RACK)]
    anti = affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti == [placement.exclusive_term("llama", 2, RACK)]
    assert "affinity" not in tmpl.template["spec"]  # the CliqueSet's template is untouched


def test_without_placement_the_template_is_the_users() -> None:
    cqs = cliqueset()
    tmpl = cqs.spec.template.cliques[0]
    body = support_bodies.clique_body(cqs, 1, tmpl, template_hash="h", algorithm=1, bucket="0")
    assert body["spec"]["template"] is tmpl.template
    assert placement.hash_basis(tmpl.template, None, "llama") is tmpl.template


def test_hash_basis_is_the_same_for_every_gang_and_changes_with_placement() -> None:
    hasher = Hasher()
    user = template()
    plain = hasher.template_hash(user)
    basis = hasher.template_hash(dict(placement.hash_basis(user, PLACED, "llama")))
    assert basis != plain
    for gang in range(4):
        compiled = placement.gang_template(user, PLACED, "llama", gang)
        regang = placement.regang(compiled, PLACED, "llama", gang)
        assert hasher.template_hash(dict(regang)) == basis
    other = Placement(pack=PackPolicy(topology_key="zone"))
    assert hasher.template_hash(dict(placement.hash_basis(user, other, "llama"))) != basis
    # A Clique compiled from another placement does not hash as the desired one.
    old = placement.gang_template(user, other, "llama", 3)
    assert hasher.template_hash(dict(placement.regang(old, PLACED, "llama", 3))) != basis


def test_created_cliques_are_placed_per_gang() -> None:
    cqs = placed(replicas=2)
    plan = cliqueset_planner.plan(set_snapshot(cqs, []))
    by_name = {c.name: c.body for c in plan.creates if c.resource.plural == "cliques"}
    for gang in range(2):
        body = by_name[labels.clique_name("llama", gang, "worker")]
        terms = body["spec"]["template"]["spec"]["affinity"]["podAffinity"]
        assert terms["requiredDuringSchedulingIgnoredDuringExecution"] == [
            placement.pack_term("llama", gang, RACK)
        ]


def test_a_roll_patches_in_the_gangs_compiled_template() -> None:
    cqs = placed(replicas=2)
    snap = set_snapshot(cqs, gangs(2), hashes={"leader": "h2", "worker": "h2"})
    plan = cliqueset_planner.plan(snap)
    rolled = [p for p in plan.patches if p.patch_type == "json"]
    assert rolled
    for patch in rolled:
        gang = int(patch.name.split("-")[1])
        value = next(op["value"] for op in patch.patch if op["path"] == "/spec/template")
        pack = value["spec"]["affinity"]["podAffinity"]
        assert pack["requiredDuringSchedulingIgnoredDuringExecution"] == [
            placement.pack_term("llama", gang, RACK)
        ]


def test_unplaceable_placement_is_an_invalid_spec_naming_the_clique() -> None:
    cqs = placed(replicas=2)
    worker = cqs.spec.template.cliques[1]
    worker.template["spec"]["affinity"] = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": RACK}
            ]
        }
    }
    plan = cliqueset_planner.plan(set_snapshot(cqs, []))
    assert not plan.creates
    assert plan.status is not None
    degraded = next(c for c in plan.status.conditions if c.type == "Degraded")
    assert degraded.reason == "InvalidSpec"
    assert "worker" in degraded.message and "leader" not in degraded.message
    assert [e.reason for e in plan.events] == ["InvalidSpec"]


def test_preferred_pack_is_never_unplaceable() -> None:
    where = Placement(pack=PackPolicy(topology_key=RACK, mode="Preferred"))
    t = template()
    t["spec"]["affinity"] = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": RACK}
            ]
        }
    }
    assert placement.unplaceable_cliques([("w", t)], where, "llama", "ns") == []
