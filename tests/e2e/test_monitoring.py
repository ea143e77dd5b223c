"""The chart's dashboard and alerts against a real Prometheus (built from its Go module,
gomod/prometheus) scraping a real operator (`cliques operator --workers 2`, a supervisor and
its workers) on the local control plane.

While a healthy set runs, rolls and a broken one waits (its worker asks for more CPU than a
KWOK node has), every query of deploy/helm/cliques/files/dashboard.json returns series;
CliquesGangNotWhole (from files/alerts.yaml, its `for` cut to seconds) fires for the broken
set and not for the healthy one, and clears once the broken set's request is lowered and
its gangs are whole; the operator's readiness alert stays quiet. A gang of a set with
`failurePolicy: RecreateGang` broken twice is restarted once, then left broken: Prometheus
sees one restart and one failed gang, and CliquesGangRestartsExhausted fires.

Marked `monitoring`, which is deselected by default (the Prometheus build takes many minutes
cold): `make test-monitoring` builds Prometheus, then runs it.
"""

from __future__ import annotations

import asyncio
import copy
import json
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cliques.api import labels
from cliques.kube.resources import CLIQUESETS, PODS
from tests.support.harness import Cluster, cliqueset, wait_for

pytestmark = pytest.mark.monitoring

REPO = Path(__file__).resolve().parents[2]
FILES = REPO / "deploy" / "helm" / "cliques" / "files"
SCRAPE_SECONDS = 1.0
#: what the dashboard's `$__rate_interval` becomes here (many scrapes, a short test)
RATE_INTERVAL = "30s"
ALERT_WAIT = "5s"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def prometheus_binary() -> Path:
    """The prometheus binary of gomod/prometheus (`make test-monitoring` builds it first)."""
    from cliques_lab.devcluster import build, gomodules

    return build.ensure_tool(gomodules.PROMETHEUS).binary("prometheus")


def get(url: str) -> Any:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as exc:  # Prometheus says why in the body
        raise AssertionError(f"{url}: {exc.code} {exc.read().decode()[:500]}") from None


class Prometheus:
    """A Prometheus process of the test, and its HTTP API."""

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"

    def query(self, expr: str) -> list[dict[str, Any]]:
        body = get(f"{self.base}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
        assert body["status"] == "success", body
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def alerts(self) -> list[dict[str, Any]]:
        alerts: list[dict[str, Any]] = get(f"{self.base}/api/v1/alerts")["data"]["alerts"]
        return alerts

    def rules(self) -> list[dict[str, Any]]:
        groups = get(f"{self.base}/api/v1/rules")["data"]["groups"]
        return [rule for group in groups for rule in group["rules"]]

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base}/-/ready", timeout=2) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False


def stop(proc: subprocess.Popen[bytes], log: Path) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"{proc.args!r} did not stop:\n{log.read_text()[-2000:]}") from None


@pytest.fixture
def operator(crds: str, namespace: str, tmp_path: Path) -> Iterator[int]:
    """`cliques operator --workers 2` on the test namespace; yields its metrics port."""
    port = free_port()
    log = tmp_path / "operator.log"
    argv = [sys.executable, "-m", "cliques", "operator", "--workers", "2"]
    argv += ["--kubeconfig", crds, "--namespace", namespace, "--qps", "0"]
    argv += ["--metrics-bind-address", f"127.0.0.1:{port}"]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield port
    finally:
        code = stop(proc, log)
    assert code == 0, log.read_text()[-2000:]


@pytest.fixture
def prometheus(prometheus_binary: Path, operator: int, tmp_path: Path) -> Iterator[Prometheus]:
    """Prometheus scraping the operator every second, with the chart's alerts."""
    from cliques_lab.devcluster import prometheus as config

    directory = tmp_path / "prometheus"
    directory.mkdir()
    targets = directory / config.TARGETS_FILE
    targets.write_text(config.targets_text([f"127.0.0.1:{operator}"]))
    rules = directory / config.RULES_FILE
    alerts = (FILES / "alerts.yaml").read_text(encoding="utf-8")
    waits = {"CliquesGangNotWhole": ALERT_WAIT, "CliquesGangRestartsExhausted": "1s"}
    rules.write_text(config.rules_with_for(alerts, waits))
    cfg = directory / config.CONFIG_FILE
    cfg.write_text(config.config_text(config.config(targets, [rules], scrape_seconds=1.0)))
    port = free_port()
    log = tmp_path / "prometheus.log"
    argv = config.argv(prometheus_binary, cfg, directory / config.DATA_DIR, port)
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield Prometheus(port)
    finally:
        code = stop(proc, log)
    assert code == 0, log.read_text()[-2000:]


def dashboard_queries(namespace: str) -> list[tuple[str, str]]:
    """(panel title, query) of every dashboard target, its variables filled in as Grafana
    would with this namespace and every CliqueSet."""
    board = json.loads((FILES / "dashboard.json").read_text(encoding="utf-8"))
    out = []
    for panel in board["panels"]:
        for target in panel["targets"]:
            expr = target["expr"].replace("$__rate_interval", RATE_INTERVAL)
            # (a namespace name has no character a regular expression treats specially)
            expr = expr.replace("$namespace", namespace).replace("$cliqueset", ".*")
            assert "$" not in expr, expr
            out.append((panel["title"], expr))
    return out


def broken(name: str, cpu: str) -> dict[str, Any]:
    """A set of one gang whose worker asks for `cpu` (a KWOK node has 32)."""
    body = copy.deepcopy(cliqueset(name, replicas=1, workers=1))
    worker = body["spec"]["template"]["cliques"][1]["template"]["spec"]["containers"][0]
    worker["resources"]["requests"]["cpu"] = cpu
    return body


def firing(prom: Prometheus, alert: str, namespace: str) -> dict[str, str]:
    """The CliqueSets of `namespace` for which `alert` fires -> their alert's state."""
    return {
        a["labels"].get("cliqueset", ""): a["state"]
        for a in prom.alerts()
        if a["labels"].get("alertname") == alert and a["labels"].get("namespace") == namespace
    }


async def test_dashboard_queries_return_series_and_the_gang_alert_fires_and_clears(
    cluster: Cluster, prometheus: Prometheus, operator: int
) -> None:
    ns = cluster.namespace

    async def ready() -> bool:
        return await asyncio.to_thread(prometheus.ready)

    await wait_for(ready, timeout=60, what="Prometheus /-/ready")

    async def scraped() -> bool:
        up = await asyncio.to_thread(prometheus.query, 'up{job="cliques"} == 1')
        return len(up) == 1

    await wait_for(scraped, timeout=60, what="Prometheus to scrape the operator")
    rules = {r["name"]: r for r in await asyncio.to_thread(prometheus.rules)}
    assert set(rules) == {
        "CliquesGangNotWhole",
        "CliquesGangRestartsExhausted",
        "CliquesOperatorNotReady",
    }
    assert all(r["health"] == "ok" for r in rules.values()), rules

    await cluster.apply(cliqueset("good", replicas=2))
    await cluster.apply(broken("stuck", cpu="64"))
    await cluster.wait_available("good", timeout=120)
    # a roll of the healthy set, for the rolls panel
    await cluster.apply(cliqueset("good", replicas=2, image="busybox:1.37"))
    await cluster.wait_available("good", timeout=180)

    async def whole_of(name: str, want: float) -> bool:
        found = await asyncio.to_thread(
            prometheus.query,
            f'cliques_cliqueset_gangs_whole{{namespace="{ns}", cliqueset="{name}"}} == {want}',
        )
        return len(found) == 1

    await wait_for(lambda: whole_of("good", 2), timeout=60, what="good: 2 whole gangs scraped")
    await wait_for(lambda: whole_of("stuck", 0), timeout=60, what="stuck: 0 whole gangs scraped")

    async def rolls() -> list[float]:
        found = await asyncio.to_thread(
            prometheus.query,
            f'cliques_cliqueset_gang_rolls_total{{namespace="{ns}", cliqueset="good"}}',
        )
        return [float(r["value"][1]) for r in found]

    async def both_rolled() -> bool:
        return await rolls() == [2.0]

    # (each worker writes its values at most every 2 s, and Prometheus scrapes every second)
    await wait_for(both_rolled, timeout=30, what="good: 2 gang rolls scraped")
    await asyncio.sleep(3)
    assert await rolls() == [2.0]  # each gang rolled once, counted once

    for title, expr in dashboard_queries(ns):

        async def answered(expr: str = expr) -> list[dict[str, Any]]:
            return await asyncio.to_thread(prometheus.query, expr)

        await wait_for(answered, timeout=60, what=f"series for panel {title!r}: {expr}")

    async def stuck_fires() -> bool:
        states = await asyncio.to_thread(firing, prometheus, "CliquesGangNotWhole", ns)
        return states.get("stuck") == "firing"

    await wait_for(stuck_fires, timeout=90, what="CliquesGangNotWhole to fire for stuck")
    states = await asyncio.to_thread(firing, prometheus, "CliquesGangNotWhole", ns)
    assert "good" not in states, states
    others = {a["labels"]["alertname"] for a in await asyncio.to_thread(prometheus.alerts)}
    assert "CliquesOperatorNotReady" not in others

    await cluster.apply(broken("stuck", cpu="100m"))
    await cluster.wait_available("stuck", timeout=180)

    async def cleared() -> bool:
        states = await asyncio.to_thread(firing, prometheus, "CliquesGangNotWhole", ns)
        return "stuck" not in states

    await wait_for(cleared, timeout=90, what="CliquesGangNotWhole to clear for stuck")
    await wait_for(lambda: whole_of("stuck", 1), timeout=30, what="stuck: 1 whole gang scraped")

    await cluster.client.delete(CLIQUESETS, ns, "stuck")

    async def gone() -> bool:
        found = await asyncio.to_thread(
            prometheus.query,
            f'cliques_cliqueset_gangs_desired{{namespace="{ns}", cliqueset="stuck"}}',
        )
        return not found

    await wait_for(gone, timeout=60, what="the deleted set's series to go from Prometheus")


async def scraped_value(prom: Prometheus, expr: str, want: float) -> bool:
    found = await asyncio.to_thread(prom.query, expr)
    return [float(r["value"][1]) for r in found] == [want]


async def test_a_gang_that_used_up_its_restarts_is_counted_and_alerted(
    cluster: Cluster, prometheus: Prometheus, operator: int
) -> None:
    ns = cluster.namespace
    body = cliqueset("train", replicas=2)
    body["spec"]["failurePolicy"] = {
        "restartPolicy": "RecreateGang",
        "minAvailableBreachedSeconds": 2,
        "maxGangRestarts": 1,
        "restartBackoff": {"initialSeconds": 1, "maxSeconds": 2},
    }
    await cluster.apply(body)
    await cluster.wait_available("train", timeout=120)
    leader = labels.pod_name(labels.clique_name("train", 1, "leader"), 0)
    unready = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}

    async def unready_leader() -> None:
        """The leader of gang 1 not ready, as a kubelet reports it (KWOK keeps it so)."""
        await cluster.client.patch(
            PODS, ns, leader, unready, dict, patch_type="strategic", sub="status"
        )

    await unready_leader()

    async def restarted() -> bool:
        cqs = await cluster.cliqueset("train")
        return cqs.status is not None and cqs.status.gang_restarts == 1

    await wait_for(restarted, timeout=60, what="train: gang 1 restarted once")
    await cluster.wait_available("train", timeout=120)
    selector = f'{{namespace="{ns}", cliqueset="train"}}'
    restarts = f"cliques_cliqueset_gang_restarts_total{selector}"
    await wait_for(
        lambda: scraped_value(prometheus, restarts, 1.0), timeout=30, what=f"{restarts} == 1"
    )
    # gangs 0 and 1 came up whole, then gang 1 again after its restart
    whole = f"cliques_cliqueset_gang_whole_seconds_count{selector}"
    await wait_for(lambda: scraped_value(prometheus, whole, 3.0), timeout=30, what=f"{whole}")

    await unready_leader()
    failed = f"cliques_cliqueset_gangs_failed{selector}"
    await wait_for(lambda: scraped_value(prometheus, failed, 1.0), timeout=60, what=failed)

    async def exhausted() -> bool:
        states = await asyncio.to_thread(firing, prometheus, "CliquesGangRestartsExhausted", ns)
        return states.get("train") == "firing"

    await wait_for(exhausted, timeout=60, what="CliquesGangRestartsExhausted to fire")
    assert await scraped_value(prometheus, restarts, 1.0)  # the failed gang is left alone
