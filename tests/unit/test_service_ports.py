"""The ports of a CliqueSet's headless Services: the pod templates' container ports, once
each, targeting their own numbers; kept in line on Services that differ (made by an older
release without ports, or templates changed since)."""

from __future__ import annotations

from typing import Any

import msgspec

from cliques.api import labels
from cliques.api.cliqueset import CliqueSet
from cliques.api.service import Service, ServicePort, ServiceSpec
from cliques.controllers.base import builders
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.kube.resources import SERVICES

from .planner_fixtures import cliqueset, gangs, services
from .planner_fixtures import set_snapshot as snap


def with_ports(cqs: CliqueSet, *per_role: list[list[dict[str, Any]]]) -> CliqueSet:
    """`cqs` with the containers of role i declaring the ports `per_role[i]` (one list per
    container)."""
    raw = msgspec.to_builtins(cqs)
    for role, containers in zip(raw["spec"]["template"]["cliques"], per_role, strict=True):
        spec = role["template"]["spec"]
        base = spec["containers"][0]
        spec["containers"] = [
            {**base, "name": f"c{i}", "ports": ports} for i, ports in enumerate(containers)
        ]
    return msgspec.convert(raw, CliqueSet)


#: two gangs made under the shared layout: the Service `llama` is theirs
SHARED = gangs(
    2,
    annotations={
        labels.ANNOTATION_SUBDOMAIN: "llama",
        labels.ANNOTATION_SUBDOMAIN_POLICY: "Shared",
    },
)
HTTP = {"name": "http", "containerPort": 8000}
METRICS = {"name": "metrics", "containerPort": 9000}


def test_every_declared_port_once_in_template_order_targeting_its_own_number() -> None:
    cqs = with_ports(cliqueset(), [[HTTP, METRICS]], [[HTTP], [METRICS, {"containerPort": 7000}]])
    assert builders.service_ports(cqs) == [
        {"name": "http", "port": 8000, "protocol": "TCP", "targetPort": 8000},
        {"name": "metrics", "port": 9000, "protocol": "TCP", "targetPort": 9000},
        {"name": "tcp-7000", "port": 7000, "protocol": "TCP", "targetPort": 7000},
    ]


def test_the_same_number_in_two_protocols_is_two_ports_and_names_stay_unique() -> None:
    dns = [
        {"name": "dns", "containerPort": 53, "protocol": "UDP"},
        {"name": "dns", "containerPort": 53},  # the same name again: named after the number
        {"name": "dns", "containerPort": 5353},
    ]
    cqs = with_ports(cliqueset(), [dns], [[]])
    assert builders.service_ports(cqs) == [
        {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
        {"name": "tcp-53", "port": 53, "protocol": "TCP", "targetPort": 53},
        {"name": "tcp-5353", "port": 5353, "protocol": "TCP", "targetPort": 5353},
    ]


def test_ports_the_api_server_would_refuse_are_left_out() -> None:
    bad: list[dict[str, Any]] = [
        {"name": "zero", "containerPort": 0},
        {"name": "big", "containerPort": 70000},
        {"name": "text", "containerPort": "8080"},
        {"name": "flag", "containerPort": True},
        {"name": "icmp", "containerPort": 1, "protocol": "ICMP"},
        {"name": "Upper_Case", "containerPort": 8443},  # not a port name: named after it
        {"name": "tcp-9000", "containerPort": 9001},
        {"containerPort": 9000},  # would be tcp-9000, which a container port took
    ]
    cqs = with_ports(cliqueset(), [bad], [[]])
    assert builders.service_ports(cqs) == [
        {"name": "tcp-8443", "port": 8443, "protocol": "TCP", "targetPort": 8443},
        {"name": "tcp-9000", "port": 9001, "protocol": "TCP", "targetPort": 9001},
    ]


def test_templates_without_ports_give_a_service_without_ports() -> None:
    assert builders.service_ports(cliqueset()) == []
    body = builders.service_body(cliqueset(), None, "b0")
    assert "ports" not in body["spec"]


def test_a_new_set_creates_its_service_with_the_templates_ports() -> None:
    cqs = with_ports(cliqueset(), [[HTTP]], [[HTTP, METRICS]])
    plan = cliqueset_planner.plan(snap(cqs, []))
    (svc,) = [c.body for c in plan.creates if c.resource == SERVICES]
    assert [p["name"] for p in svc["spec"]["ports"]] == ["http", "metrics"]
    assert not plan.patches


def _stored(ports: list[dict[str, Any]], name: str = "llama") -> Service:
    """The shared Service as the API server returns it, with `ports`."""
    (svc,) = services(0, [name])
    return msgspec.structs.replace(
        svc, spec=ServiceSpec(ports=[msgspec.convert(p, ServicePort) for p in ports])
    )


def test_a_service_without_the_templates_ports_is_patched_to_them() -> None:
    cqs = with_ports(cliqueset(), [[HTTP]], [[HTTP]])
    plan = cliqueset_planner.plan(snap(cqs, SHARED, services=[_stored([])]))
    (patch,) = plan.patches
    assert patch.resource == SERVICES and patch.name == "llama"
    assert patch.patch == {"spec": {"ports": builders.service_ports(cqs)}}
    assert patch.reason == "ServicePorts"


def test_a_service_with_the_templates_ports_is_left_alone() -> None:
    cqs = with_ports(cliqueset(), [[HTTP, METRICS]], [[HTTP]])
    stored = _stored(builders.service_ports(cqs))
    plan = cliqueset_planner.plan(snap(cqs, SHARED, services=[stored]))
    assert not plan.patches
    plan = cliqueset_planner.plan(snap(cliqueset(), SHARED, services=[_stored([])]))
    assert not plan.patches


def test_ports_the_templates_no_longer_declare_are_removed() -> None:
    stored = _stored([{"name": "http", "port": 8000, "protocol": "TCP", "targetPort": 8000}])
    plan = cliqueset_planner.plan(snap(cliqueset(), SHARED, services=[stored]))
    (patch,) = plan.patches
    assert patch.patch == {"spec": {"ports": None}}


def test_a_service_being_deleted_or_no_longer_wanted_is_not_patched() -> None:
    cqs = with_ports(cliqueset(), [[HTTP]], [[HTTP]])
    unwanted = _stored([], name="llama-7")
    plan = cliqueset_planner.plan(
        snap(cqs, SHARED, services=[_stored(builders.service_ports(cqs)), unwanted])
    )
    assert not plan.patches
    assert [d.name for d in plan.deletes] == ["llama-7"]
