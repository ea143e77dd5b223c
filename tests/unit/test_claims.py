"""DRA claims of a CliqueSet (`spec.resourceClaims`), planned: the claim entries its pods
get per scope, the objects the operator makes for them and deletes when no Clique names
them, hashes that are the same for every gang and whichever way a gang's claim is made,
the PodGroup path where the server keeps `resourceClaims`, and the `ResourceClaims`
condition that names a claim whose device class does not exist."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from cliques.api import labels
from cliques.api.claim import CliqueSetClaim
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.meta import ObjectMeta
from cliques.api.podgroup import PodGroup, PodGroupClaim, PodGroupSpec
from cliques.api.policies import GangScheduling
from cliques.controllers.base import builders
from cliques.controllers.base.revision import Hasher
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.features import claims, gang_apis, podgroups
from cliques.kube.resources import RESOURCE_CLAIM_TEMPLATES, RESOURCE_CLAIMS
from tests.unit.planner_fixtures import cliqueset, set_snapshot


def claim(
    name: str = "domain", scope: str = "Gang", cliques: list[str] | None = None, cls: str = "dom"
) -> CliqueSetClaim:
    request = {"name": "d", "exactly": {"deviceClassName": cls, "count": 1}}
    return CliqueSetClaim(
        name=name,
        scope=scope,  # type: ignore[arg-type]
        cliques=cliques or [],
        template={"spec": {"devices": {"requests": [request]}}},
    )


def oname(claim_name: str, claim_hash: str) -> str:
    """The name of set llama's claim object (Pod and Set scope, or a Gang template)."""
    return labels.generated_name(
        "llama", claim_name, claim_hash, limit=labels.MAX_OBJECT_NAME_LENGTH, hashed=True
    )


def gname(gang: int, claim_name: str, claim_hash: str) -> str:
    """The name of set llama's ResourceClaim for gang `gang`."""
    return labels.generated_name(
        "llama", gang, claim_name, claim_hash, limit=labels.MAX_OBJECT_NAME_LENGTH, hashed=True
    )


def with_claims(*entries: CliqueSetClaim, backend: str = "None", **kw: Any) -> CliqueSet:
    cqs = cliqueset(**kw)
    spec = msgspec.structs.replace(
        cqs.spec,
        resource_claims=list(entries),
        gang_scheduling=GangScheduling(backend=backend),  # type: ignore[arg-type]
    )
    return msgspec.structs.replace(cqs, spec=spec)


def real_hashes(cqs: CliqueSet) -> dict[str, str]:
    """The hashes as the controller takes them (placement aside: none here)."""
    hasher = Hasher()
    return {
        c.name: hasher.template_hash(dict(claims.hash_basis(c.template, cqs, c.name)))
        for c in cqs.spec.template.cliques
    }


def plan(cqs: CliqueSet, cliques: list[Clique] | None = None, **kw: Any) -> Any:
    kw.setdefault("hashes", real_hashes(cqs))
    return cliqueset_planner.plan(set_snapshot(cqs, cliques or [], **kw))


def as_cliques(out: Any) -> list[Clique]:
    """The Cliques a plan creates, as the cache would show them."""
    made = [c.body for c in out.creates if c.resource.kind == "Clique"]
    return [
        msgspec.convert(
            {**b, "metadata": {**b["metadata"], "uid": f"uid-{b['metadata']['name']}"}}, Clique
        )
        for b in made
    ]


def entries(out: Any, gang: int, role: str) -> list[dict[str, str]]:
    name = labels.clique_name("llama", gang, role)
    body = next(c.body for c in out.creates if c.name == name)
    return list(body["spec"]["template"]["spec"].get("resourceClaims", []))


# --- names and hashes ---------------------------------------------------------------------


def test_names_carry_the_hash_of_scope_and_template() -> None:
    gang, pod = claim(), claim(scope="Pod")
    assert claims.claim_hash(gang) != claims.claim_hash(pod)
    assert claims.claim_hash(gang) == claims.claim_hash(claim(cliques=["leader"]))
    assert claims.claim_hash(gang) != claims.claim_hash(claim(cls="other"))
    h = claims.claim_hash(gang)
    assert (
        claims.object_name("llama", gang)
        == f"llama-{labels.name_hash('llama', 'domain', h)}-domain-{h}"
    )
    assert claims.gang_claim_name("llama", 7, gang) == (
        f"llama-{labels.name_hash('llama', 7, 'domain', h)}-7-domain-{h}"
    )
    assert len(h) == claims.HASH_LENGTH


def test_claim_names_of_two_sets_never_meet() -> None:
    """Set `a` with claim `1-x` and set `a-1` with claim `x` (the same template) once named
    one object `a-1-x-<hash>`; each name now carries the hash of its parts."""
    one, other = claim(name="1-x"), claim(name="x")
    assert claims.claim_hash(one) == claims.claim_hash(other)
    assert claims.legacy_names("a", one, 0)[0] == claims.legacy_names("a-1", other, 0)[0]
    assert claims.object_name("a", one) != claims.object_name("a-1", other)
    # Gang scope: set `a` gang 1 with claim `2-x`, set `a-1` gang 2 with claim `x`
    mine, theirs = claim(name="2-x"), claim(name="x")
    assert claims.legacy_names("a", mine, 1)[1] == claims.legacy_names("a-1", theirs, 2)[1]
    assert claims.gang_claim_name("a", 1, mine) != claims.gang_claim_name("a-1", 2, theirs)


def test_objects_named_before_the_hash_of_their_parts_are_kept_and_made_again() -> None:
    """A Clique made by an earlier operator names `llama-<claim>-<hash>`: that object is
    the set's still (kept, made again if lost), and new Cliques name the hashed one."""
    pod = claim(name="gpu", scope="Pod")
    cqs = with_claims(pod)
    legacy = claims.legacy_names("llama", pod, 0)[0]
    ref = claims.Ref(RESOURCE_CLAIM_TEMPLATES, legacy, "gpu", 0)
    assert claims.source(cqs, ref) == pod
    out = claims.plan(cqs, [ref], {}, "7", {"uid": "cqs-uid"})
    assert [c.name for c in out.creates] == [legacy] and not out.missing
    new = claims.Ref(RESOURCE_CLAIM_TEMPLATES, claims.object_name("llama", pod), "gpu", 0)
    assert claims.source(cqs, new) == pod
    assert claims.source(cqs, claims.Ref(RESOURCE_CLAIM_TEMPLATES, "llama-gpu-0", "gpu", 0)) is None


def test_a_set_without_claims_hashes_as_before() -> None:
    cqs = cliqueset()
    tmpl = cqs.spec.template.cliques[0].template
    assert claims.hash_basis(tmpl, cqs, "leader") is tmpl
    assert claims.resolve(tmpl, cqs, "leader", 3, True) is tmpl
    assert real_hashes(cqs) == real_hashes(with_claims())


def test_a_pod_claim_changes_the_hash_of_its_cliques_only() -> None:
    before = real_hashes(cliqueset())
    after = real_hashes(with_claims(claim("gpu", scope="Pod", cliques=["worker"])))
    assert after["leader"] == before["leader"]  # no claim of the leader's: no roll
    assert after["worker"] != before["worker"]
    changed = real_hashes(with_claims(claim("gpu", scope="Pod", cliques=["worker"], cls="other")))
    assert changed["worker"] != after["worker"]
    assert changed["leader"] == after["leader"]


def test_a_gang_claim_change_changes_every_cliques_hash() -> None:
    one = real_hashes(with_claims(claim(cliques=["worker"])))
    two = real_hashes(with_claims(claim(cliques=["worker"], cls="other")))
    assert one["leader"] != two["leader"] and one["worker"] != two["worker"]


@pytest.mark.parametrize("scope", ["Pod", "Gang", "Set"])
def test_the_hash_is_the_same_for_every_gang_and_either_way_a_claim_is_made(scope: str) -> None:
    cqs = with_claims(claim(scope=scope), claim("gpu", scope="Pod", cliques=["worker"]))
    hasher = Hasher()
    want = real_hashes(cqs)
    for role in ("leader", "worker"):
        tmpl = cqs.spec.template.cliques[0 if role == "leader" else 1].template
        for gang in (0, 5):
            for via in (False, True):
                resolved = claims.resolve(tmpl, cqs, role, gang, via)
                assert claims.unresolve(resolved) == claims.hash_basis(tmpl, cqs, role)
                assert hasher.template_hash(dict(claims.unresolve(resolved))) == want[role]


def test_unresolve_keeps_the_templates_own_claims() -> None:
    cqs = with_claims(claim())
    own = {"name": "scratch", "resourceClaimTemplateName": "mine"}
    tmpl = {"spec": {"containers": [{"name": "m"}], "resourceClaims": [own]}}
    resolved = claims.resolve(tmpl, cqs, "leader", 0, False)
    assert [e["name"] for e in resolved["spec"]["resourceClaims"]] == ["scratch", "domain"]
    assert claims.unresolve(resolved)["spec"]["resourceClaims"] == [own]
    assert tmpl["spec"]["resourceClaims"] == [own]  # the user's template is never changed


# --- entries per scope --------------------------------------------------------------------


def test_entries_per_scope() -> None:
    gang, pod, whole = claim(), claim("gpu", "Pod", ["worker"]), claim("store", "Set", ["leader"])
    cqs = with_claims(gang, pod, whole)
    h = claims.claim_hash
    assert claims.pod_claims(cqs, "leader", 1, False) == [
        {"name": "domain", "resourceClaimName": gname(1, "domain", h(gang))},
        {"name": "store", "resourceClaimName": oname("store", h(whole))},
    ]
    assert claims.pod_claims(cqs, "worker", 1, True) == [
        {"name": "domain", "resourceClaimTemplateName": oname("domain", h(gang))},
        {"name": "gpu", "resourceClaimTemplateName": oname("gpu", h(pod))},
    ]


def test_a_new_set_gets_a_claim_per_gang_and_cliques_naming_them() -> None:
    gang = claim()
    cqs = with_claims(gang, replicas=2)
    out = plan(cqs)
    made = [c for c in out.creates if c.resource == RESOURCE_CLAIMS]
    h = claims.claim_hash(gang)
    assert sorted(c.name for c in made) == sorted([gname(0, "domain", h), gname(1, "domain", h)])
    body = next(c for c in made if c.name == gname(1, "domain", h)).body
    assert body["kind"] == "ResourceClaim" and body["apiVersion"] == "resource.k8s.io/v1"
    assert body["spec"] == gang.template["spec"]
    assert body["metadata"]["labels"][labels.LABEL_GANG_INDEX] == "1"
    assert body["metadata"]["labels"][labels.LABEL_CLAIM] == "domain"
    assert body["metadata"]["ownerReferences"] == [builders.owner_reference(cqs)]
    # the claims come before the Cliques whose pods use them
    kinds = [c.resource.kind for c in out.creates]
    assert kinds.index("Clique") > kinds.index("ResourceClaim")
    for gang_index in (0, 1):
        for role in ("leader", "worker"):
            assert entries(out, gang_index, role) == [
                {"name": "domain", "resourceClaimName": gname(gang_index, "domain", h)}
            ]


def test_pod_and_set_scope_make_one_object_for_the_set() -> None:
    pod, whole = claim("gpu", "Pod"), claim("store", "Set")
    out = plan(with_claims(pod, whole, replicas=3))
    objects = [(c.resource, c.name) for c in out.creates if c.resource.group == "resource.k8s.io"]
    assert objects == [
        (RESOURCE_CLAIMS, claims.object_name("llama", whole)),
        (RESOURCE_CLAIM_TEMPLATES, claims.object_name("llama", pod)),
    ]
    template = next(c.body for c in out.creates if c.resource == RESOURCE_CLAIM_TEMPLATES)
    assert template["spec"] == {"spec": pod.template["spec"]}


def test_objects_no_clique_names_are_deleted_and_named_ones_kept() -> None:
    gang = claim()
    cqs = with_claims(gang, replicas=2)
    live = as_cliques(plan(cqs))
    h = claims.claim_hash(gang)
    have = {
        RESOURCE_CLAIMS: [
            ObjectMeta(name=gname(g, "domain", h), uid=f"c{g}", namespace="ns") for g in (0, 1)
        ]
    }
    assert not [
        c for c in plan(cqs, live, claim_objects=have).creates if c.resource == RESOURCE_CLAIMS
    ]
    # scaled to one gang, its Cliques gone: gang 1's claim goes
    smaller = msgspec.structs.replace(cqs, spec=msgspec.structs.replace(cqs.spec, replicas=1))
    kept = [c for c in live if c.spec.gang_index == 0]
    out = plan(smaller, kept, claim_objects=have)
    assert [(d.name, d.uid) for d in out.deletes if d.resource == RESOURCE_CLAIMS] == [
        (gname(1, "domain", h), "c1")
    ]
    # nothing is deleted while creates are unobserved (the cache may lack a new Clique)
    out = plan(smaller, kept, claim_objects=have, expectations_satisfied=False)
    assert not out.deletes


def test_a_set_that_drops_its_claims_deletes_their_objects_once_no_clique_names_them() -> None:
    gang = claim()
    h = claims.claim_hash(gang)
    have = {RESOURCE_CLAIMS: [ObjectMeta(name=gname(0, "domain", h), uid="c0", namespace="ns")]}
    out = plan(cliqueset(replicas=1), [], claim_objects=have)
    assert [d.name for d in out.deletes] == [gname(0, "domain", h)]


def test_a_claim_change_rolls_to_new_claims_and_keeps_the_old_ones_while_named() -> None:
    old, new = claim(), claim(cls="other")
    live = as_cliques(plan(with_claims(old, replicas=2)))
    cqs = with_claims(new, replicas=2)
    h_old, h_new = claims.claim_hash(old), claims.claim_hash(new)
    have = {
        RESOURCE_CLAIMS: [
            ObjectMeta(name=gname(g, "domain", h_old), uid=f"c{g}", namespace="ns") for g in (0, 1)
        ]
    }
    out = plan(cqs, live, claim_objects=have)
    # gang 0 rolls (maxUnavailable 1): both its cliques, to the new claim made now
    rolled = {p.name for p in out.patches if p.reason == "RollingUpdate"}
    assert rolled == {"llama-0-leader", "llama-0-worker"}
    patch = next(p for p in out.patches if p.name == "llama-0-worker")
    value = next(op["value"] for op in patch.patch if op["path"] == "/spec/template")
    assert value["spec"]["resourceClaims"] == [
        {"name": "domain", "resourceClaimName": gname(0, "domain", h_new)}
    ]
    assert [c.name for c in out.creates if c.resource == RESOURCE_CLAIMS] == [
        gname(0, "domain", h_new)
    ]
    assert not out.deletes  # the old claims are still named by the Cliques in the cache


def test_an_object_from_an_older_spec_cannot_be_made_and_is_reported() -> None:
    old, new = claim(), claim(cls="other")
    live = as_cliques(plan(with_claims(old, replicas=1)))
    out = plan(with_claims(new, replicas=1), live, expectations_satisfied=False)
    assert out.status is not None
    cond = next(c for c in out.status.conditions if c.type == claims.CONDITION_CLAIMS)
    assert cond.status == "False" and cond.reason == "ClaimMissing"
    assert f"ResourceClaim {gname(0, 'domain', claims.claim_hash(old))}" in cond.message


def test_a_set_with_claims_on_a_cluster_without_dra_is_invalid() -> None:
    out = plan(with_claims(claim()), claims_served=False)
    assert not out.creates
    assert out.status is not None
    cond = next(c for c in out.status.conditions if c.type == "Degraded")
    assert cond.reason == "InvalidSpec" and "resource.k8s.io/v1" in cond.message


# --- the PodGroup path --------------------------------------------------------------------

FEATURES = frozenset({"workload-claims"})


def group_plan(cqs: CliqueSet, cliques: list[Clique] | None = None, **kw: Any) -> Any:
    return plan(cqs, cliques, gang_api=gang_apis.of("v1beta1", FEATURES), **kw)


def test_where_the_server_keeps_group_claims_the_gangs_group_lists_them() -> None:
    gang, pod = claim(), claim("gpu", "Pod", ["worker"])
    cqs = with_claims(gang, pod, backend="Workload", replicas=2)
    out = group_plan(cqs)
    tmpl = claims.object_name("llama", gang)
    groups = [c for c in out.creates if c.resource.kind == "PodGroup"]
    assert len(groups) == 2
    for g in groups:
        assert g.body["spec"]["resourceClaims"] == [
            {"name": "domain", "resourceClaimTemplateName": tmpl}
        ]
    # one template per claim, no claim per gang: the control plane makes the group's claim
    # from the template, made with the group
    assert [c.name for c in out.creates if c.resource == RESOURCE_CLAIM_TEMPLATES] == [tmpl]
    assert not [c for c in out.creates if c.resource == RESOURCE_CLAIMS]
    # the group's name covers its claims (the API server keeps them immutable)
    plain = podgroups.wanted_name(
        with_claims(backend="Workload"), 1, gang_apis.of("v1beta1", FEATURES)
    )
    assert groups[1].name != plain
    # The gangs' Cliques come once their groups exist: a pod made before its group gets no
    # share of the group's claim (Kubernetes 1.36).
    assert not [c for c in out.creates if c.resource.kind == "Clique"]
    made = [observed(g) for g in groups]
    out = group_plan(cqs, pod_groups=made)
    assert entries(out, 1, "leader") == [{"name": "domain", "resourceClaimTemplateName": tmpl}]
    assert [c.name for c in out.creates if c.resource == RESOURCE_CLAIM_TEMPLATES] == [
        tmpl,  # not seen yet in this test's cache: asked for again (AlreadyExists is ours)
        claims.object_name("llama", pod),
    ]


def observed(create: Any) -> PodGroup:
    """The PodGroup a plan's create makes, as the cache shows it."""
    body = create.body
    return msgspec.convert(
        {**body, "metadata": {**body["metadata"], "uid": f"uid-{create.name}"}}, PodGroup
    )


def test_a_gang_moving_to_a_new_group_rolls_once_the_group_exists() -> None:
    old, new = claim(), claim(cls="other")
    cqs_old = with_claims(old, backend="Workload", replicas=1)
    first = group_plan(cqs_old)
    groups = [observed(c) for c in first.creates if c.resource.kind == "PodGroup"]
    live = as_cliques(group_plan(cqs_old, pod_groups=groups))
    cqs = with_claims(new, backend="Workload", replicas=1)
    out = group_plan(cqs, live, pod_groups=groups)
    target = podgroups.wanted_name(cqs, 0, gang_apis.of("v1beta1", FEATURES))
    assert target != groups[0].metadata.name
    # the new group is made ahead of the roll, and the old one kept (its Cliques name it)
    assert [c.name for c in out.creates if c.resource.kind == "PodGroup"] == [target]
    assert not [d for d in out.deletes if d.resource.kind == "PodGroup"]
    assert not [p for p in out.patches if p.reason == "RollingUpdate"]
    # once it exists, the gang rolls whole onto it
    ahead = [observed(c) for c in out.creates if c.resource.kind == "PodGroup"]
    out = group_plan(cqs, live, pod_groups=[*groups, *ahead])
    rolled = {p.name for p in out.patches if p.reason == "RollingUpdate"}
    assert rolled == {"llama-0-leader", "llama-0-worker"}


def test_a_gang_whose_group_lacks_the_claims_gets_a_claim_of_its_own() -> None:
    """A gang that names a group made before the server kept group claims (or made by an
    older spec) is not given a template entry its group does not list: its pods would each
    get a claim of their own."""
    gang = claim()
    cqs = with_claims(gang, backend="Workload", replicas=1)
    old_group = PodGroup(metadata=ObjectMeta(name="llama-0-old", namespace="ns", uid="pg"))
    live = as_cliques(plan(cqs, gang_api=gang_apis.of("v1beta1")))
    annotated = [
        msgspec.structs.replace(
            c,
            metadata=msgspec.structs.replace(
                c.metadata,
                annotations={**c.metadata.annotations, labels.ANNOTATION_POD_GROUP: "llama-0-old"},
            ),
        )
        for c in live
        if c.spec.clique_name == "leader"
    ]
    out = group_plan(cqs, annotated, pod_groups=[old_group])
    body = next(c.body for c in out.creates if c.name == "llama-0-worker")
    assert body["metadata"]["annotations"][labels.ANNOTATION_POD_GROUP] == "llama-0-old"
    assert body["spec"]["template"]["spec"]["resourceClaims"] == [
        {"name": "domain", "resourceClaimName": claims.gang_claim_name("llama", 0, gang)}
    ]
    listed = PodGroup(
        metadata=ObjectMeta(name="llama-0-old", namespace="ns", uid="pg"),
        spec=PodGroupSpec(
            resource_claims=[
                PodGroupClaim(
                    name="domain", resource_claim_template_name=claims.object_name("llama", gang)
                )
            ]
        ),
    )
    out = group_plan(cqs, annotated, pod_groups=[listed])
    body = next(c.body for c in out.creates if c.name == "llama-0-worker")
    assert body["spec"]["template"]["spec"]["resourceClaims"] == [
        {"name": "domain", "resourceClaimTemplateName": claims.object_name("llama", gang)}
    ]


# --- the condition ------------------------------------------------------------------------

NO_CLASS = (
    "1 pod(s) Pending: the scheduler finds no node with room for them (llama-1-leader-0); "
    "they start when room appears. The scheduler of llama-1-leader-0: 0/3 nodes are "
    "available: request d: device class nope does not exist. preemption: 0/3 nodes are "
    "available: 3 Preemption is not helpful for scheduling."
)


def test_the_condition_names_the_claim_whose_device_class_does_not_exist() -> None:
    cqs = with_claims(claim(cls="nope"), claim("gpu", "Pod", cls="fine"))
    status, reason, message = claims.condition(cqs, [(1, NO_CLASS), (0, NO_CLASS)])
    assert (status, reason) == ("False", "DeviceClassNotFound")
    assert message == (
        "claim domain: device class nope does not exist (request d); "
        "pods of gang(s) 0, 1 wait for it"
    )


def test_the_condition_says_when_devices_run_out_and_when_all_is_well() -> None:
    cqs = with_claims(claim())
    out_of = "0/3 nodes are available: 3 cannot allocate all claims. preemption: ..."
    status, reason, message = claims.condition(cqs, [(2, out_of)])
    assert (status, reason) == ("False", "DevicesUnavailable") and "gang(s) 2" in message
    assert claims.condition(cqs, [(2, "0/3 nodes are available: 3 Insufficient cpu")]) == (
        "True",
        "Allocatable",
        "no pod waits for a device; claims: domain (Gang)",
    )


def test_the_planner_reports_the_condition_from_its_cliques() -> None:
    cqs = with_claims(claim(cls="nope"), replicas=1)
    live = as_cliques(plan(cqs))
    waiting = []
    for c in live:
        status = {
            "observedGeneration": 1,
            "replicas": 1,
            "templateHash": c.metadata.labels[labels.LABEL_TEMPLATE_HASH],
            "hashAlgorithm": 1,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "Starting",
                    "message": "",
                    "lastTransitionTime": "2026-11-22T08:00:00Z",
                },
                {
                    "type": "PodsUnschedulable",
                    "status": "True",
                    "reason": "Unschedulable",
                    "message": NO_CLASS,
                    "lastTransitionTime": "2026-11-22T08:00:00Z",
                },
            ],
        }
        raw = json.loads(msgspec.json.encode(c))
        raw["metadata"]["generation"] = 1
        waiting.append(msgspec.convert({**raw, "status": status}, Clique))
    out = plan(cqs, waiting)
    assert out.status is not None
    cond = next(c for c in out.status.conditions if c.type == claims.CONDITION_CLAIMS)
    assert cond.reason == "DeviceClassNotFound" and "claim domain" in cond.message


def test_without_gang_scheduling_gangs_are_made_at_once_with_a_claim_each() -> None:
    gang = claim()
    cqs = with_claims(gang, backend="None", replicas=2)
    out = group_plan(cqs)
    assert not [c for c in out.creates if c.resource.kind == "PodGroup"]
    assert entries(out, 1, "worker") == [
        {"name": "domain", "resourceClaimName": claims.gang_claim_name("llama", 1, gang)}
    ]


@pytest.mark.parametrize("scope", ["Gang", "Set"])
def test_shared_claims_are_not_gang_scheduled_on_kubernetes_1_35(scope: str) -> None:
    """The 1.35 scheduler cannot bind a gang whose pods share a claim not yet allocated:
    Auto schedules such a set pod by pod and says why; Workload is an invalid spec."""
    auto = plan(with_claims(claim(scope=scope), backend="Auto"), gang_api=gang_apis.of("v1alpha1"))
    assert out_condition(auto, "GangScheduling") == ("False", "SharedClaimsUnsupported")
    assert not [c for c in auto.creates if c.resource.kind == "Workload"]
    assert [c for c in auto.creates if c.resource.kind == "Clique"]
    explicit = plan(
        with_claims(claim(scope=scope), backend="Workload"), gang_api=gang_apis.of("v1alpha1")
    )
    assert out_condition(explicit, "Degraded")[1] == "InvalidSpec"
    assert not explicit.creates
    # Pod-scope claims are no problem, nor are shared ones from 1.36 on
    pod_only = plan(
        with_claims(claim(scope="Pod"), backend="Auto"), gang_api=gang_apis.of("v1alpha1")
    )
    assert out_condition(pod_only, "GangScheduling")[0] == "True"
    newer = group_plan(with_claims(claim(scope=scope), backend="Auto"))
    assert out_condition(newer, "GangScheduling")[0] == "True"


def out_condition(out: Any, kind: str) -> tuple[str, str]:
    assert out.status is not None
    cond = next(c for c in out.status.conditions if c.type == kind)
    return cond.status, cond.reason
