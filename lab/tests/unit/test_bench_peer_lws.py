"""The LWS peer's pure parts: the manager's configuration, the webhook configurations built
from its kustomize manifests (by URL, CA bundle, object selector), the certificate."""

from __future__ import annotations

import asyncio
import base64
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from cliques_lab.bench import peer_lws
from cliques_lab.bench.peer_lws import Ports

# The shape of LWS's config/webhook: manifests through a Service, a kustomize patch that
# replaces the pod webhook with one that has an object selector.
MANIFESTS = """
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: mutating-webhook-configuration}
webhooks:
- name: mset.example.io
  clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate-set}}
  rules: [{apiGroups: [example.io], apiVersions: [v1], operations: [CREATE], resources: [sets]}]
- name: mpod.example.io
  clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate--v1-pod}}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: validating-webhook-configuration}
webhooks:
- name: vset.example.io
  clientConfig: {service: {name: webhook-service, namespace: system, path: /validate-set}}
"""
PATCH = """
- op: replace
  path: /webhooks/1
  value:
    name: mpod.example.io
    clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate--v1-pod}}
    objectSelector:
      matchExpressions: [{key: leaderworkerset.sigs.k8s.io/name, operator: Exists}]
    rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
"""
KUSTOMIZATION = """
resources: [manifests.yaml, service.yaml]
patches:
- path: mutating-patch.yaml
  target: {kind: MutatingWebhookConfiguration, name: mutating-webhook-configuration}
"""
SERVICE = "apiVersion: v1\nkind: Service\nmetadata: {name: webhook-service}\n"


@pytest.fixture
def source(tmp_path: Path) -> Path:
    webhook = tmp_path / "config" / "webhook"
    webhook.mkdir(parents=True)
    (webhook / "manifests.yaml").write_text(MANIFESTS)
    (webhook / "mutating-patch.yaml").write_text(PATCH)
    (webhook / "kustomization.yaml").write_text(KUSTOMIZATION)
    (webhook / "service.yaml").write_text(SERVICE)
    return tmp_path


def test_the_config_runs_one_manager_out_of_cluster(tmp_path: Path) -> None:
    text = peer_lws.render_config(Ports(webhook=9443, health=8081), tmp_path, 250.0, 300)
    config = yaml.safe_load(text)
    assert config["apiVersion"] == "config.lws.x-k8s.io/v1alpha1"
    assert config["kind"] == "Configuration"
    assert config["leaderElection"] == {"leaderElect": False}
    assert config["internalCertManagement"] == {"enable": False}
    assert config["webhook"] == {"host": "127.0.0.1", "port": 9443, "certDir": str(tmp_path)}
    assert config["metrics"] == {"bindAddress": "0"}
    assert config["health"] == {"healthProbeBindAddress": "127.0.0.1:8081"}
    assert config["clientConnection"] == {"qps": 250.0, "burst": 300}


def test_webhooks_are_called_by_url_with_the_ca_and_the_upstream_selector(
    source: Path,
) -> None:
    upstream = peer_lws.kustomized_webhooks(source)
    assert [d["kind"] for d in upstream] == [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ]
    built = peer_lws.webhook_configurations(upstream, "bench-lws", 9443, b"PEM BYTES")
    assert [d["metadata"] for d in built] == [{"name": "bench-lws"}] * 2
    hooks: dict[str, dict[str, Any]] = {h["name"]: h for d in built for h in d["webhooks"]}
    assert hooks["mpod.example.io"]["clientConfig"] == {
        "url": "https://127.0.0.1:9443/mutate--v1-pod",
        "caBundle": base64.b64encode(b"PEM BYTES").decode(),
    }
    assert hooks["mpod.example.io"]["objectSelector"] == {
        "matchExpressions": [{"key": peer_lws.NAME_LABEL, "operator": "Exists"}]
    }
    assert "objectSelector" not in hooks["mset.example.io"]
    assert hooks["vset.example.io"]["clientConfig"]["url"] == "https://127.0.0.1:9443/validate-set"
    assert all("service" not in h["clientConfig"] for h in hooks.values())
    # The upstream documents are left as they were.
    assert "service" in upstream[0]["webhooks"][0]["clientConfig"]


def test_json6902_add_and_replace() -> None:
    doc = {"a": [{"b": 1}, {"b": 2}], "c": {"d~/e": 1}}
    out = peer_lws.apply_json6902(
        doc,
        [
            {"op": "replace", "path": "/a/1/b", "value": 3},
            {"op": "add", "path": "/a/-", "value": {"b": 4}},
            {"op": "replace", "path": "/c/d~0~1e", "value": 5},
        ],
    )
    assert out == {"a": [{"b": 1}, {"b": 3}, {"b": 4}], "c": {"d~/e": 5}}
    assert doc["a"][1] == {"b": 2}
    with pytest.raises(peer_lws.LwsError, match="unsupported patch operation 'remove'"):
        peer_lws.apply_json6902(doc, [{"op": "remove", "path": "/a/0"}])


def test_the_certificate_serves_127_0_0_1(tmp_path: Path) -> None:
    pem = peer_lws.make_certificate(tmp_path / "certs")
    assert pem == (tmp_path / "certs" / "tls.crt").read_bytes()
    assert (tmp_path / "certs" / "tls.key").stat().st_mode & 0o077 == 0
    text = subprocess.run(
        [
            "openssl",
            "x509",
            "-noout",
            "-ext",
            "subjectAltName",
            "-in",
            str(tmp_path / "certs" / "tls.crt"),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "IP Address:127.0.0.1" in text


def test_the_webhook_probe_leaves_the_network_config_to_the_webhook() -> None:
    body = peer_lws.probe_body("probe")
    assert body["kind"] == "LeaderWorkerSet"
    assert "networkConfig" not in body["spec"]
    assert "rolloutStrategy" not in body["spec"]


class _CrdClient:
    """The two calls `install_crds` makes, answering as an API server does right after a
    create: `conditions` null at first, then Established."""

    def __init__(self) -> None:
        self.applied: list[str] = []
        self.gets = 0

    async def patch(
        self, resource: object, ns: object, name: str, *a: object, **kw: object
    ) -> None:
        self.applied.append(name)

    async def get(self, resource: object, ns: object, name: str, kind: object) -> dict[str, Any]:
        self.gets += 1
        if self.gets == 1:
            return {"status": {"conditions": None}}
        return {"status": {"conditions": [{"type": "Established", "status": "True"}]}}


def test_crds_are_waited_on_through_a_status_without_conditions_yet() -> None:
    client = _CrdClient()
    bodies = [{"metadata": {"name": "a.x"}}, {"metadata": {"name": "b.x"}}]
    asyncio.run(peer_lws.install_crds(client, bodies))  # type: ignore[arg-type]
    assert client.applied == ["a.x", "b.x"] and client.gets == 3
