"""LeaderWorkerSet (sigs.k8s.io/lws) as a peer of `cliques bench scale`: built, configured,
started out of cluster and wired to the dev cluster's API server.

- Build: `lws-manager` is the Go module `gomod/lws` of the dev-cluster builds, compiled
  once per machine into the same cache as kube and kwok (`ensure_manager`).
- Source: its CRDs and webhook manifests are read from the Go module cache at run time
  (`module_source`), never copied into this repository.
- CRDs: LeaderWorkerSet and DisaggregatedSet (the manager always starts both controllers),
  applied server-side, then waited on until `Established`.
- Config: a `config.lws.x-k8s.io/v1alpha1` Configuration with leader election, internal
  certificate management and metrics off, the health probe and webhook server on
  127.0.0.1, and the client's QPS/burst stated (`render_config`).
- Webhooks: the manager's pod webhook sets the group and worker-index labels its own
  controllers read, so its webhooks are registered as its kustomize config does (the
  `leaderworkerset.sigs.k8s.io/name` object selector on the pod webhooks), but by URL,
  https://127.0.0.1:PORT, with the CA bundle of a certificate made here with `openssl`
  (`webhook_configurations`, `make_certificate`).

`LwsPeer` is the `scale.Peer` that does all of this around each run; `operator_spec` the
operator the harness starts.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import json
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cliques.kube import errors
from cliques.kube.client import KubeClient
from cliques.kube.resources import Resource
from cliques_lab.bench import children, scale, workload
from cliques_lab.bench.kinds import LEADERWORKERSET
from cliques_lab.bench.workload_lws import LEADERWORKERSETS
from cliques_lab.devcluster import build, gomodules
from cliques_lab.devcluster.progress import Reporter

CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
)
MUTATING = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    False,
)
VALIDATING = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    False,
)
_BY_KIND = {r.kind: r for r in (MUTATING, VALIDATING)}

#: The label the manager's pod webhooks select on (config/webhook/*-patch.yaml upstream).
NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
#: The client rate limits the manager runs with (LWS's own defaults), stated in results.
DEFAULT_QPS = 500.0
DEFAULT_BURST = 500
FIELD_MANAGER = "cliques-bench"
ESTABLISH_TIMEOUT = 60.0
WEBHOOK_TIMEOUT = 60.0


class LwsError(Exception):
    """The LWS peer cannot be prepared (no Go module source, a CRD never Established, ...)."""


# --- build and sources ------------------------------------------------------------------


def version() -> str:
    """The pinned version of sigs.k8s.io/lws (gomod/lws/go.mod)."""
    return gomodules.LWS.version()


def ensure_manager(reporter: Reporter | None = None) -> Path:
    """The `lws-manager` binary, built into the dev-cluster cache on first use."""
    tool = build.ensure_tool(gomodules.LWS, reporter)
    return tool.binary("lws-manager")


def module_source() -> Path:
    """The directory of sigs.k8s.io/lws in the Go module cache (downloaded if missing, by
    the same Go and environment as the build)."""
    go = build.find_go()
    module = f"{gomodules.LWS.version_module}@{version()}"
    done = subprocess.run(
        [str(go), "mod", "download", "-json", module],
        cwd=gomodules.LWS.directory,
        env=build.go_environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise LwsError(f"go mod download {module} failed:\n{done.stdout}{done.stderr}")
    source = Path(json.loads(done.stdout)["Dir"])
    if not (source / "config" / "crd" / "bases").is_dir():
        raise LwsError(f"{source} has no config/crd/bases: not the LWS module source?")
    return source


def load_yaml_documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def crds(source: Path) -> list[dict[str, Any]]:
    """Every CRD of config/crd/bases (LeaderWorkerSet and DisaggregatedSet)."""
    out: list[dict[str, Any]] = []
    for path in sorted((source / "config" / "crd" / "bases").glob("*.yaml")):
        out.extend(d for d in load_yaml_documents(path) if d.get("kind") == CRDS.kind)
    if not out:
        raise LwsError(f"no CustomResourceDefinition in {source}/config/crd/bases")
    return out


# --- configuration, certificate, webhooks (pure but for openssl) -------------------------


@dataclass(frozen=True)
class Ports:
    webhook: int
    health: int


def render_config(
    ports: Ports, cert_dir: Path, qps: float = DEFAULT_QPS, burst: int = DEFAULT_BURST
) -> str:
    """The manager's --config file: out of cluster, one instance, webhooks on 127.0.0.1."""
    config = {
        "apiVersion": "config.lws.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"host": "127.0.0.1", "port": ports.webhook, "certDir": str(cert_dir)},
        "metrics": {"bindAddress": "0"},  # "0" turns controller-runtime's metrics server off
        "health": {"healthProbeBindAddress": f"127.0.0.1:{ports.health}"},
        "clientConnection": {"qps": qps, "burst": burst},
    }
    return yaml.safe_dump(config, sort_keys=False)


def make_certificate(cert_dir: Path, days: int = 2) -> bytes:
    """A self-signed serving certificate for 127.0.0.1 (`tls.crt`, `tls.key` in `cert_dir`,
    where controller-runtime's webhook server reads them); returns the PEM for caBundle."""
    cert_dir.mkdir(parents=True, exist_ok=True)
    crt, key = cert_dir / "tls.crt", cert_dir / "tls.key"
    argv = [
        "openssl",
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        str(key),
        "-out",
        str(crt),
        "-days",
        str(days),
        "-subj",
        "/CN=127.0.0.1",
        "-addext",
        "subjectAltName=IP:127.0.0.1",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
    ]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
    except FileNotFoundError:
        raise LwsError("openssl is not on PATH: it makes the LWS webhook's certificate") from None
    if done.returncode != 0:
        raise LwsError(f"openssl could not make the webhook certificate:\n{done.stderr}")
    key.chmod(0o600)
    return crt.read_bytes()


def apply_json6902(doc: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """The `replace` and `add` operations kustomize applies from a JSON 6902 patch."""
    out = copy.deepcopy(doc)
    for op in ops:
        if op.get("op") not in ("replace", "add"):
            raise LwsError(f"unsupported patch operation {op.get('op')!r}")
        *parents, last = [
            p.replace("~1", "/").replace("~0", "~") for p in op["path"][1:].split("/")
        ]
        target: Any = out
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if isinstance(target, list):
            index = len(target) if last == "-" else int(last)
            if op["op"] == "add":
                target.insert(index, copy.deepcopy(op["value"]))
            else:
                target[index] = copy.deepcopy(op["value"])
        else:
            target[last] = copy.deepcopy(op["value"])
    return out


def kustomized_webhooks(source: Path) -> list[dict[str, Any]]:
    """The webhook configurations of config/webhook, with the kustomization's patches (the
    object selector of the pod webhooks) applied to the configurations they target."""
    webhook_dir = source / "config" / "webhook"
    kustomization = yaml.safe_load((webhook_dir / "kustomization.yaml").read_text())
    docs = [d for r in kustomization["resources"] for d in load_yaml_documents(webhook_dir / r)]
    docs = [d for d in docs if d.get("kind") in _BY_KIND]
    for patch in kustomization.get("patches", []):
        target = patch["target"]
        ops = yaml.safe_load((webhook_dir / patch["path"]).read_text())
        docs = [
            apply_json6902(d, ops)
            if d["kind"] == target["kind"] and d["metadata"]["name"] == target["name"]
            else d
            for d in docs
        ]
    return docs


def webhook_configurations(
    upstream: list[dict[str, Any]], name: str, port: int, ca_bundle: bytes
) -> list[dict[str, Any]]:
    """The upstream configurations, renamed `name`, each webhook called by URL at
    https://127.0.0.1:`port` (its own path) with `ca_bundle`, instead of through a Service."""
    ca = base64.b64encode(ca_bundle).decode()
    out = []
    for doc in upstream:
        hooks = []
        for upstream_hook in doc["webhooks"]:
            hook = copy.deepcopy(upstream_hook)
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca}
            hooks.append(hook)
        out.append(
            {
                "apiVersion": doc["apiVersion"],
                "kind": doc["kind"],
                "metadata": {"name": name},
                "webhooks": hooks,
            }
        )
    return out


# --- the peer ---------------------------------------------------------------------------


class LwsPeer:
    """Sets up the cluster and files the manager needs around each benchmark run. The
    configuration and certificate of a run live in a private temporary directory, removed
    when the run ends."""

    def __init__(self, source: Path, qps: float = DEFAULT_QPS, burst: int = DEFAULT_BURST) -> None:
        self.source = source
        self.run_dir: Path | None = None
        self.qps = qps
        self.burst = burst
        self.webhook_name = ""
        self.webhook_port = 0
        self.ca_bundle = b""
        self._crds_ready = False
        self._registered: list[tuple[Resource, str]] = []

    async def prepare(self, client: KubeClient, namespace: str, port: int) -> dict[str, str]:
        if not self._crds_ready:
            await install_crds(client, crds(self.source))
            self._crds_ready = True
        run_dir = self.run_dir = Path(tempfile.mkdtemp(prefix=f"cliques-{namespace}-"))
        cert_dir = run_dir / "certs"
        self.ca_bundle = await asyncio.to_thread(make_certificate, cert_dir)
        self.webhook_port = children.free_port()
        config = run_dir / "config.yaml"
        ports = Ports(webhook=self.webhook_port, health=port)
        config.write_text(render_config(ports, cert_dir, self.qps, self.burst), encoding="utf-8")
        return {"lws_config": str(config)}

    async def started(self, client: KubeClient, namespace: str) -> None:
        self.webhook_name = f"cliques-bench-lws-{namespace}"
        upstream = kustomized_webhooks(self.source)
        for body in webhook_configurations(
            upstream, self.webhook_name, self.webhook_port, self.ca_bundle
        ):
            resource = _BY_KIND[body["kind"]]
            await client.patch(
                resource, None, self.webhook_name, body, dict, patch_type="apply", force=True
            )
            self._registered.append((resource, self.webhook_name))
        await wait_for_webhook(client, namespace)

    async def stopped(self, client: KubeClient, namespace: str) -> None:
        while self._registered:
            resource, name = self._registered.pop()
            with contextlib.suppress(errors.NotFound):
                await client.delete(resource, None, name)
        if self.run_dir is not None:
            shutil.rmtree(self.run_dir, ignore_errors=True)
            self.run_dir = None


async def install_crds(client: KubeClient, bodies: list[dict[str, Any]]) -> None:
    """Server-side apply each CRD, then wait until every one is Established."""
    for body in bodies:
        await client.patch(
            CRDS, None, body["metadata"]["name"], body, dict, patch_type="apply", force=True
        )
    deadline = time.monotonic() + ESTABLISH_TIMEOUT
    waiting = [b["metadata"]["name"] for b in bodies]
    while waiting:
        current = await client.get(CRDS, None, waiting[0], dict)
        # A CRD just created may show `conditions: null` until its controller gets to it.
        conditions = (current.get("status") or {}).get("conditions") or []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            waiting.pop(0)
            continue
        if time.monotonic() > deadline:
            raise LwsError(f"CRD {waiting[0]} not Established after {ESTABLISH_TIMEOUT:.0f} s")
        await asyncio.sleep(0.2)


def probe_body(name: str) -> dict[str, Any]:
    """A LeaderWorkerSet without `networkConfig`: only the manager's mutating webhook sets
    its `subdomainPolicy` (the CRD has no default for it)."""
    body = copy.deepcopy(LEADERWORKERSET.manifest(name, workload.Shape(1, 1, 1), "x", "", ""))
    body["spec"].pop("rolloutStrategy")
    return body


async def wait_for_webhook(client: KubeClient, namespace: str) -> None:
    """Until a dry-run create of a LeaderWorkerSet comes back defaulted by the manager's
    webhook: the API server has loaded the configuration and reaches the server."""
    body = json.dumps(probe_body("webhook-probe")).encode()
    deadline = time.monotonic() + WEBHOOK_TIMEOUT
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            data = await client.request(
                "create",
                LEADERWORKERSETS,
                namespace=namespace,
                query={"dryRun": "All", "fieldManager": FIELD_MANAGER},
                body=body,
                content_type="application/json",
            )
            answer = json.loads(data)
            policy = answer["spec"].get("networkConfig", {}).get("subdomainPolicy")
            if policy:
                return
            last = "the LeaderWorkerSet came back without the webhook's defaults"
        except errors.ApiError as exc:
            last = str(exc)
        await asyncio.sleep(0.2)
    raise LwsError(f"the LWS webhook does not answer after {WEBHOOK_TIMEOUT:.0f} s: {last}")


def operator_spec(manager: Path, peer: LwsPeer, name: str = "lws") -> scale.OperatorSpec:
    """The manager as the harness starts it: --config of the peer, the bench kubeconfig."""
    return scale.OperatorSpec(
        name,
        [
            str(manager),
            "--config",
            "{lws_config}",
            "--kubeconfig",
            "{kubeconfig}",
            # production logging at errors only, as cliques runs at warnings in the bench
            "--zap-devel=false",
            "--zap-log-level=error",
        ],
        readyz=True,
        kind=LEADERWORKERSET,
        peer=peer,
        settings={
            "version": version(),
            "qps": peer.qps,
            "burst": peer.burst,
            "leader_election": False,
            "log_level": "error",
            "webhooks": "by URL on 127.0.0.1 (pods and LeaderWorkerSets, mutating and validating)",
        },
    )
