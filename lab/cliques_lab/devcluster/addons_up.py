"""Bringing a dev cluster's add-ons up: the builds, processes and API calls (`cluster.up`
calls these; what they run is decided in `addons`, `kueue`, `metrics_server` and `certs`).

- `ensure_built`: each add-on's Go module, built into the cache on first use (progress
  through the build's reporter), before the cluster is locked.
- `kwokctl_config`: the cluster's KwokctlConfiguration with the add-ons kwokctl runs
  (metrics-server).
- `start`: after the cluster is usable, each add-on in turn, waiting until it serves:
  metrics-server: our fake nodes get the annotation that tells it where KWOK serves their
  kubelet metrics, then its APIService must be Available; kueue: its CRDs (from the module
  source) are applied and Established, its certificates made (or kept) in
  `<cache>/run/<name>/kueue/certs`, its configuration written to
  `<cache>/run/<name>/kueue/config.yaml` with free loopback ports, the manager started as a
  host process (pid file and log beside the control plane's: `pids/kueue.pid`,
  `logs/kueue.log`, so `status` and `down` treat it like them) unless it already runs, its
  webhooks registered by URL, and then its /readyz must answer and a dry-run create of a
  ResourceFlavor must pass through its webhooks; prometheus: its configuration, targets
  file and the chart's alerts written to `<cache>/run/<name>/prometheus/`, started as a
  host process (`pids/prometheus.pid`, `logs/prometheus.log`, its TSDB in the cluster's
  work directory) on a free loopback port (kept in `prometheus/web-port`) unless it
  already runs, then /-/ready must answer. A
  timeout or an exit names the log.
"""

from __future__ import annotations

import json
import os
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import yaml

from cliques_lab.devcluster import (
    addons,
    certs,
    kueue,
    kwok,
    metrics_server,
    processes,
    prometheus,
)
from cliques_lab.devcluster.build import ModuleBuild, ensure_tool, module_source
from cliques_lab.devcluster.errors import ComponentError, DevClusterError
from cliques_lab.devcluster.gomodules import KUEUE_METRICS_CERT_ENV
from cliques_lab.devcluster.progress import QuietReporter, Reporter

if TYPE_CHECKING:
    import subprocess

    from cliques_lab.devcluster.cluster import ClusterPaths

FIELD_MANAGER = "cliques-dev-cluster"
# Within the 30 s cluster._Kubectl gives one kubectl call.
ESTABLISH_TIMEOUT = 25


class Kubectl(Protocol):
    """kubectl against the cluster (`cluster._Kubectl`)."""

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]: ...

    def json(self, *args: str) -> Any: ...


#: Whether a component of the cluster runs (by its pid file, as `cluster.status` tells).
Alive = Callable[[str], bool]


class Waiter:
    """Polls until a check passes, failing with the component's log when it exits or when
    `timeout` seconds pass."""

    def __init__(self, paths: ClusterPaths, component: str, alive: Alive, timeout: float):
        self.paths = paths
        self.component = component
        self.alive = alive
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout

    def until(self, check: Callable[[], str | None]) -> None:
        """`check` returns None when done, else what is still awaited."""
        log = self.paths.component_log(self.component)
        while True:
            if not self.alive(self.component):
                raise ComponentError(
                    self.paths.name, self.component, "exited", log, processes.tail(log)
                )
            pending = check()
            if pending is None:
                return
            if time.monotonic() > self.deadline:
                reason = f"did not come up within {self.timeout:.0f}s (still waiting for {pending})"
                raise ComponentError(
                    self.paths.name, self.component, reason, log, processes.tail(log)
                )
            time.sleep(processes.POLL_SECONDS)


def ensure_built(
    names: Iterable[str], reporter: Reporter | None, root: Path
) -> dict[str, ModuleBuild]:
    """Each add-on's build (made now if it is not in the cache), by add-on name."""
    return {
        name: ensure_tool(addons.ADDONS[name].module, reporter, root=root)
        for name in addons.parse(names)
    }


def binary(builds: Mapping[str, ModuleBuild], name: str) -> Path:
    """The one binary an add-on's build installs."""
    build = builds[name]
    (installed,) = build.module.binaries()
    return build.binary(installed)


def kwokctl_config(config: Mapping[str, Any], builds: Mapping[str, ModuleBuild]) -> dict[str, Any]:
    """The KwokctlConfiguration of a new cluster with the add-ons kwokctl runs."""
    out = dict(config)
    if addons.METRICS_SERVER.name in builds:
        source = module_source(addons.METRICS_SERVER.module)
        out = metrics_server.with_metrics_server(
            out, binary(builds, addons.METRICS_SERVER.name), source
        )
    return out


def start(
    paths: ClusterPaths,
    kubectl: Kubectl,
    builds: Mapping[str, ModuleBuild],
    alive: Alive,
    *,
    timeout: float,
    reporter: Reporter | None = None,
    frameworks: Sequence[str] = kueue.DEFAULT_FRAMEWORKS,
) -> None:
    """Bring each add-on of `builds` up on the usable cluster and wait until it serves."""
    report = reporter if reporter is not None else QuietReporter()
    for name in addons.parse(builds):
        label = f"{name} {builds[name].version}"
        if name == addons.METRICS_SERVER.name:
            start_metrics_server(paths, kubectl, alive, timeout, report, label)
        elif name == addons.KUEUE.name:
            start_kueue(paths, kubectl, builds[name], alive, timeout, report, label, frameworks)
        elif name == addons.PROMETHEUS.name:
            start_prometheus(paths, builds[name], alive, timeout, report, label)


# --- metrics-server ---------------------------------------------------------------------


def start_metrics_server(
    paths: ClusterPaths,
    kubectl: Kubectl,
    alive: Alive,
    timeout: float,
    report: Reporter,
    label: str,
) -> None:
    report.step(label, "pointing metrics-server at KWOK's kubelet metrics of each node")
    annotate_nodes(kubectl)
    waiter = Waiter(paths, addons.METRICS_SERVER.components[0], alive, timeout)
    waiter.until(lambda: _apiservice_pending(kubectl))
    report.step(label, f"serving {metrics_server.APISERVICE}")


def annotate_nodes(kubectl: Kubectl) -> None:
    """Give our fake nodes that lack it the annotation naming their metrics path."""
    listed = kubectl.json("get", "nodes", "-l", kwok.NODE_LABEL)
    if listed is None:
        raise DevClusterError("cannot list the dev cluster's nodes to annotate them")
    for node in listed.get("items", []):
        name = node["metadata"]["name"]
        want = metrics_server.node_annotations(name)
        have = node["metadata"].get("annotations") or {}
        if all(have.get(k) == v for k, v in want.items()):
            continue
        pairs = [f"{k}={v}" for k, v in want.items()]
        done = kubectl.run("annotate", "node", name, "--overwrite", *pairs)
        if done.returncode != 0:
            raise DevClusterError(f"annotating node {name} failed: {done.stderr.strip()}")


def _apiservice_pending(kubectl: Kubectl) -> str | None:
    service = kubectl.json("get", "apiservice", metrics_server.APISERVICE)
    conditions = ((service or {}).get("status") or {}).get("conditions") or []
    for condition in conditions:
        if condition.get("type") == "Available" and condition.get("status") == "True":
            return None
    detail = next((c.get("message") for c in conditions if c.get("type") == "Available"), "")
    return f"the APIService {metrics_server.APISERVICE} to be Available" + (
        f" ({detail})" if detail else ""
    )


# --- kueue ------------------------------------------------------------------------------


def start_kueue(
    paths: ClusterPaths,
    kubectl: Kubectl,
    build: ModuleBuild,
    alive: Alive,
    timeout: float,
    report: Reporter,
    label: str,
    frameworks: Sequence[str],
) -> None:
    source = module_source(build.module)
    report.step(label, "applying Kueue's CRDs")
    crds = kueue.crds(source)
    apply(kubectl, crds)
    _wait_established(kubectl, crds)
    directory = paths.state_dir / "kueue"
    files = certs.ensure(directory / "certs", f"cliques dev-cluster {paths.name} kueue CA")
    component = addons.KUEUE.components[0]
    config_path = directory / "config.yaml"
    ports = _running_ports(config_path) if alive(component) else None
    if ports is None:
        ports = kueue.Ports(*free_ports(3))
        config = kueue.render_config(ports, files.directory, frameworks)
        config_path.write_text(kueue.config_text(config), encoding="utf-8")
        report.step(label, f"starting the manager; log: {paths.component_log(component)}")
        spawn_kueue(paths, binary_path=build.binary("kueue"), config=config_path, cert_dir=files)
    registered = kueue.webhook_configurations(
        kueue.upstream_webhooks(source),
        webhook_name(paths.name),
        ports.webhook,
        files.ca_crt.read_bytes(),
        _saved_frameworks(config_path),
    )
    apply(kubectl, registered)
    Waiter(paths, component, alive, timeout).until(lambda: _kueue_pending(kubectl, ports))
    report.step(label, f"ready (webhooks on https://127.0.0.1:{ports.webhook})")


def webhook_name(cluster: str) -> str:
    """The name of the cluster's Kueue webhook configurations (mutating and validating)."""
    return f"kueue-dev-cluster-{cluster}"


def spawn_kueue(
    paths: ClusterPaths, *, binary_path: Path, config: Path, cert_dir: certs.CertFiles
) -> int:
    component = addons.KUEUE.components[0]
    argv = [str(binary_path), "--config", str(config), "--kubeconfig", str(paths.kubeconfig)]
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env[KUEUE_METRICS_CERT_ENV] = str(cert_dir.directory)
    return processes.spawn(argv, paths.component_log(component), paths.pid_file(component), env=env)


def _running_ports(config_path: Path) -> kueue.Ports | None:
    """The ports of the configuration the running manager was started with, if readable."""
    try:
        return kueue.ports_of(yaml.safe_load(config_path.read_text(encoding="utf-8")))
    except (OSError, ValueError, yaml.YAMLError):
        return None


def _saved_frameworks(config_path: Path) -> tuple[str, ...]:
    return kueue.frameworks_of(yaml.safe_load(config_path.read_text(encoding="utf-8")) or {})


def _kueue_pending(kubectl: Kubectl, ports: kueue.Ports) -> str | None:
    url = f"http://127.0.0.1:{ports.health}/readyz"
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            ready = answer.status == 200
    except (urllib.error.URLError, OSError):
        ready = False
    if not ready:
        return f"{url} to answer 200"
    done = kubectl.run(
        "create",
        "--dry-run=server",
        "-o",
        "name",
        "-f",
        "-",
        stdin=json.dumps(kueue.probe_flavor()),
    )
    if done.returncode != 0:
        return f"a dry-run ResourceFlavor to pass Kueue's webhooks ({done.stderr.strip()[-300:]})"
    return None


# --- prometheus ---------------------------------------------------------------------------


def start_prometheus(
    paths: ClusterPaths,
    build: ModuleBuild,
    alive: Alive,
    timeout: float,
    report: Reporter,
    label: str,
) -> None:
    directory = paths.state_dir / "prometheus"
    directory.mkdir(parents=True, exist_ok=True)
    component = addons.PROMETHEUS.components[0]
    port = prometheus_port(paths)
    if port is None or not alive(component):
        targets = directory / prometheus.TARGETS_FILE
        if not targets.exists():  # a person may have listed other operators: kept
            targets.write_text(prometheus.targets_text([prometheus.OPERATOR_TARGET]))
        rules: list[Path] = []
        source = prometheus.alerts_file()
        rules.append(directory / prometheus.RULES_FILE)
        rules[0].write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
        config = directory / prometheus.CONFIG_FILE
        config.write_text(prometheus.config_text(prometheus.config(targets, rules)))
        port = free_ports(1)[0]
        (directory / prometheus.PORT_FILE).write_text(f"{port}\n", encoding="utf-8")
        report.step(label, f"starting Prometheus; log: {paths.component_log(component)}")
        argv = prometheus_command(paths, build.binary("prometheus"), config, port)
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        processes.spawn(argv, paths.component_log(component), paths.pid_file(component), env=env)
    url = prometheus.ready_url(port)
    Waiter(paths, component, alive, timeout).until(lambda: _http_pending(url))
    report.step(
        label,
        f"ready on http://127.0.0.1:{port} (API only), scraping the targets in "
        f"{directory / prometheus.TARGETS_FILE}",
    )


def prometheus_command(paths: ClusterPaths, binary: Path, config: Path, port: int) -> list[str]:
    """Prometheus' command line, its TSDB in the cluster's work directory: that names the
    process as the cluster's (`cluster._is_ours`), and `down` removes the data with it."""
    data = paths.workdir / "prometheus" / prometheus.DATA_DIR
    return prometheus.argv(binary, config, data, port)


def prometheus_port(paths: ClusterPaths) -> int | None:
    """The port of the cluster's Prometheus API, as it was last started (None: never)."""
    try:
        text = (paths.state_dir / "prometheus" / prometheus.PORT_FILE).read_text()
    except OSError:
        return None
    return int(text) if text.strip().isdigit() else None


def _http_pending(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            if answer.status == 200:
                return None
    except (urllib.error.URLError, OSError):
        pass
    return f"{url} to answer 200"


# --- shared ---------------------------------------------------------------------------------


def apply(kubectl: Kubectl, objects: Sequence[Mapping[str, Any]]) -> None:
    """Server-side apply `objects` (as cliques' field manager, taking over conflicts)."""
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
    done = kubectl.run(
        "apply",
        "--server-side",
        "--force-conflicts",
        f"--field-manager={FIELD_MANAGER}",
        "-f",
        "-",
        stdin=body,
    )
    if done.returncode != 0:
        raise DevClusterError(f"kubectl apply failed: {done.stderr.strip()[-2000:]}")


def _wait_established(kubectl: Kubectl, crds: Sequence[Mapping[str, Any]]) -> None:
    names = [f"crd/{crd['metadata']['name']}" for crd in crds]
    done = kubectl.run(
        "wait", "--for=condition=Established", f"--timeout={ESTABLISH_TIMEOUT}s", *names
    )
    if done.returncode != 0:
        raise DevClusterError(f"Kueue's CRDs were not Established: {done.stderr.strip()}")


def free_ports(count: int) -> list[int]:
    """`count` distinct ports free on 127.0.0.1 right now."""
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            ports.append(int(sock.getsockname()[1]))
    return ports
