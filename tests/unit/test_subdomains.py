"""The DNS layout of a CliqueSet's gangs through the planner and the builders: one Service
per CliqueSet by default, one per gang on request, a gang keeps the layout it was created
with, and a CliqueSet made before the field existed is neither rolled nor re-laid out."""

from __future__ import annotations

import msgspec

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.controllers.clique import bodies as pod_bodies
from cliques.controllers.clique import planner as clique_planner
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.features import subdomains

from .planner_fixtures import clique, cliqueset, gangs, pod, services
from .planner_fixtures import set_snapshot as snap

SHARED = {
    labels.ANNOTATION_SUBDOMAIN: "llama",
    labels.ANNOTATION_SUBDOMAIN_POLICY: "Shared",
}


def shared_gangs(n: int, start: int = 0) -> list[Clique]:
    """Cliques of gangs made under the shared layout."""
    out = []
    for g in range(start, start + n):
        ann = {**SHARED, labels.ANNOTATION_LEADER_ADDRESS: f"leader-{g}-0.llama.ns.svc"}
        out.append(clique(g, "leader", replicas=1, annotations=ann))
        out.append(clique(g, "worker", replicas=2, annotations=ann))
    return out


def created(plan: cliqueset_planner.CliqueSetPlan, kind: str) -> dict[str, dict]:  # type: ignore[type-arg]
    return {c.name: c.body for c in plan.creates if c.resource.kind == kind}


def test_a_new_cliqueset_gets_one_shared_service_and_hostnames_that_carry_the_gang() -> None:
    plan = cliqueset_planner.plan(snap(cliqueset(replicas=3), []))
    svcs = created(plan, "Service")
    assert list(svcs) == ["llama"]
    svc = svcs["llama"]
    assert svc["spec"] == {
        "clusterIP": "None",
        "publishNotReadyAddresses": True,
        "selector": {labels.LABEL_CLIQUESET: "llama"},
    }
    assert labels.LABEL_GANG_INDEX not in svc["metadata"]["labels"]
    cliques = created(plan, "Clique")
    assert len(cliques) == 6
    ann = cliques["llama-2-worker"]["metadata"]["annotations"]
    assert ann[labels.ANNOTATION_SUBDOMAIN] == "llama"
    assert ann[labels.ANNOTATION_SUBDOMAIN_POLICY] == "Shared"
    assert ann[labels.ANNOTATION_LEADER_ADDRESS] == "leader-2-0.llama.ns.svc"

    member = msgspec.convert(cliques["llama-2-worker"], Clique)
    body = pod_bodies.pod_body(member, 1, "h1", 1)
    assert body["spec"]["hostname"] == "worker-2-1"
    assert body["spec"]["subdomain"] == "llama"
    env = {e["name"]: e["value"] for e in body["spec"]["containers"][0]["env"]}
    assert env[labels.ENV_LEADER_ADDRESS] == "leader-2-0.llama.ns.svc"
    # The leader address is exactly the DNS name of pod 0 of the gang's first clique.
    leader = msgspec.convert(cliques["llama-2-leader"], Clique)
    lead = pod_bodies.pod_body(leader, 0, "h1", 1)["spec"]
    assert f"{lead['hostname']}.{lead['subdomain']}.ns.svc" == env[labels.ENV_LEADER_ADDRESS]


def test_hostnames_are_unique_across_the_gangs_of_a_shared_service() -> None:
    cqs = cliqueset(replicas=12, roles=(("w", 11), ("w-1", 1)))
    plan = cliqueset_planner.plan(snap(cqs, [], hashes={"w": "h1", "w-1": "h1"}))
    hosts = []
    for body in created(plan, "Clique").values():
        member = msgspec.convert(body, Clique)
        hosts += [
            pod_bodies.pod_body(member, i, "h1", 1)["spec"]["hostname"]
            for i in range(member.spec.replicas)
        ]
    assert len(hosts) == 12 * 12 == len(set(hosts))


def test_unique_per_gang_on_request() -> None:
    plan = cliqueset_planner.plan(snap(cliqueset(replicas=2, subdomain_policy="UniquePerGang"), []))
    assert sorted(created(plan, "Service")) == ["llama-0", "llama-1"]
    body = created(plan, "Clique")["llama-1-worker"]
    ann = body["metadata"]["annotations"]
    assert ann[labels.ANNOTATION_SUBDOMAIN] == "llama-1"
    assert ann[labels.ANNOTATION_LEADER_ADDRESS] == "leader-0.llama-1.ns.svc"
    pod_spec = pod_bodies.pod_body(msgspec.convert(body, Clique), 1, "h1", 1)["spec"]
    assert (pod_spec["hostname"], pod_spec["subdomain"]) == ("worker-1", "llama-1")


def test_a_shared_set_at_rest_is_a_no_op() -> None:
    cqs = cliqueset(replicas=2)
    first = cliqueset_planner.plan(snap(cqs, shared_gangs(2), services=services(1, ["llama"])))
    assert first.writes == 0
    cqs.status = first.status
    second = cliqueset_planner.plan(snap(cqs, shared_gangs(2), services=services(1, ["llama"])))
    assert second.writes == 0 and second.status is None


# -- a CliqueSet made before `subdomainPolicy` existed ------------------------------------

#: A CliqueSet as an older release's CRD stored it: no subdomainPolicy, headlessService on.
OLD_STORED = b"""{
  "apiVersion": "cliques.dev/v1alpha1", "kind": "CliqueSet",
  "metadata": {"name": "llama", "namespace": "ns", "uid": "cqs-uid", "generation": 1},
  "spec": {"replicas": 2, "startupType": "AnyOrder", "headlessService": true,
           "updateStrategy": {"type": "RollingUpdate", "maxUnavailable": 1},
           "template": {"cliques": [
             {"name": "leader", "replicas": 1, "template": {"metadata": {"labels": {"app": "x"}},
               "spec": {"containers": [{"name": "m", "image": "vllm:1"}]}}},
             {"name": "worker", "replicas": 2, "template": {"metadata": {"labels": {"app": "x"}},
               "spec": {"containers": [{"name": "m", "image": "vllm:1"}]}}}]}}
}"""


def old_set(replicas: int = 2) -> CliqueSet:
    cqs = msgspec.json.decode(OLD_STORED, type=CliqueSet)
    cqs.spec.replicas = replicas
    return cqs


def test_an_old_set_is_not_touched_on_upgrade() -> None:
    # Its Cliques (gangs()) record per-gang subdomains and no policy, as older releases wrote.
    cqs = old_set()
    assert cqs.spec.subdomain_policy is None
    assert subdomains.policy(cqs, gangs(2)) == "UniquePerGang"
    plan = cliqueset_planner.plan(snap(cqs, gangs(2), services=services(2)))
    assert plan.creates == [] and plan.deletes == [] and plan.patches == []


def test_an_old_set_scaled_up_after_the_upgrade_stays_per_gang() -> None:
    plan = cliqueset_planner.plan(snap(old_set(3), gangs(2), services=services(2)))
    assert list(created(plan, "Service")) == ["llama-2"]
    ann = created(plan, "Clique")["llama-2-leader"]["metadata"]["annotations"]
    assert ann[labels.ANNOTATION_SUBDOMAIN] == "llama-2"
    assert plan.deletes == [] and plan.patches == []


def test_old_pods_are_not_recreated_by_the_new_operator() -> None:
    # The Clique of an older release: its pods were built with hostname <clique>-<index>
    # and the gang's subdomain, and the Clique controller builds the same ones again.
    member = gangs(1)[1]
    body = pod_bodies.pod_body(member, 1, "h1", 1)
    assert (body["spec"]["hostname"], body["spec"]["subdomain"]) == ("worker-1", "llama-0")
    pods = [pod(member, i) for i in range(2)]
    plan = clique_planner.plan(
        clique_planner.CliqueSnapshot(clique=member, pods=pods, template_hash="h1")
    )
    assert plan.creates == [] and plan.deletes == []


def test_switching_an_old_set_to_shared_moves_only_new_gangs() -> None:
    cqs = old_set(3)
    cqs.spec.subdomain_policy = "Shared"
    plan = cliqueset_planner.plan(snap(cqs, gangs(2), services=services(2)))
    # The running gangs keep their Services and are not patched; gang 2 is shared.
    assert plan.deletes == [] and plan.patches == []
    assert list(created(plan, "Service")) == ["llama"]
    ann = created(plan, "Clique")["llama-2-worker"]["metadata"]["annotations"]
    assert ann[labels.ANNOTATION_LEADER_ADDRESS] == "leader-2-0.llama.ns.svc"


def test_a_per_gang_service_is_deleted_once_no_gang_uses_it() -> None:
    cqs = cliqueset(replicas=2, subdomain_policy="Shared")
    # Gang 0 was re-created in the shared layout; gang 1 still uses llama-1.
    cliques = shared_gangs(1) + gangs(2)[2:]
    have = services(3, ["llama", "llama-0", "llama-1"])
    plan = cliqueset_planner.plan(snap(cqs, cliques, services=have))
    assert [(d.name, d.reason) for d in plan.deletes] == [("llama-0", "Unused")]
    assert plan.creates == []


def test_a_clique_added_to_a_gang_joins_the_gang_layout() -> None:
    # Shared is asked for, but gang 0 was made per gang: its new clique must point at the
    # same leader pod as its siblings.
    cqs = cliqueset(
        replicas=1, roles=(("leader", 1), ("worker", 2), ("cache", 1)), subdomain_policy="Shared"
    )
    plan = cliqueset_planner.plan(
        snap(
            cqs,
            gangs(1),
            services=services(1),
            hashes={"leader": "h1", "worker": "h1", "cache": "h1"},
        )
    )
    ann = created(plan, "Clique")["llama-0-cache"]["metadata"]["annotations"]
    assert ann[labels.ANNOTATION_SUBDOMAIN] == "llama-0"
    assert ann[labels.ANNOTATION_LEADER_ADDRESS] == "leader-0.llama-0.ns.svc"
    assert "Service" not in {c.resource.kind for c in plan.creates}


def test_without_headless_service_there_is_no_service_and_no_subdomain() -> None:
    cqs = cliqueset(replicas=1, headless_service=False)
    plan = cliqueset_planner.plan(snap(cqs, [], services=services(1, ["llama"])))
    assert created(plan, "Service") == {}
    assert [d.name for d in plan.deletes] == ["llama"]
    body = created(plan, "Clique")["llama-0-worker"]
    assert labels.ANNOTATION_SUBDOMAIN not in body["metadata"]["annotations"]
    pod_spec = pod_bodies.pod_body(msgspec.convert(body, Clique), 0, "h1", 1)["spec"]
    assert pod_spec["hostname"] == "worker-0" and "subdomain" not in pod_spec


def test_a_clique_annotation_cannot_make_the_operator_create_another_service() -> None:
    bogus = {labels.ANNOTATION_SUBDOMAIN: "kube-dns"}
    cliques = [clique(0, "leader", annotations=bogus), clique(0, "worker", annotations=bogus)]
    plan = cliqueset_planner.plan(snap(cliqueset(replicas=1), cliques))
    assert created(plan, "Service") == {}


def test_the_longest_names_the_crd_admits_are_valid_hostnames() -> None:
    cqs = "a" * labels.MAX_CLIQUESET_NAME_LENGTH
    role = "b" * labels.MAX_CLIQUE_NAME_LENGTH
    top = 2**31 - 1
    assert len(labels.shared_pod_hostname(role, top, top)) <= labels.MAX_LABEL_LENGTH
    assert labels.set_service_name(cqs) == cqs
    assert labels.shared_pod_address(role, 0, cqs, top, "ns").startswith(f"{role}-{top}-0.{cqs}.")
