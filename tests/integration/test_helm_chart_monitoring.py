"""The chart's monitoring objects as `helm template` renders them: none by default; with
their values a PodMonitor beside the ServiceMonitor, a PrometheusRule holding the alerts of
files/alerts.yaml (each `for` replaceable, extra labels on every alert, an unknown alert
refused) and a ConfigMap holding files/dashboard.json byte for byte (in the namespace asked
for), which the API server accepts (the prometheus-operator CRDs are not installed: their
objects are checked as rendered); `helm lint --strict` passes with all of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.integration.test_helm_chart import CHART, RELEASE, dry_run, one, render, run
from tests.support.cluster_fixtures import KubeCluster

FILES = CHART / "files"
ALL_ON = {
    "metrics": {
        "serviceMonitor": {"enabled": True},
        "podMonitor": {"enabled": True, "interval": "15s", "labels": {"release": "kps"}},
        "prometheusRule": {
            "enabled": True,
            "labels": {"release": "kps"},
            "for": {"CliquesGangNotWhole": "30m"},
            "additionalRuleLabels": {"team": "ml"},
        },
        "dashboard": {"enabled": True, "namespace": "grafana"},
    }
}
MONITORING_KINDS = {"ServiceMonitor", "PodMonitor", "PrometheusRule"}


def source_rules() -> list[dict[str, Any]]:
    data = yaml.safe_load((FILES / "alerts.yaml").read_text(encoding="utf-8"))
    return [rule for group in data["groups"] for rule in group["rules"]]


def test_no_monitoring_object_by_default(helm: Path, namespace: str) -> None:
    docs = render(helm, namespace)
    assert not MONITORING_KINDS & {d["kind"] for d in docs}
    assert not [d for d in docs if d["kind"] == "ConfigMap"]


def test_monitors_rules_and_dashboard_render_from_the_files(
    helm: Path, kube_cluster: KubeCluster, namespace: str
) -> None:
    docs = render(helm, namespace, values=ALL_ON)
    pod_monitor = one(docs, "PodMonitor")
    deployment = one(docs, "Deployment")
    assert pod_monitor["metadata"]["labels"]["release"] == "kps"
    assert (
        pod_monitor["spec"]["selector"]["matchLabels"]
        == deployment["spec"]["selector"]["matchLabels"]
    )
    (endpoint,) = pod_monitor["spec"]["podMetricsEndpoints"]
    ports = deployment["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert endpoint["port"] in {p["name"] for p in ports}
    assert (endpoint["path"], endpoint["interval"]) == ("/metrics", "15s")

    rule = one(docs, "PrometheusRule")
    assert rule["metadata"]["labels"]["release"] == "kps"
    rendered = [r for group in rule["spec"]["groups"] for r in group["rules"]]
    source = source_rules()
    assert [r["alert"] for r in rendered] == [r["alert"] for r in source]
    for got, want in zip(rendered, source, strict=True):
        assert got["expr"] == want["expr"]
        assert got["annotations"] == want["annotations"]  # {{ $labels }} left to Prometheus
        assert got["labels"] == {**want["labels"], "team": "ml"}
        wait = "30m" if got["alert"] == "CliquesGangNotWhole" else want["for"]
        assert got["for"] == wait

    dashboard = one(docs, "ConfigMap")
    assert dashboard["metadata"]["namespace"] == "grafana"
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    text = dashboard["data"]["cliques.json"]
    assert text == (FILES / "dashboard.json").read_text(encoding="utf-8").rstrip("\n")
    assert json.loads(text)["uid"] == "cliques-gangs"

    # (a server-side dry run does not make the grafana namespace: the test's one instead)
    dashboard["metadata"]["namespace"] = namespace
    dry_run(kube_cluster, [d for d in docs if d["kind"] not in MONITORING_KINDS])


def test_helm_lint_passes_with_every_monitoring_object(helm: Path, tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(ALL_ON))
    done = run([str(helm), "lint", "--strict", str(CHART), "--values", str(values)])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout


def test_an_unknown_alert_or_a_bad_wait_is_refused(helm: Path) -> None:
    for values, message in (
        (
            {"metrics": {"prometheusRule": {"enabled": True, "for": {"GangDown": "5m"}}}},
            "metrics.prometheusRule.for: no alert GangDown",
        ),
        (
            {"metrics": {"prometheusRule": {"for": {"CliquesGangNotWhole": "soon"}}}},
            "/metrics/prometheusRule/for/CliquesGangNotWhole",
        ),
    ):
        argv = [str(helm), "template", RELEASE, str(CHART), "--values", "-"]
        done = run(argv, stdin=yaml.safe_dump(values))
        assert done.returncode != 0, f"{values} rendered"
        assert message in done.stderr, done.stderr
