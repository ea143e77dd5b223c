"""Cost curves from saved scale runs: the points (medians per operator and size) and the
`cliques bench plot` command that draws them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cliques.bench import curves, report


def deploy_run(operator: str, cpu: float, rss: float, kcm: float | None = None) -> dict[str, Any]:
    extra = {} if kcm is None else {"cpu_operator_and_kcm": cpu + kcm}
    return {
        "operator": operator,
        "error": "",
        "phases": [
            {
                "phase": "available",
                "cpu": cpu,
                "rss_peak_mib": rss,
                "completed": True,
                "extra": extra,
            },
            {
                "phase": "delete",
                "cpu": 0.1,
                "rss_peak_mib": rss + 10,
                "completed": True,
                "extra": {},
            },
        ],
    }


def doc(pods: int, *runs: dict[str, Any], digest: str = "aaaa") -> dict[str, Any]:
    return {
        "kind": "scale",
        "shape": f"1x{pods // 2}x2",
        "total_pods": pods,
        "pod_template_hash": digest,
        "runs": list(runs),
    }


def test_points_are_per_operator_sorted_by_pods_with_medians() -> None:
    found = curves.points(
        [
            doc(5000, deploy_run("lws", 10.0, 90.0, kcm=20.0)),
            doc(
                1000,
                deploy_run("lws", 1.0, 50.0, kcm=3.0),
                deploy_run("cliques-w1", 0.5, 60.0),
                deploy_run("cliques-w1", 0.7, 80.0),
                deploy_run("cliques-w1", 0.6, 70.0),
            ),
            {"kind": "hash", "runs": []},
        ]
    )
    assert sorted(found) == ["cliques-w1", "lws"]
    assert [p.pods for p in found["lws"]] == [1000, 5000]
    first = found["lws"][0]
    assert first.cpu_ms_per_pod == pytest.approx(1.0)
    assert first.cpu_with_kcm_ms_per_pod == pytest.approx(4.0)
    assert first.rss_peak_mib == 60.0  # the highest peak over the phases
    (cliques,) = found["cliques-w1"]
    assert cliques.cpu_ms_per_pod == pytest.approx(0.6)
    assert cliques.cpu_with_kcm_ms_per_pod is None


def test_failed_and_unfinished_deploys_are_left_out() -> None:
    failed = deploy_run("lws", 1.0, 50.0) | {"error": "boom"}
    timeout = deploy_run("kopf", 1.0, 50.0)
    timeout["phases"][0]["completed"] = False
    assert curves.points([doc(100, failed, timeout)]) == {}


def test_bench_plot_draws_a_png_and_refuses_different_templates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cliques.cli import main

    small = report.save(doc(1000, deploy_run("lws", 1.0, 50.0, kcm=3.0)), tmp_path, "small")
    large = report.save(doc(5000, deploy_run("lws", 4.0, 90.0, kcm=9.0)), tmp_path, "large")
    out = tmp_path / "curves.png"
    assert main(["bench", "plot", str(small), str(large), "-o", str(out)]) == 0
    assert out.read_bytes().startswith(b"\x89PNG")
    printed = capsys.readouterr().out
    assert "lws   1000 pods: 1.00 ms CPU per pod (4.00 with kcm), peak RSS 60 MiB" in printed

    other = report.save(
        doc(1000, deploy_run("cliques-w1", 1.0, 50.0), digest="bbbb"), tmp_path, "other"
    )
    assert main(["bench", "plot", str(small), str(other), "-o", str(out)]) == 2
    assert "different pod templates" in capsys.readouterr().err
