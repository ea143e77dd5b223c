"""The size bounds of a CliqueSet against a real kube-apiserver, each at its limit and one
past it, counted as the operator makes them (`cliques.api.sizes`): a clique of a scaling
group once per instance, a group's instances and a clique's pods at their autoscaling
maxReplicas where that is higher.

- Pods per gang, Cliques and pods per set: CEL rules of the CRD, so the API server
  refuses the set (through the scale subresource too), and the count in its message is
  the operator's own count of the same set.
- Bytes of pod templates: CEL cannot measure a template, so the API server stores the set
  and the operator refuses it: the object read back from the server is planned by the
  CliqueSet controller, an InvalidSpec with no write one byte a gang past 256 MiB.

The shapes are tests/support/set_shapes.py's (tests/unit/test_counted_bounds.py counts
and plans them too). Uses the `kubectl` fixture of test_crd_validation.py (it applies the
CRDs of this checkout).
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec
import pytest

from cliques.api import sizes
from cliques.api.cliqueset import CliqueSet
from cliques.api.cliqueset_status import REASON_INVALID_SPEC
from cliques.api.meta import find_condition
from cliques.controllers.base import bounds
from tests.integration.test_crd_validation import kubectl
from tests.support import set_shapes as shapes
from tests.support.kubectl import Kubectl
from tests.unit.test_bounds import controller

pytestmark = pytest.mark.cluster

__all__ = ["kubectl"]  # the fixture


def create(kubectl: Kubectl, namespace: str, body: dict[str, Any]) -> str:
    return kubectl.ok("create", "-n", namespace, "-f", "-", stdin=json.dumps(body))


def refused(kubectl: Kubectl, namespace: str, body: dict[str, Any]) -> str:
    error = kubectl.refused("create", "-n", namespace, "-f", "-", stdin=json.dumps(body))
    assert kubectl.ok("get", "cqs", "-n", namespace, "-o", "name") == "", "stored anyway"
    return error


def gang(body: dict[str, Any]) -> tuple[int, int]:
    """(Cliques, pods) of one gang of `body`, as the operator counts them."""
    t = msgspec.convert(body, CliqueSet).spec.template
    return sizes.gang_cliques(t.cliques, t.scaling_groups), sizes.gang_pods(
        t.cliques, t.scaling_groups
    )


def stored(kubectl: Kubectl, namespace: str, name: str) -> CliqueSet:
    """The CliqueSet `name` as the API server stored it (defaults filled in)."""
    return msgspec.convert(kubectl.json("get", "cqs", "-n", namespace, name), CliqueSet)


# ---- CEL: refused at admission -------------------------------------------------------------


def test_pods_per_gang_count_an_hpa_and_a_groups_instances(
    kubectl: Kubectl, namespace: str
) -> None:
    """1,000 pods an HPA may give a clique outside the groups + 50 pods x 80 instances at
    a group's maxReplicas (+ 1): 5,000 is admitted, 5,001 refused."""
    at, past = shapes.gang_pods(0), shapes.gang_pods(1)
    create(kubectl, namespace, at)
    assert gang(at)[1] == 5_000
    past["metadata"]["name"] = "past"
    error = kubectl.refused("create", "-n", namespace, "-f", "-", stdin=json.dumps(past))
    assert "spec.template.cliques" in error, error
    assert "a gang may have at most 5000 pods" in error, error
    found = re.search(r"times the instances of its scaling group \(.*?\) is (\d+)", error)
    assert found is not None, error
    assert int(found.group(1)) == gang(past)[1] == 5_001


def test_cliques_per_set_count_every_instance(kubectl: Kubectl, namespace: str) -> None:
    """100 gangs of 100 Cliques (a group at its maxReplicas of 99) are admitted; 137 gangs
    of 73 (10,001) are refused, naming the operator's count."""
    at, past = shapes.set_cliques(False), shapes.set_cliques(True)
    create(kubectl, namespace, at)
    past["metadata"]["name"] = "past"
    error = kubectl.refused("create", "-n", namespace, "-f", "-", stdin=json.dumps(past))
    assert "spec.replicas" in error, error
    assert "a CliqueSet may have at most 10000 Cliques" in error, error
    assert f"is 137 x {gang(past)[0]} = 10001" in error, error


def test_pods_per_set_count_every_instance_and_hpa(kubectl: Kubectl, namespace: str) -> None:
    """40 gangs of 2,500 pods are admitted; 42 gangs of 2,381 (100,002, the next count
    above 100,000 a set can have) are refused."""
    at, past = shapes.set_pods(False), shapes.set_pods(True)
    create(kubectl, namespace, at)
    assert 40 * gang(at)[1] == 100_000
    past["metadata"]["name"] = "past"
    error = kubectl.refused("create", "-n", namespace, "-f", "-", stdin=json.dumps(past))
    assert "a CliqueSet may have at most 100000 pods" in error, error
    assert f"is 42 x {gang(past)[1]} = 100002" in error, error


def test_the_million_clique_set_is_refused(kubectl: Kubectl, namespace: str) -> None:
    """625 gangs of 16 cliques of 10 pods in 8 groups of 100 instances: every count the
    CRD took before (10,000 Cliques, 100,000 pods, 160 pods a gang) at its limit, and
    1,000,000 Cliques and 10,000,000 pods made."""
    error = refused(kubectl, namespace, shapes.million())
    assert "at most 10000 Cliques" in error and "is 625 x 1600 = 1000000" in error, error
    assert "at most 100000 pods" in error and "is 625 x 16000 = 10000000" in error, error
    assert "a gang may have at most 5000 pods" in error and "is 16000" in error, error


def test_a_scale_past_the_counted_bounds_is_refused(kubectl: Kubectl, namespace: str) -> None:
    """`kubectl scale` of a set with scaling groups: the instances count on the scale
    subresource too."""
    body = shapes.set_cliques(False)  # 100 gangs of 100 Cliques
    create(kubectl, namespace, body)
    kubectl.ok("scale", "-n", namespace, "cqs/big", "--replicas=50")
    kubectl.ok("scale", "-n", namespace, "cqs/big", "--replicas=100")
    error = kubectl.refused("scale", "-n", namespace, "cqs/big", "--replicas=101")
    assert "at most 10000 Cliques" in error and "is 101 x 100 = 10100" in error, error
    assert stored(kubectl, namespace, "big").spec.replicas == 100


def test_raising_a_groups_max_replicas_past_a_bound_is_refused(
    kubectl: Kubectl, namespace: str
) -> None:
    """An update counts as a create does: the group's maxReplicas from 99 to 100 is 10,100
    Cliques."""
    create(kubectl, namespace, shapes.set_cliques(False))
    patch = [
        {
            "op": "replace",
            "path": "/spec/template/scalingGroups/0/autoscaling/maxReplicas",
            "value": 100,
        }
    ]
    error = kubectl.refused(
        "patch", "-n", namespace, "cqs/big", "--type=json", "-p", json.dumps(patch)
    )
    assert "at most 10000 Cliques" in error and "is 100 x 101 = 10100" in error, error


# ---- the operator: bytes of templates ------------------------------------------------------


def test_template_bytes_at_the_limit_plan_and_one_byte_past_is_an_invalid_spec(
    kubectl: Kubectl, namespace: str
) -> None:
    """2 gangs storing 256 MiB of pod templates through a group of 100 instances are
    planned; one byte more a gang is an InvalidSpec with no write. The API server stores
    both (about 1.35 MB each)."""
    at, past = shapes.template_bytes(False), shapes.template_bytes(True)
    at["metadata"]["name"] = "at"
    past["metadata"]["name"] = "past"
    create(kubectl, namespace, at)
    create(kubectl, namespace, past)
    ctl = controller()

    cqs = stored(kubectl, namespace, "at")
    assert bounds.template_bytes(cqs) == (2**27, bounds.MAX_TEMPLATE_BYTES)
    assert ctl.snapshot(cqs).invalid == ""
    assert ctl._plan(cqs).creates, "nothing planned at the limit"

    cqs = stored(kubectl, namespace, "past")
    assert bounds.template_bytes(cqs) == (2**27 + 1, bounds.MAX_TEMPLATE_BYTES + 2)
    plan = ctl._plan(cqs)
    assert plan.writes == 0
    assert plan.status is not None
    degraded = find_condition(plan.status.conditions, "Degraded")
    assert degraded is not None and degraded.reason == REASON_INVALID_SPEC
    assert degraded.message.startswith(
        "the Cliques of this CliqueSet would store 268,435,458 bytes of pod templates "
        "(2 gangs x 134,217,729 bytes per gang, a clique of a scaling group once per "
        "instance), more than the 268,435,456 bytes"
    ), degraded.message
