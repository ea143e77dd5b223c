"""KWOK nodes of their own for the gang e2e tests: each offers `example.com/slot` (no other
node has it), so a test's pods can only land on the nodes it made; all removed afterwards.

`gang_nodes` is a pytest fixture: `add(count, slots=1, node_labels=None, resource=SLOT)`
-> node names, Ready when it returns. A test that counts on its nodes being full (pods kept
`Pending` as unschedulable) passes a `resource` of its own (`own_slot()`), so that pods of
a test running at the same time, in another session sharing the cluster, never take it.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from cliques_lab.devcluster import kwok
from tests.support.kubectl import Kubectl

SLOT = "example.com/slot"
RACK = "topology.kubernetes.io/rack"
READY_TIMEOUT = 30.0


def node_ready(node: dict[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions", [])
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
    taints = node.get("spec", {}).get("taints") or []
    return ready and not any(t["key"].startswith("node.kubernetes.io/") for t in taints)


@pytest.fixture
def gang_nodes(kubeconfig: str) -> Iterator[Callable[..., list[str]]]:
    k = Kubectl(kubeconfig)
    made: list[str] = []
    tag = secrets.token_hex(3)

    def add(
        count: int,
        slots: int = 1,
        node_labels: dict[str, str] | None = None,
        resource: str = SLOT,
    ) -> list[str]:
        names, items = [], []
        for _ in range(count):
            node = kwok.node_manifest(0)
            name = f"gang-{tag}-{len(made)}"
            node["metadata"]["name"] = name
            node["metadata"]["labels"]["kubernetes.io/hostname"] = name
            # Not one of the dev cluster's own nodes: `up` must never scale it away.
            del node["metadata"]["labels"][kwok.NODE_LABEL]
            node["metadata"]["labels"].update(node_labels or {})
            del node["spec"]
            capacity = {**node["status"]["capacity"], resource: str(slots)}
            node["status"] = {"capacity": capacity, "allocatable": capacity}
            items.append(node)
            names.append(name)
            made.append(name)
        body = json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
        k.ok("create", "-f", "-", stdin=body)
        deadline = time.monotonic() + READY_TIMEOUT
        while not all(node_ready(k.get("node", n)) for n in names):
            if time.monotonic() > deadline:
                pytest.fail(f"nodes {names} not Ready after {READY_TIMEOUT:.0f}s")
            time.sleep(0.2)
        return names

    yield add
    if made:
        k.run("delete", "node", "--wait=false", *made)


def own_slot() -> str:
    """An extended resource no other test's nodes offer: `example.com/slot-<random>`."""
    return f"{SLOT}-{secrets.token_hex(3)}"


def slot_cliqueset(
    name: str,
    replicas: int,
    roles: tuple[tuple[str, int], ...],
    *,
    resource: str = SLOT,
    **spec: Any,
) -> dict[str, Any]:
    """A CliqueSet whose every pod needs one slot (so only `gang_nodes` nodes take them)."""

    def tmpl(role: str) -> dict[str, Any]:
        return {
            "metadata": {"labels": {"app": name, "role": role}},
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox:1.36",
                        "resources": {"requests": {resource: "1"}, "limits": {resource: "1"}},
                    }
                ],
                "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}],
            },
        }

    return {
        "apiVersion": "cliques.dev/v1alpha1",
        "kind": "CliqueSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            **spec,
            "template": {
                "cliques": [
                    {"name": role, "replicas": n, "template": tmpl(role)} for role, n in roles
                ]
            },
        },
    }
