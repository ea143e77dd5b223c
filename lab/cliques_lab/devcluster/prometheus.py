"""Prometheus beside a dev cluster, as plain data: its configuration, its command line and
how to ask it whether it is ready (no processes; `addons_up` runs it, and
tests/e2e/test_monitoring.py runs the same binary with the same configuration).

Prometheus runs on the host, as the operator does in a dev cluster (`cliques operator`,
`cliques demo`): it scrapes the operator's /metrics at the addresses listed in a file-SD
targets file (`TARGETS_FILE`, re-read when it changes; `OPERATOR_TARGET`, the operator's
default address, to begin with) every `SCRAPE_SECONDS`, and evaluates the chart's alerts
(`alerts_file()`: the chart's deploy/helm/cliques/files/alerts.yaml, as the cliques
package ships a copy of it). Its HTTP API (/api/v1/query, /api/v1/rules,
/api/v1/alerts) listens on 127.0.0.1 only. The binary is built without the web UI's
assets, so the UI pages are missing; the API and /-/ready are all that is used.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Final

import yaml

from cliques import data

#: The operator's default metrics address (`cliques operator` without --metrics-port).
OPERATOR_TARGET: Final = "127.0.0.1:8080"
JOB: Final = "cliques"
SCRAPE_SECONDS: Final = 5
CONFIG_FILE: Final = "prometheus.yml"
TARGETS_FILE: Final = "targets.json"
RULES_FILE: Final = "alerts.yaml"
PORT_FILE: Final = "web-port"
DATA_DIR: Final = "data"


def alerts_file() -> Traversable:
    """The chart's alert rules (a Prometheus rule file), as the cliques package ships them
    (`cliques.data`, a copy of the chart's `files/alerts.yaml`)."""
    return data.files(data.MONITORING).joinpath(data.ALERTS)


def config(
    targets_file: Path,
    rule_files: Sequence[Path] = (),
    *,
    scrape_seconds: float = SCRAPE_SECONDS,
    evaluation_seconds: float | None = None,
) -> dict[str, Any]:
    """The configuration: the operator's targets from `targets_file`, the `rule_files`."""
    return {
        "global": {
            "scrape_interval": _duration(scrape_seconds),
            "scrape_timeout": _duration(min(scrape_seconds, 10)),
            "evaluation_interval": _duration(evaluation_seconds or scrape_seconds),
        },
        "rule_files": [str(p) for p in rule_files],
        "scrape_configs": [
            {
                "job_name": JOB,
                "metrics_path": "/metrics",
                "file_sd_configs": [{"files": [str(targets_file)], "refresh_interval": "5s"}],
            }
        ],
    }


def config_text(cfg: dict[str, Any]) -> str:
    return yaml.safe_dump(cfg, sort_keys=False)


def targets_text(addresses: Iterable[str]) -> str:
    """A file-SD targets file listing `addresses` (host:port) under the job's labels."""
    return json.dumps([{"targets": list(addresses), "labels": {"service": JOB}}], indent=2) + "\n"


def rules_with_for(rules_yaml: str, waits: dict[str, str]) -> str:
    """A rule file with the `for` of the alerts named in `waits` replaced (a test waits
    seconds where a cluster waits minutes); ValueError for an alert the file lacks."""
    data = yaml.safe_load(rules_yaml)
    seen: set[str] = set()
    for group in data["groups"]:
        for rule in group["rules"]:
            name = rule.get("alert")
            if name in waits:
                rule["for"] = waits[name]
                seen.add(name)
    missing = set(waits) - seen
    if missing:
        raise ValueError(f"no such alert: {', '.join(sorted(missing))}")
    return yaml.safe_dump(data, sort_keys=False)


def argv(binary: Path, config_file: Path, data_dir: Path, port: int) -> list[str]:
    """The command line: the configuration, a TSDB of its own, the API on 127.0.0.1:port."""
    return [
        str(binary),
        f"--config.file={config_file}",
        f"--storage.tsdb.path={data_dir}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--storage.tsdb.retention.time=2d",
        "--log.level=warn",
    ]


def ready_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/-/ready"


def _duration(seconds: float) -> str:
    """A Prometheus duration (whole milliseconds)."""
    ms = round(seconds * 1000)
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"
