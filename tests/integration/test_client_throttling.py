"""The client against real API Priority and Fairness: a 429 with Retry-After is honoured.

The test cluster's admin user is in `system:masters`, which APF exempts, so the test makes
a ServiceAccount of its own, routes it with a FlowSchema to a tiny PriorityLevelConfiguration
(one nominal share, nothing lent or borrowed, excess requests rejected rather than queued)
and fires a burst of LISTs through `KubeClient` with that ServiceAccount's token. The real
kube-apiserver answers part of the burst with 429 and a `Retry-After`; the client must wait
that long and retry until every call succeeds. With retries turned off the same burst must
raise `TooManyRequests`, which proves the 429s were the server's.

APF needs a cluster that enforces it. The session's dev cluster is started with QPS limits
off, which kwokctl implements with `--enable-priority-and-fairness=false`; when the session
cluster does not enforce APF, this module starts a sibling dev cluster `<name>-apf` with
limits on and no nodes (about 15 s), and stops it at the end unless it was already running
or `CLIQUES_KEEP_CLUSTER=1`. Against an external cluster (`CLIQUES_KUBECONFIG`) without APF
the test is skipped: nothing there can answer 429.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import msgspec
import pytest
import yaml
from prometheus_client import REGISTRY

from cliques.kube import client as client_module
from cliques.kube import errors, kubeconfig
from cliques.kube.client import KubeClient
from cliques.kube.resources import NAMESPACES, Resource
from tests.support.harness import wait_for

pytestmark = pytest.mark.cluster


CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
FLOWCONTROL_GROUP = "flowcontrol.apiserver.k8s.io"
FLOWCONTROL_VERSION = "v1"
PRIORITY_LEVELS = Resource(
    FLOWCONTROL_GROUP,
    FLOWCONTROL_VERSION,
    "prioritylevelconfigurations",
    "PriorityLevelConfiguration",
    namespaced=False,
)
FLOW_SCHEMAS = Resource(
    FLOWCONTROL_GROUP, FLOWCONTROL_VERSION, "flowschemas", "FlowSchema", namespaced=False
)
FLOW_SCHEMA_HEADER = "X-Kubernetes-PF-FlowSchema-UID"

CONFIGMAP_COUNT = 20  # cheap LISTs: many succeed per wave of retries
LABEL = "cliques.dev/burst"
BURST = 100


# --- helpers ------------------------------------------------------------------------------


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def raw_get(kubeconfig_path: str, path: str) -> tuple[int, str | None, bytes]:
    """GET `path` as the kubeconfig's user: status, APF FlowSchema UID header, body."""
    cluster = await kubeconfig.load(kubeconfig_path)
    headers = {"Accept": "application/json"}
    auth = await cluster.auth.header()
    if auth is not None:
        headers["Authorization"] = auth
    connector = aiohttp.TCPConnector(ssl=cluster.ssl_context() or True)
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.get(cluster.host + path, headers=headers) as resp,
    ):
        body = await resp.read()
        return resp.status, resp.headers.get(FLOW_SCHEMA_HEADER), body


class _Meta(msgspec.Struct, rename="camel"):
    name: str = ""
    uid: str = ""


class _Object(msgspec.Struct):
    metadata: _Meta


class _TokenStatus(msgspec.Struct):
    token: str


class _TokenRequest(msgspec.Struct):
    status: _TokenStatus


class _List(msgspec.Struct):
    items: list[msgspec.Raw]


class _Discovery(msgspec.Struct):
    versions: list[dict[str, str]]


# --- the cluster --------------------------------------------------------------------------


@dataclass(frozen=True)
class ApfCluster:
    kubeconfig: str  # the admin's (exempt from APF)


def _apf_sibling_name(name: str) -> str:
    return f"{name[:36].rstrip('-')}-apf"


async def _enforces_apf(kubeconfig: str) -> bool:
    """APF classifies every request, exempt ones too, and says so in response headers."""
    status, flow_schema, _ = await raw_get(kubeconfig, "/api")
    return status == 200 and bool(flow_schema)


@pytest.fixture(scope="module")
async def apf_cluster(kube_cluster: Any) -> AsyncIterator[ApfCluster]:
    """A cluster whose API server enforces API Priority and Fairness (see the docstring)."""
    if await _enforces_apf(str(kube_cluster.kubeconfig)):
        yield ApfCluster(str(kube_cluster.kubeconfig))
        return
    if kube_cluster.name is None:
        pytest.skip("the external test cluster does not enforce API Priority and Fairness")

    from cliques_lab.devcluster import cluster as devcluster
    from cliques_lab.devcluster.errors import DevClusterError

    name = _apf_sibling_name(kube_cluster.name)
    try:
        result = await asyncio.to_thread(
            devcluster.up, name, 0, disable_qps_limits=False, timeout=180.0
        )
    except DevClusterError as exc:
        pytest.fail(f"the APF dev cluster {name!r} did not start:\n{exc}", pytrace=False)
    kubeconfig = str(result.info.kubeconfig)
    try:
        if not await _enforces_apf(kubeconfig):
            pytest.fail(
                f"dev cluster {name!r} does not enforce API Priority and Fairness "
                f"({'; '.join(result.notes) or 'no APF response headers'}); "
                f"`cliques dev-cluster down --name {name}` and run again",
                pytrace=False,
            )
        yield ApfCluster(kubeconfig)
    finally:
        if result.action != "reused" and os.environ.get("CLIQUES_KEEP_CLUSTER") != "1":
            await asyncio.to_thread(devcluster.down, name)


@pytest.fixture
async def admin(apf_cluster: ApfCluster) -> AsyncIterator[KubeClient]:
    client = await KubeClient.connect(apf_cluster.kubeconfig, qps=0, field_manager="cliques-tests")
    try:
        yield client
    finally:
        await client.close()


def write_token_kubeconfig(admin_kubeconfig: str, token: str, dest: Path) -> str:
    """A kubeconfig for `token` on the admin kubeconfig's server, trusting the same CA."""
    base = Path(admin_kubeconfig)
    doc = yaml.safe_load(base.read_text())
    context = next(c["context"] for c in doc["contexts"] if c["name"] == doc["current-context"])
    cluster = dict(next(c["cluster"] for c in doc["clusters"] if c["name"] == context["cluster"]))
    ca = cluster.get("certificate-authority")
    if ca and not Path(ca).is_absolute():
        cluster["certificate-authority"] = str(base.parent / ca)
    sa_config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "apf", "cluster": cluster}],
        "users": [{"name": "throttled", "user": {"token": token}}],
        "contexts": [{"name": "throttled", "context": {"cluster": "apf", "user": "throttled"}}],
        "current-context": "throttled",
    }
    dest.write_text(json.dumps(sa_config, indent=2))
    return str(dest)


# --- the throttled ServiceAccount ---------------------------------------------------------


@dataclass(frozen=True)
class Throttled:
    namespace: str
    kubeconfig: str  # the ServiceAccount's
    flow_schema_uid: str


async def _delete_quietly(admin: KubeClient, resource: Resource, name: str) -> None:
    with contextlib.suppress(errors.NotFound):
        await admin.delete(resource, None, name)


@pytest.fixture
async def throttled(
    admin: KubeClient, apf_cluster: ApfCluster, tmp_path: Path
) -> AsyncIterator[Throttled]:
    """A namespace with CONFIGMAP_COUNT ConfigMaps and a ServiceAccount that may read them,
    whose every request APF routes to a PriorityLevelConfiguration of one nominal seat."""
    status, _, body = await raw_get(apf_cluster.kubeconfig, f"/apis/{FLOWCONTROL_GROUP}")
    assert status == 200, body
    served = [v["version"] for v in msgspec.json.decode(body, type=_Discovery).versions]
    assert FLOWCONTROL_VERSION in served, f"{FLOWCONTROL_GROUP} versions served: {served}"

    suffix = secrets.token_hex(3)
    ns = f"t-client-throttling-{suffix}"
    apf_name = f"cliques-test-throttled-{suffix}"  # cluster-scoped: unique to this test
    sa = "throttled"
    await admin.create(
        NAMESPACES,
        None,
        {"metadata": {"name": ns, "labels": {"cliques.dev/test": "true"}}},
        _Object,
    )
    try:
        await admin.create(SERVICE_ACCOUNTS, ns, {"metadata": {"name": sa}}, _Object)
        await admin.create(
            ROLES,
            ns,
            {
                "metadata": {"name": "configmaps"},
                "rules": [
                    {
                        "apiGroups": [""],
                        "resources": ["configmaps"],
                        "verbs": ["get", "list", "create"],
                    }
                ],
            },
            _Object,
        )
        await admin.create(
            ROLE_BINDINGS,
            ns,
            {
                "metadata": {"name": "throttled-configmaps"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": "configmaps",
                },
                "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}],
            },
            _Object,
        )
        token = await admin.create(
            SERVICE_ACCOUNTS,
            ns,
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": 3600},
            },
            _TokenRequest,
            name=sa,
            sub="token",
        )
        sa_kubeconfig = write_token_kubeconfig(
            apf_cluster.kubeconfig, token.status.token, tmp_path / "throttled.kubeconfig"
        )
        await admin.create(
            PRIORITY_LEVELS,
            None,
            {
                "apiVersion": f"{FLOWCONTROL_GROUP}/{FLOWCONTROL_VERSION}",
                "kind": "PriorityLevelConfiguration",
                "metadata": {"name": apf_name},
                "spec": {
                    "type": "Limited",
                    "limited": {
                        "nominalConcurrencyShares": 1,
                        "lendablePercent": 0,
                        "borrowingLimitPercent": 0,
                        "limitResponse": {"type": "Reject"},
                    },
                },
            },
            _Object,
        )
        flow_schema = await admin.create(
            FLOW_SCHEMAS,
            None,
            {
                "apiVersion": f"{FLOWCONTROL_GROUP}/{FLOWCONTROL_VERSION}",
                "kind": "FlowSchema",
                "metadata": {"name": apf_name},
                "spec": {
                    "priorityLevelConfiguration": {"name": apf_name},
                    "matchingPrecedence": 500,  # before service-accounts (9000), catch-all
                    "distinguisherMethod": {"type": "ByUser"},
                    "rules": [
                        {
                            "subjects": [
                                {
                                    "kind": "ServiceAccount",
                                    "serviceAccount": {"name": sa, "namespace": ns},
                                }
                            ],
                            "resourceRules": [
                                {
                                    "verbs": ["*"],
                                    "apiGroups": ["*"],
                                    "resources": ["*"],
                                    "namespaces": ["*"],
                                }
                            ],
                        }
                    ],
                },
            },
            _Object,
        )
        await create_configmaps(admin, ns, CONFIGMAP_COUNT)

        # APF and RBAC pick new objects up asynchronously: wait until a request of the
        # ServiceAccount is allowed and classified by our FlowSchema.
        async def classified() -> bool:
            status, uid, _ = await raw_get(
                sa_kubeconfig, f"/api/v1/namespaces/{ns}/configmaps?limit=1"
            )
            return status == 200 and uid == flow_schema.metadata.uid

        await wait_for(
            classified, timeout=60, what="the ServiceAccount's requests to use our FlowSchema"
        )
        yield Throttled(ns, sa_kubeconfig, flow_schema.metadata.uid)
    finally:
        await _delete_quietly(admin, FLOW_SCHEMAS, apf_name)
        await _delete_quietly(admin, PRIORITY_LEVELS, apf_name)
        await _delete_quietly(admin, NAMESPACES, ns)


async def create_configmaps(admin: KubeClient, ns: str, count: int, parallel: int = 16) -> None:
    gate = asyncio.Semaphore(parallel)

    async def one(i: int) -> None:
        async with gate:
            await admin.create(
                CONFIGMAPS,
                ns,
                {
                    "metadata": {"name": f"cm-{i:04d}", "labels": {LABEL: "yes"}},
                    "data": {"index": str(i)},
                },
                _Object,
            )

    await asyncio.gather(*(one(i) for i in range(count)))


# --- the test -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Counts:
    """The client's request metrics for LISTs of ConfigMaps."""

    ok: float
    answered_429: float
    retried: float

    @classmethod
    def now(cls) -> Counts:
        return cls(
            metric("cliques_api_requests_total", verb="list", resource="configmaps", code="200"),
            metric("cliques_api_requests_total", verb="list", resource="configmaps", code="429"),
            metric("cliques_api_throttled_total", resource="configmaps"),
        )

    def __sub__(self, other: Counts) -> Counts:
        return Counts(
            self.ok - other.ok,
            self.answered_429 - other.answered_429,
            self.retried - other.retried,
        )


Wait = tuple[str | None, float]  # (the Retry-After header of a 429, the client's delay)


@dataclass(frozen=True)
class Call:
    items: int
    seconds: float
    waits: list[Wait]


async def burst(
    client: KubeClient, ns: str, waits: dict[Any, list[Wait]]
) -> tuple[list[Call | BaseException], Counts]:
    """BURST concurrent LISTs of the labelled ConfigMaps; their outcomes and metric deltas."""

    async def one() -> Call:
        started = time.monotonic()
        raw = await client.list_page(
            CONFIGMAPS, ns, label_selector=f"{LABEL}=yes", limit=CONFIGMAP_COUNT + 1
        )
        items = len(msgspec.json.decode(raw, type=_List).items)
        return Call(items, time.monotonic() - started, waits.get(asyncio.current_task(), []))

    before = Counts.now()
    results = await asyncio.gather(*(one() for _ in range(BURST)), return_exceptions=True)
    return list(results), Counts.now() - before


async def test_429_retry_after_from_the_real_api_server_is_honoured(
    throttled: Throttled, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="cliques.kube.client")
    ns = throttled.namespace
    # Record what the client makes of each 429, per call (a pass-through spy: the client's
    # behaviour is unchanged, the delays are its own).
    waits: dict[Any, list[Wait]] = {}
    real_retry_after = client_module._retry_after_seconds

    def spy(header: str | None, attempt: int) -> float:
        delay = real_retry_after(header, attempt)
        waits.setdefault(asyncio.current_task(), []).append((header, delay))
        return delay

    monkeypatch.setattr(client_module, "_retry_after_seconds", spy)

    client = await KubeClient.connect(throttled.kubeconfig, qps=0)
    try:
        # (a) + (b): a burst meets real 429s and every call still succeeds. A cold client
        # (TLS handshakes on fresh connections) may spread its first burst thin enough to
        # get through unthrottled: then burst again, a few times at most.
        rounds = 0
        while True:
            rounds += 1
            started = time.monotonic()
            results, delta = await burst(client, ns, waits)
            seconds = time.monotonic() - started
            failures = [r for r in results if isinstance(r, BaseException)]
            assert not failures, f"{len(failures)} of {BURST} calls failed: {failures[0]!r}"
            calls = [r for r in results if isinstance(r, Call)]
            assert {c.items for c in calls} == {CONFIGMAP_COUNT}
            assert delta.ok == BURST
            assert delta.retried == delta.answered_429  # every 429 retried, none given up on
            if delta.answered_429 > 0 or rounds == 3:
                break
        assert delta.answered_429 > 0, f"no 429 in {rounds} bursts of {BURST} concurrent LISTs"
        seen = [w for c in calls for w in c.waits]
        assert len(seen) == delta.answered_429
        for header, delay in seen:
            assert header is not None, "a 429 without Retry-After"
            # at least Retry-After, at most 20% jitter above it (and the cap)
            assert float(header) <= delay <= min(client_module.MAX_RETRY_AFTER, float(header) * 1.2)
        for c in calls:
            slept = sum(delay for _, delay in c.waits)
            assert c.seconds >= slept - 0.01, f"a call retried before Retry-After: {c}"
        # Logged when the throttling starts, not once per 429.
        said = [r for r in caplog.records if "throttles requests" in r.getMessage()]
        assert 1 <= len(said) < delta.answered_429 or delta.answered_429 == 1
        print(
            f"\nburst {rounds} of {BURST} LISTs: {delta.answered_429:.0f} answers 429, all "
            f"retried, done in {seconds:.1f}s; Retry-After seen: "
            f"{sorted({h for h, _ in seen if h}, key=int)}; most retries of one call: "
            f"{max(len(c.waits) for c in calls)} (of {client_module.MAX_429_RETRIES})"
        )

        # (c) the same burst from a client that does not retry: the 429s reach the caller.
        monkeypatch.setattr(client_module, "MAX_429_RETRIES", 0)
        rounds = 0
        while True:
            rounds += 1
            results, delta = await burst(client, ns, waits)
            too_many = [r for r in results if isinstance(r, errors.TooManyRequests)]
            others = [
                r
                for r in results
                if isinstance(r, BaseException) and not isinstance(r, errors.TooManyRequests)
            ]
            assert not others, f"unexpected failures: {others[:3]!r}"
            assert delta.answered_429 == len(too_many)
            assert delta.ok == BURST - len(too_many)
            assert delta.retried == 0
            if too_many or rounds == 3:
                break
        assert too_many, f"no TooManyRequests in {rounds} bursts of {BURST} without retries"
        assert {e.status for e in too_many} == {429}
        print(f"without retries: {len(too_many)} of {BURST} calls raised TooManyRequests")
    finally:
        await client.close()
