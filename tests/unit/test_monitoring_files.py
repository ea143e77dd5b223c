"""The dashboard and the alerts the chart ships (deploy/helm/cliques/files/) name only metrics
the operator exposes: every `cliques_` name in a dashboard query, a dashboard variable or an
alert expression is one that /metrics serves (read from the operator's own exposition, with
every family it registers), and docs/operator.md lists each family. The dashboard has the
panels the chart promises; tests/e2e/test_monitoring.py runs the same queries and alerts on
a real Prometheus."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

import cliques.metrics  # noqa: F401  (registers the operator's prometheus-client metrics)
from cliques.operator import health

REPO = Path(__file__).resolve().parents[2]
FILES = REPO / "deploy" / "helm" / "cliques" / "files"
DASHBOARD = FILES / "dashboard.json"
ALERTS = FILES / "alerts.yaml"
NAME = re.compile(r"\bcliques_[a-z0-9_]+")
_SUFFIXES = {
    "counter": ("_total",),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count"),
    "summary": ("", "_sum", "_count"),
}


def exposed() -> set[str]:
    """Every series name /metrics can carry: each family's samples by its type."""
    text = health.render_metrics(lambda: True).decode()
    out: set[str] = set()
    for family in text_string_to_metric_families(text):
        out.update(family.name + s for s in _SUFFIXES.get(family.type, ("",)))
    return out


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return data


def dashboard_queries() -> list[str]:
    board = dashboard()
    queries = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    for var in board["templating"]["list"]:
        query = var.get("query")
        if var["type"] == "query":
            queries.append(query["query"] if isinstance(query, dict) else query)
    return queries


def alert_rules() -> list[dict[str, Any]]:
    data = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))
    return [rule for group in data["groups"] for rule in group["rules"]]


def test_every_metric_a_dashboard_query_names_is_exposed() -> None:
    names = exposed()
    queries = dashboard_queries()
    assert len(queries) >= 12
    named = {n for q in queries for n in NAME.findall(q)}
    assert named, "no query names a cliques_ metric"
    assert named <= names, f"not exposed by the operator: {sorted(named - names)}"


def test_every_metric_an_alert_names_is_exposed() -> None:
    names = exposed()
    rules = alert_rules()
    assert {r["alert"] for r in rules} == {
        "CliquesGangNotWhole",
        "CliquesGangRestartsExhausted",
        "CliquesOperatorNotReady",
    }
    for rule in rules:
        named = set(NAME.findall(rule["expr"]))
        assert named and named <= names, (rule["alert"], sorted(named - names))
        assert re.fullmatch(r"[0-9]+[smh]", rule["for"]), rule
        assert rule["labels"]["severity"] in ("warning", "critical")


def test_the_dashboard_has_the_promised_panels() -> None:
    board = dashboard()
    panels = board["panels"]
    assert len(panels) >= 6
    assert len({p["id"] for p in panels}) == len(panels)
    text = {p["title"]: " ".join(t["expr"] for t in p["targets"]) for p in panels}
    wanted = {
        "whole vs desired": ("cliques_cliqueset_gangs_whole", "cliques_cliqueset_gangs_desired"),
        "rolls": ("cliques_cliqueset_gang_rolls_total",),
        "restarts": ("cliques_cliqueset_gang_restarts_total",),
        "reconcile latency": ("cliques_reconcile_duration_seconds_bucket",),
        "API errors and 429s": ("cliques_api_requests_total", "cliques_api_throttled_total"),
        "worker restarts": ("cliques_worker_restarts_total",),
    }
    for topic, metrics in wanted.items():
        assert any(all(m in q for m in metrics) for q in text.values()), topic
    for panel in panels:
        assert panel["datasource"]["uid"] == "${datasource}"
        for target in panel["targets"]:
            expr = target["expr"]
            assert expr.count("(") == expr.count(")") and expr.count("{") == expr.count("}")


def test_docs_list_every_family_the_operator_exposes() -> None:
    text = (REPO / "docs" / "operator.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"`(cliques_[a-z0-9_]+)`", text))
    families = {
        f.name + ("_total" if f.type == "counter" else "")
        for f in text_string_to_metric_families(health.render_metrics(lambda: True).decode())
        # (not the `_created` timestamps prometheus-client adds to counters and histograms)
        if f.name.startswith("cliques_") and not f.name.endswith("_created")
    }
    assert families <= documented, f"not in docs/operator.md: {sorted(families - documented)}"
