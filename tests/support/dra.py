"""A fake DRA driver (resource.k8s.io/v1) for the e2e tests: DeviceClasses and
ResourceSlices of a driver name no other test uses, so the scheduler allocates devices
on KWOK nodes without a kubelet plugin; all removed afterwards.

- `fake_dra` is a pytest fixture: `install(nodes, gpus_per_node=2, domains=2)` -> a
  `FakeDriver`. Each node of `nodes` gets a slice of `gpus_per_node` node-local devices
  (class `driver.gpu_class`); one `allNodes: true` slice offers `domains` devices usable
  from any node (class `driver.domain_class`). `fake_driver(kubectl, ...)` is the same as
  a context manager.
- `FakeDriver.claim` / `FakeDriver.template` build ResourceClaim / ResourceClaimTemplate
  bodies asking for devices of one of its classes.
- `pod_claims` / `group_claims` read which ResourceClaim each claim entry of a pod /
  PodGroup resolved to; `claim_state` reads a claim's allocation and `reservedFor`;
  `wait_claim` polls a claim until a predicate holds.

What the control plane (v1.37.2, no kubelet, KWOK nodes) does with these devices:

- A claim's devices are allocated by the scheduler; a pod on a KWOK node is Running once
  bound. A node-local device pins the claim (`status.allocation.nodeSelector`, field
  `metadata.name` In [node]), so every pod sharing it lands on that node; an `allNodes`
  device leaves no nodeSelector and is shared by pods on any node.
- `reservedFor` lists the pods using a claim, or the PodGroup (`resource: podgroups`,
  `apiGroup: scheduling.k8s.io`) when the claim is one of the group's `spec.resourceClaims`
  and the pod's entry matches it exactly (same `name` and the same template / claim name).
  A pod entry with the group's name but another template gets a claim of its own.
- A claim made from a template for a pod is owned by the pod and deleted by
  kube-controller-manager when the pod is deleted or done; one made for a PodGroup is owned
  by the group (made as soon as the group is, before any pod), stays allocated while the
  group exists even with no pods left, and is deleted with it.
- An unsatisfiable claim leaves the pod `PodScheduled=False`, reason `Unschedulable`:
  "0/3 nodes are available: 3 cannot allocate all claims. ..." or, for a missing class,
  "0/3 nodes are available: request <request>: device class <class> does not exist. ...";
  the claim's status stays empty (no condition).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

import pytest

from tests.support.kubectl import Kubectl

API: Final = "resource.k8s.io/v1"
#: The label on every object of a fake driver: its tag.
LABEL: Final = "dra.test.cliques.dev/driver"
#: The device attribute that tells the two kinds of device apart (a string).
KIND_ATTRIBUTE: Final = "kind"
GPU: Final = "gpu"
DOMAIN: Final = "domain"
#: The pool of the `allNodes` devices (a node-local pool is named after its node).
DOMAIN_POOL: Final = "domains"
WAIT_TIMEOUT: Final = 30.0


def _device_class(name: str, driver: str, kind: str, tag: str) -> dict[str, Any]:
    cel = (
        f'device.driver == "{driver}" && device.attributes["{driver}"].{KIND_ATTRIBUTE} == "{kind}"'
    )
    return {
        "apiVersion": API,
        "kind": "DeviceClass",
        "metadata": {"name": name, "labels": {LABEL: tag}},
        "spec": {"selectors": [{"cel": {"expression": cel}}]},
    }


def _slice(
    name: str, driver: str, pool: str, kind: str, count: int, tag: str, node: str | None
) -> dict[str, Any]:
    where: dict[str, Any] = {"nodeName": node} if node else {"allNodes": True}
    devices = [
        {"name": f"{kind}-{i}", "attributes": {KIND_ATTRIBUTE: {"string": kind}}}
        for i in range(count)
    ]
    return {
        "apiVersion": API,
        "kind": "ResourceSlice",
        "metadata": {"name": name, "labels": {LABEL: tag}},
        "spec": {
            "driver": driver,
            **where,
            "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


@dataclass(frozen=True)
class FakeDriver:
    """An installed fake driver: its name, its two DeviceClasses and what its slices offer."""

    tag: str
    #: the driver name, `<tag>.dra.test.cliques.dev`
    driver: str
    #: the DeviceClass of the node-local devices (`gpu-<i>` in pool `<node>`)
    gpu_class: str
    #: the DeviceClass of the `allNodes` devices (`domain-<i>` in pool `domains`)
    domain_class: str
    nodes: tuple[str, ...]
    gpus_per_node: int
    domains: int

    def device_class(self, kind: str) -> str:
        """The class of `kind` (`GPU` or `DOMAIN`); any other name is taken as a class name
        (one that does not exist, say)."""
        return {GPU: self.gpu_class, DOMAIN: self.domain_class}.get(kind, kind)

    def claim_spec(self, kind: str = DOMAIN, count: int = 1, request: str = "") -> dict[str, Any]:
        """A ResourceClaim's `spec`: `count` devices of `kind` in one request (named after
        the kind unless `request` is given)."""
        exactly = {"deviceClassName": self.device_class(kind), "count": count}
        return {"devices": {"requests": [{"name": request or kind, "exactly": exactly}]}}

    def claim(self, name: str, kind: str = DOMAIN, count: int = 1) -> dict[str, Any]:
        """A ResourceClaim `name` (namespace left to the caller) asking for `claim_spec`."""
        return {
            "apiVersion": API,
            "kind": "ResourceClaim",
            "metadata": {"name": name},
            "spec": self.claim_spec(kind, count),
        }

    def template(self, name: str, kind: str = DOMAIN, count: int = 1) -> dict[str, Any]:
        """A ResourceClaimTemplate `name` whose claims ask for `claim_spec`."""
        return {
            "apiVersion": API,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": name},
            "spec": {"spec": self.claim_spec(kind, count)},
        }

    def objects(self) -> list[dict[str, Any]]:
        """The cluster-scoped objects that make the driver: classes first, then slices."""
        d, t = self.driver, self.tag
        items = [
            _device_class(self.gpu_class, d, GPU, t),
            _device_class(self.domain_class, d, DOMAIN, t),
        ]
        if self.domains:
            items.append(
                _slice(f"{t}-{DOMAIN_POOL}", d, DOMAIN_POOL, DOMAIN, self.domains, t, None)
            )
        if self.gpus_per_node:
            items += [
                _slice(f"{t}-{node}", d, node, GPU, self.gpus_per_node, t, node)
                for node in self.nodes
            ]
        return items


def new_driver(nodes: Iterable[str], gpus_per_node: int = 2, domains: int = 2) -> FakeDriver:
    """A `FakeDriver` with a fresh tag (not installed)."""
    tag = f"dra-{secrets.token_hex(3)}"
    return FakeDriver(
        tag=tag,
        driver=f"{tag}.dra.test.cliques.dev",
        gpu_class=f"{tag}-{GPU}",
        domain_class=f"{tag}-{DOMAIN}",
        nodes=tuple(nodes),
        gpus_per_node=gpus_per_node,
        domains=domains,
    )


def install(k: Kubectl, driver: FakeDriver) -> None:
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": driver.objects()})
    k.ok("create", "-f", "-", stdin=body)


def uninstall(k: Kubectl, driver: FakeDriver) -> None:
    """Delete the driver's slices and classes (claims that hold its devices keep them)."""
    selector = f"{LABEL}={driver.tag}"
    k.run("delete", "resourceslices,deviceclasses", "-l", selector, "--wait=false")


@contextmanager
def fake_driver(
    k: Kubectl, nodes: Iterable[str], gpus_per_node: int = 2, domains: int = 2
) -> Iterator[FakeDriver]:
    """A fake driver installed for the `with` block, removed after it."""
    driver = new_driver(nodes, gpus_per_node, domains)
    install(k, driver)
    try:
        yield driver
    finally:
        uninstall(k, driver)


@pytest.fixture
def fake_dra(kubeconfig: str) -> Iterator[Callable[..., FakeDriver]]:
    """`install(nodes, gpus_per_node=2, domains=2)` -> a `FakeDriver` (call it as often as
    needed: each gets its own driver name); all removed after the test."""
    k = Kubectl(kubeconfig)
    made: list[FakeDriver] = []

    def add(nodes: Iterable[str], gpus_per_node: int = 2, domains: int = 2) -> FakeDriver:
        driver = new_driver(nodes, gpus_per_node, domains)
        made.append(driver)
        install(k, driver)
        return driver

    yield add
    for driver in made:
        uninstall(k, driver)


# --- reading claims ---------------------------------------------------------------------


def _resolved(obj: dict[str, Any]) -> dict[str, str]:
    names: dict[str, str] = {}
    for entry in obj.get("spec", {}).get("resourceClaims") or []:
        if entry.get("resourceClaimName"):
            names[entry["name"]] = entry["resourceClaimName"]
    for entry in obj.get("status", {}).get("resourceClaimStatuses") or []:
        if entry.get("resourceClaimName"):
            names[entry["name"]] = entry["resourceClaimName"]
    return names


def pod_claims(pod: dict[str, Any]) -> dict[str, str]:
    """A pod's claim entries (`spec.resourceClaims[].name`) -> the ResourceClaim each uses:
    `resourceClaimName`, or for a template the claim in `status.resourceClaimStatuses`
    (the PodGroup's claim when the entry matches one of its group's). An entry whose claim
    is not made yet is missing."""
    return _resolved(pod)


def group_claims(group: dict[str, Any]) -> dict[str, str]:
    """The same for a PodGroup (`spec.resourceClaims`, `status.resourceClaimStatuses`)."""
    return _resolved(group)


@dataclass(frozen=True)
class Device:
    request: str
    driver: str
    pool: str
    device: str


@dataclass(frozen=True)
class Consumer:
    #: `pods` or `podgroups`
    resource: str
    name: str
    uid: str


@dataclass(frozen=True)
class ClaimState:
    """What a ResourceClaim's status says."""

    allocated: bool
    devices: tuple[Device, ...]
    #: the node an allocation is bound to (node-local devices); "" for none
    node: str
    reserved_for: tuple[Consumer, ...]
    deleting: bool

    def reserved_names(self, resource: str = "pods") -> list[str]:
        return [c.name for c in self.reserved_for if c.resource == resource]


def _node_of(allocation: dict[str, Any]) -> str:
    for term in (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("values"):
                return str(field["values"][0])
    return ""


def claim_state(claim: dict[str, Any]) -> ClaimState:
    status = claim.get("status") or {}
    allocation = status.get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or []
    return ClaimState(
        allocated=bool(allocation),
        devices=tuple(Device(r["request"], r["driver"], r["pool"], r["device"]) for r in results),
        node=_node_of(allocation),
        reserved_for=tuple(
            Consumer(r["resource"], r["name"], r.get("uid", ""))
            for r in status.get("reservedFor") or []
        ),
        deleting=bool(claim.get("metadata", {}).get("deletionTimestamp")),
    )


def wait_claim(
    k: Kubectl,
    name: str,
    until: Callable[[ClaimState], bool] = lambda s: s.allocated,
    timeout: float = WAIT_TIMEOUT,
) -> ClaimState:
    """Poll claim `name` (in `k`'s namespace) until `until` holds for its state (default:
    allocated); fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        done = k.run("get", "resourceclaim", name, "-o", "json")
        state = claim_state(json.loads(done.stdout)) if done.returncode == 0 else None
        if state is not None and until(state):
            return state
        if time.monotonic() > deadline:
            pytest.fail(f"claim {name}: {state} after {timeout:.0f}s")
        time.sleep(0.2)
