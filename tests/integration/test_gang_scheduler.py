"""Gang scheduling and placement on the real kube-scheduler, without the operator.

The dev cluster runs with the gang-scheduling gates of its Kubernetes version
(cliques_lab.devcluster.kwok). Each test adds its own KWOK nodes offering a resource no other
node has (`example.com/slot`), so its pods can only land there, and removes them
afterwards. The bodies come from the pure builders the operator uses, for the gang API the
cluster serves: `controllers.workload` (the Workload; on 1.35 each pod's workloadRef) and
`controllers.podgroups` (from 1.36 a PodGroup per gang, which pods name), and
`controllers.placement` (affinity). Waits poll the API with a deadline; the only fixed
waits are the windows in which nothing may bind.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
import pytest

from cliques import api
from cliques.api import labels
from cliques.controllers.features import gang_apis
from cliques.controllers.features import placement as pl
from cliques.controllers.features import podgroups as pg
from cliques.controllers.features import workload as wl
from cliques.kube import gangapi
from tests.support.gangnodes import RACK, SLOT, gang_nodes
from tests.support.kubectl import Kubectl

__all__ = ["gang_nodes"]  # the fixture, used through `nodes`

pytestmark = pytest.mark.cluster

BIND_TIMEOUT = 30.0
#: How long "nothing binds" is watched: several scheduling attempts and backoffs.
QUIET_WINDOW = 8.0


@pytest.fixture
def k(kubeconfig: str, namespace: str) -> Kubectl:
    return Kubectl(kubeconfig, namespace)


@pytest.fixture
def nodes(gang_nodes: Callable[..., list[str]]) -> Callable[..., list[str]]:
    """add(count, slots=1, node_labels=None) -> names of new Ready KWOK nodes (removed after)."""
    return gang_nodes


def wait_for(check: Callable[[], bool], what: str, timeout: float = BIND_TIMEOUT) -> float:
    """Poll `check` until true; the seconds it took. Fails the test after `timeout`."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.2)
    return time.monotonic() - started


@pytest.fixture(scope="module")
def gang_api(kubeconfig: str) -> gangapi.GangAPI:
    """The gang API the cluster serves (the operator's own discovery)."""
    import asyncio

    found = asyncio.run(gangapi.detect(KubectlDiscovery(Kubectl(kubeconfig))))
    assert found.served, found.describe()
    return found


@dataclass
class Gangs:
    """The Workload of a one-clique set standing in for a CliqueSet, and a way to make pods
    that belong to one of its gangs on whichever gang API the cluster serves."""

    api: gangapi.GangAPI
    workload: str
    cqs: api.CliqueSet
    owner: dict[str, Any]

    def ref(self, gang: int) -> dict[str, Any]:
        if self.api.podgroups:
            name = pg.wanted_name(self.cqs, gang, gang_apis.pick(self.api))
            return {"schedulingGroup": {"podGroupName": name}}
        return {"workloadRef": wl.workload_ref(self.workload, gang)}


def pod(
    name: str,
    gang: int,
    *,
    workload: Gangs | None = None,
    cliqueset: str = "g",
    affinity: dict[str, Any] | None = None,
    extra_labels: dict[str, str] | None = None,
    slots: int = 1,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": "busybox:1.36",
                "resources": {"requests": {SLOT: str(slots)}, "limits": {SLOT: str(slots)}},
            }
        ],
        "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}],
    }
    if workload is not None:
        spec.update(workload.ref(gang))
    if affinity is not None:
        spec["affinity"] = affinity
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {**pl.gang_labels(cliqueset, gang), **(extra_labels or {})},
        },
        "spec": spec,
    }


def create(k: Kubectl, *bodies: dict[str, Any]) -> None:
    k.ok(
        "create",
        "-f",
        "-",
        stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(bodies)}),
    )


def bound(k: Kubectl, selector: str = "") -> dict[str, str]:
    """pod name -> node name, of the pods (matching `selector`) that have one."""
    args = ["get", "pods"] + (["-l", selector] if selector else [])
    return {
        p["metadata"]["name"]: p["spec"]["nodeName"]
        for p in k.json(*args)["items"]
        if p["spec"].get("nodeName")
    }


def gang_cliqueset(name: str, pods: int, namespace: str, uid: str) -> api.CliqueSet:
    return msgspec.convert(
        {
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "spec": {
                "template": {
                    "cliques": [
                        {"name": "w", "replicas": pods, "template": {"spec": {"containers": []}}}
                    ]
                }
            },
        },
        api.CliqueSet,
    )


def _owned_by(body: dict[str, Any], owner: dict[str, Any]) -> dict[str, Any]:
    ref = body["metadata"]["ownerReferences"][0]
    ref.update(apiVersion="v1", kind="ConfigMap", name="owner", uid=owner["metadata"]["uid"])
    return body


def create_workload(
    k: Kubectl, namespace: str, pods: int, api: gangapi.GangAPI, gangs: int = 1
) -> Gangs:
    """The Workload built by controllers.workload for a one-clique set of `pods` pods, and
    from 1.36 on the PodGroups of its first `gangs` gangs (controllers.podgroups), owned by
    a ConfigMap standing in for the CliqueSet (the CRD is not needed here)."""
    owner = k.json("create", "configmap", "owner")
    cqs = gang_cliqueset("g", pods, namespace, owner["metadata"]["uid"])
    body = _owned_by(wl.build_workload(cqs, gang_apis.pick(api)), owner)
    k.ok("create", "-f", "-", stdin=json.dumps(body))
    name = str(body["metadata"]["name"])
    if api.podgroups:
        for gang in range(gangs):
            group = _owned_by(pg.body(cqs, gang, gang_apis.pick(api), name, "0"), owner)
            k.ok("create", "-f", "-", stdin=json.dumps(group))
    return Gangs(api, name, cqs, owner)


# ---- What the cluster serves ---------------------------------------------------------------


class KubectlDiscovery:
    def __init__(self, k: Kubectl) -> None:
        self.k = k

    async def get_path(self, path: str) -> bytes:
        return self.k.ok("get", "--raw", path).encode()


def test_discovery_finds_the_gang_api(gang_api: gangapi.GangAPI) -> None:
    assert gang_api.version in gang_api.versions
    # the newest the cluster serves
    newer = list(gangapi.PREFERENCE)[: list(gangapi.PREFERENCE).index(gang_api.version)]
    assert not set(newer) & set(gang_api.versions), gang_api.versions
    decision = wl.decide("Auto", gang_apis.pick(gang_api))
    assert decision.backend == "Workload" and gang_api.version in decision.message


# ---- All or nothing --------------------------------------------------------------------------


def test_a_gang_binds_all_or_nothing(
    k: Kubectl, namespace: str, nodes: Callable[..., list[str]], gang_api: gangapi.GangAPI
) -> None:
    nodes(3)
    name = create_workload(k, namespace, 4, gang_api)
    create(k, *(pod(f"p{i}", 0, workload=name) for i in range(4)))
    time.sleep(QUIET_WINDOW)  # room for 3 of 4: nothing may bind
    assert bound(k) == {}
    nodes(1)
    took = wait_for(lambda: len(bound(k)) == 4, "all 4 gang pods bound")
    assert took < 15, f"the gang bound {took:.1f}s after the 4th node"
    assert len(set(bound(k).values())) == 4


def test_without_workload_ref_pods_bind_one_by_one(
    k: Kubectl, nodes: Callable[..., list[str]]
) -> None:
    nodes(3)
    create(k, *(pod(f"p{i}", 0) for i in range(4)))
    wait_for(lambda: len(bound(k)) == 3, "3 pods bound")
    time.sleep(2)
    assert len(bound(k)) == 3
    pending = [p for p in k.json("get", "pods")["items"] if not p["spec"].get("nodeName")]
    assert len(pending) == 1
    scheduled = {c["type"]: c for c in pending[0]["status"].get("conditions", [])}
    assert scheduled["PodScheduled"]["reason"] == "Unschedulable"


def test_two_gangs_competing_for_room_for_one(
    k: Kubectl, namespace: str, nodes: Callable[..., list[str]], gang_api: gangapi.GangAPI
) -> None:
    nodes(4)
    name = create_workload(k, namespace, 4, gang_api, gangs=2)
    create(k, *(pod(f"a{i}", 0, workload=name) for i in range(4)))
    create(k, *(pod(f"b{i}", 1, workload=name) for i in range(4)))

    def one_gang_whole() -> bool:
        names = bound(k)
        return any(sum(n.startswith(g) for n in names) == 4 for g in "ab")

    wait_for(one_gang_whole, "one gang bound whole")
    time.sleep(QUIET_WINDOW)
    names = bound(k)
    counts = sorted(sum(n.startswith(g) for n in names) for g in "ab")
    assert counts == [0, 4], names


# ---- Placement -------------------------------------------------------------------------------


def placement(pack: str | None = None, exclusive: str | None = None) -> api.Placement:
    return api.Placement(
        pack=api.PackPolicy(topology_key=pack) if pack else None,
        exclusive=api.ExclusivePolicy(topology_key=exclusive) if exclusive else None,
    )


def racks(k: Kubectl) -> dict[str, str]:
    nodes = k.json("get", "nodes", "-l", RACK)["items"]
    return {n["metadata"]["name"]: n["metadata"]["labels"][RACK] for n in nodes}


def test_pack_required_puts_a_gang_in_one_rack(k: Kubectl, nodes: Callable[..., list[str]]) -> None:
    for rack in ("r1", "r2", "r3"):
        nodes(2, slots=2, node_labels={RACK: rack})
    affinity = pl.merge_affinity(None, placement(pack=RACK), "g", 0)
    # The first pod of the gang has no gang pod to join: the scheduler lets it through
    # because the pack term matches its own labels (placement module docstring).
    create(k, *(pod(f"p{i}", 0, affinity=affinity) for i in range(4)))
    wait_for(lambda: len(bound(k)) == 4, "4 packed pods bound")
    rack_of = racks(k)
    assert len({rack_of[n] for n in bound(k).values()}) == 1, bound(k)


def test_exclusive_keeps_gangs_apart(k: Kubectl, nodes: Callable[..., list[str]]) -> None:
    for rack in ("r1", "r2"):
        nodes(2, slots=2, node_labels={RACK: rack})
    wanted = placement(pack=RACK, exclusive=RACK)
    for gang in (0, 1):
        affinity = pl.merge_affinity(None, wanted, "g", gang)
        create(k, *(pod(f"g{gang}-{i}", gang, affinity=affinity) for i in range(2)))
    wait_for(lambda: len(bound(k)) == 4, "both gangs bound")
    rack_of = racks(k)
    where = {g: {rack_of[n] for p, n in bound(k).items() if p.startswith(f"g{g}-")} for g in (0, 1)}
    assert len(where[0]) == len(where[1]) == 1 and where[0] != where[1], where
    # A third gang has no rack of its own left: it waits.
    affinity = pl.merge_affinity(None, wanted, "g", 2)
    create(k, pod("g2-0", 2, affinity=affinity))
    time.sleep(QUIET_WINDOW / 2)
    assert "g2-0" not in bound(k)


def test_a_user_term_outside_the_gang_makes_pack_unschedulable(
    k: Kubectl, nodes: Callable[..., list[str]]
) -> None:
    """The subtlety `placement.unplaceable` reports: required terms are ANDed, so a user term
    selecting pods outside the gang plus the pack term match no pod, ever."""
    nodes(2, slots=4, node_labels={RACK: "r1"})
    create(k, pod("cache", 9, cliqueset="other", extra_labels={"app": "cache"}))
    wait_for(lambda: "cache" in bound(k), "the cache pod bound")
    user = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": RACK}
            ]
        }
    }
    alone = pod("user-only", 0, cliqueset="solo", affinity=user)
    template = {"spec": {"affinity": user}}
    packed_template = pl.apply_to_template(template, placement(pack=RACK), "g", 0)
    packed = pod("packed", 0, affinity=packed_template["spec"]["affinity"])
    assert pl.unplaceable([("w", packed_template, packed["metadata"]["labels"])]) == ["w"]
    create(k, alone, packed)
    wait_for(lambda: "user-only" in bound(k), "the pod with only the user's term bound")
    time.sleep(QUIET_WINDOW / 2)
    assert "packed" not in bound(k)
    assert labels.LABEL_GANG_INDEX in packed["metadata"]["labels"]
