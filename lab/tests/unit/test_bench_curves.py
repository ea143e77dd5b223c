"""Cost curves from saved scale runs: the points (medians per operator and size) and the
`cliques bench plot` command that draws them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cliques_lab.bench import curves, report


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


def doc(pods: int, *runs: dict[str, Any], digest: str = "aaaa", shape: str = "") -> dict[str, Any]:
    return {
        "kind": "scale",
        "shape": shape or f"1x{pods // 2}x2",
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
    assert "| 1x500x2 | lws | 1 |  | 1.00 | 1.00 | 4.00 |  | 60 |  |  | 0 |" in printed

    other = report.save(
        doc(1000, deploy_run("cliques-w1", 1.0, 50.0), digest="bbbb"), tmp_path, "other"
    )
    assert main(["bench", "plot", str(small), str(other), "-o", str(out)]) == 2
    assert "different pod templates" in capsys.readouterr().err


PLANE = {
    "cpu_kube-apiserver": 30.0,
    "cpu_etcd": 5.0,
    "cpu_kube-controller-manager": 8.0,
    "cpu_kube-scheduler": 4.0,
    "cpu_kwok-controller": 9.0,
}


WORK = {
    "plane writes": 4000,
    "plane write bytes": 6_500_000,
    "plane watch events": 30000,
    "plane watch bytes": 120_000_000,
    "plane writes endpointslices": 150,
    "plane watch events pods": 21000,
    "plane writes pods": 1000,
}


def full_run(
    operator: str, cpu: float, ready: float, noop: float, spurious: int = 0, work: bool = True
) -> dict[str, Any]:
    """A run with every phase the tables read (the control plane's work only if `work`)."""
    plane_work = WORK if work else {}
    return {
        "operator": operator,
        "error": "",
        "phases": [
            {
                "phase": "pods-ready",
                "wall": ready,
                "cpu": cpu,
                "rss_peak_mib": 80.0,
                "completed": True,
                "extra": {},
            },
            {
                "phase": "available",
                "wall": ready + 1,
                "cpu": cpu,
                "rss_peak_mib": 90.0,
                "completed": True,
                "extra": PLANE
                | plane_work
                | {"cpu_operator_and_kcm": cpu + 8.0, "idle_cpu_kube-controller-manager": 0.03},
            },
            {
                "phase": "steady-state",
                "wall": 30.0,
                "cpu": 0.1,
                "rss_peak_mib": 95.0,
                "completed": True,
                "spurious_creates": spurious,
                "spurious_deletes": 0,
                "extra": {
                    "noop_cpu_per_set": noop,
                    "settle_cpu_kube-controller-manager": 0.4,
                    "settle_window": 10.0,
                },
            },
        ],
    }


def test_many_sets_are_a_curve_of_their_own_and_the_table_has_every_figure() -> None:
    found = curves.points(
        [
            doc(1000, full_run("cliques-w1", 4.0, 30.0, 0.010)),
            doc(1000, full_run("cliques-w1", 6.0, 40.0, 0.002), shape="100x5x2"),
            doc(10000, full_run("cliques-w1", 50.0, 400.0, 0.030, spurious=2), shape="1000x5x2"),
        ]
    )
    assert sorted(found) == ["cliques-w1", "cliques-w1 [sets of 5 gangs]"]
    one, many = found["cliques-w1"], found["cliques-w1 [sets of 5 gangs]"]
    assert [p.shape for p in one] == ["1x500x2"]
    assert [(p.shape, p.pods) for p in many] == [("100x5x2", 1000), ("1000x5x2", 10000)]
    big = many[1]
    assert big.cpu_ms_per_pod == pytest.approx(5.0)
    assert big.ready_s == 400.0 and big.deploy_cpu_s == 50.0
    # The kwok controller (the fake kubelets) is not the control plane.
    assert big.control_plane_cpu_s == pytest.approx(47.0)
    assert big.noop_ms_per_set == pytest.approx(30.0)
    assert big.spurious == 2 and big.runs == 1
    lines = curves.table(found).splitlines()
    assert lines[0].startswith("| shape | operator | rounds | pods Ready, s |")
    # Sorted by pods, then shape: 100x5x2 before 1x500x2 at 1,000 pods.
    assert [line.split(" | ")[0:2] for line in lines[2:]] == [
        ["| 100x5x2", "cliques-w1"],
        ["| 1x500x2", "cliques-w1"],
        ["| 1000x5x2", "cliques-w1"],
    ]
    assert lines[-1] == (
        "| 1000x5x2 | cliques-w1 | 1 | 400.0 | 50.00 | 5.00 | 5.80 | 47.0 | 95 | 30.0 "
        "| 0.40 s in 10 s (idle: 0.30) | 2 |"
    )


def test_a_run_without_steady_state_or_a_ready_milestone_leaves_those_cells_empty() -> None:
    run = full_run("lws", 10.0, 100.0, 0.0)
    run["phases"] = [p for p in run["phases"] if p["phase"] == "available"]
    (point,) = curves.points([doc(1000, run)])["lws"]
    assert point.ready_s is None and point.noop_ms_per_set is None
    assert point.settle_kcm_cpu_s is None
    assert curves.table({"lws": [point]}).splitlines()[-1] == (
        "| 1x500x2 | lws | 1 |  | 10.00 | 10.00 | 18.00 | 47.0 | 90 |  |  | 0 |"
    )


def test_the_plane_table_shows_the_deploys_work_and_leaves_out_runs_without_it() -> None:
    found = curves.points(
        [
            doc(1000, full_run("cliques-w1", 4.0, 30.0, 0.010)),
            doc(1000, full_run("lws", 12.0, 60.0, 0.040, work=False)),
        ]
    )
    assert found["cliques-w1"][0].plane == {
        "writes": 4000,
        "write bytes": 6_500_000,
        "watch events": 30000,
        "watch bytes": 120_000_000,
        "writes endpointslices": 150,
        "watch events pods": 21000,
    }
    lines = curves.plane_table(found).splitlines()
    assert lines[0].startswith("| shape | operator | writes | per pod | written, MB |")
    assert lines[2:] == [
        "| 1x500x2 | cliques-w1 | 4000 | 4.0 | 6.5 | 30000 | 30.0 | 21000 | 120 | 150 |"
    ]
    assert curves.plane_table({"lws": found["lws"]}) == ""


def test_a_file_may_lend_only_some_operators_to_the_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cliques.cli import main

    old = report.save(
        doc(1000, deploy_run("cliques-w1", 9.0, 50.0), deploy_run("lws", 1.0, 60.0)),
        tmp_path,
        "old",
    )
    new = report.save(doc(1000, deploy_run("cliques-w1", 2.0, 40.0)), tmp_path, "new")
    out = tmp_path / "curves.png"
    assert main(["bench", "plot", f"{old}:lws", str(new), "-o", str(out)]) == 0
    rows = [r for r in capsys.readouterr().out.splitlines() if r.startswith("| 1x500x2")]
    assert [r.split(" | ")[1] for r in rows] == ["cliques-w1", "lws"]
    assert "| cliques-w1 | 1 |  | 2.00 |" in rows[0], "the old file's cliques run is left out"
    assert main(["bench", "plot", f"{tmp_path / 'none.json'}:lws", "-o", str(out)]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("busy", "says"),
    [(12.4, "; idle from 12 s"), (39.6, "; still busy at 40 s"), (0.0, "; idle from 0 s")],
)
def test_the_table_says_when_the_controller_manager_settled(busy: float, says: str) -> None:
    run = full_run("cliques-w1", 4.0, 30.0, 0.010)
    steady = run["phases"][-1]["extra"]
    steady["kcm_busy_until"], steady["kcm_sampled_until"] = busy, 40.0
    line = curves.table(curves.points([doc(1000, run)])).splitlines()[-1]
    assert line.endswith(f"| 0.40 s in 10 s (idle: 0.30){says} | 0 |")
