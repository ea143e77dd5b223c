"""The benchmark report: rounds folded into medians, the table, the targets, `report`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cliques_lab.bench import report


def phase(name: str, wall: float, cpu: float, **kw: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "phase": name,
        "wall": wall,
        "cpu": cpu,
        "rss_peak_mib": 100.0,
        "api": {"POST 201": 10},
        "spurious_creates": 0,
        "spurious_deletes": 0,
        "replaced": 0,
        "extra": {},
        "completed": True,
    }
    out.update(kw)
    return out


def run(operator: str, rnd: int, cpu: float, *, error: str = "", **kw: Any) -> dict[str, Any]:
    return {
        "operator": operator,
        "round": rnd,
        "phases": [] if error else [phase("pods-ready", 20.0 + rnd, cpu, **kw)],
        "cpu_timeline": [],
        "rss_by_process": {},
        "error": error,
        "log": f"/tmp/{operator}-{rnd}.log",
    }


def test_summarize_takes_medians_ranges_and_worst_counts() -> None:
    runs = [
        run("cliques-w1", 1, 3.0),
        run("kopf", 1, 15.0),
        run("cliques-w1", 2, 4.0, spurious_creates=1),
        run("kopf", 2, 18.0),
        run("cliques-w1", 3, 3.2, completed=False),
        run("kopf", 3, 14.0),
    ]
    summary = report.summarize(runs)
    assert [s["operator"] for s in summary] == ["cliques-w1", "kopf"]
    cq = summary[0]
    assert cq["rounds"] == 3 and cq["failed_rounds"] == 0
    ready = cq["phases"][0]
    assert ready["cpu"] == 3.2 and ready["cpu_range"] == [3.0, 4.0]
    assert ready["wall"] == 22.0 and ready["wall_range"] == [21.0, 23.0]
    assert ready["spurious_creates"] == 1, "a spurious create in any round counts"
    assert ready["completed"] is False, "a phase that timed out in any round did not complete"
    assert summary[1]["phases"][0]["cpu"] == 15.0
    # the kopf ratio is judged on the medians: 15.0 / 3.2
    verdicts = {t: met for op, t, met in report.targets(summary, 1000) if "kopf" in t}
    assert verdicts == {"pods-ready: >= 5x less CPU than kopf (got 4.7x)": False}
    # with the rounds, each round's ratio too: 15/3.0, 18/4.0, 14/3.2
    verdicts = {t: met for op, t, met in report.targets(summary, 1000, runs) if "kopf" in t}
    assert verdicts == {"pods-ready: >= 5x less CPU than kopf (got 4.7x; rounds 4.4-5.0x)": False}


def test_failed_rounds_are_left_out_and_counted() -> None:
    summary = report.summarize(
        [run("cliques-w1", 1, 3.0), run("cliques-w1", 2, 0.0, error="crashed")]
    )
    assert summary[0]["rounds"] == 1 and summary[0]["failed_rounds"] == 1
    assert summary[0]["phases"][0]["cpu"] == 3.0 and summary[0]["error"] == ""
    only_failed = report.summarize([run("kopf", 1, 0.0, error="crashed")])
    assert only_failed[0]["error"] == "crashed" and only_failed[0]["phases"] == []


def test_markdown_shows_the_range_of_several_rounds_only() -> None:
    one = report.markdown([run("cliques-w1", 1, 3.0)])
    assert "| cliques-w1 | pods-ready | 21.0 | - | 3.00 |" in one
    many = report.markdown(report.summarize([run("cliques-w1", 1, 3.0), run("cliques-w1", 2, 4.0)]))
    assert "| cliques-w1 | pods-ready | 21.5 (21.0-22.0) | - | 3.50 (3.00-4.00) |" in many


def test_compare_reads_the_summary_of_a_repeated_run(tmp_path: Path) -> None:
    runs = [run("cliques-w1", 1, 3.0), run("cliques-w1", 2, 5.0)]
    doc = {
        "kind": "scale",
        "shape": "1x500x2",
        "started": "2026-11-22T15:00:00+00:00",
        "repeat": 2,
        "runs": runs,
        "summary": report.summarize(runs),
    }
    path = tmp_path / "scale.json"
    path.write_text(json.dumps(doc))
    text = report.compare([path])
    assert "median of 2 rounds" in text
    assert "4.00 (3.00-5.00)" in text


def test_save_replaces_the_file_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    doc = {"kind": "scale", "shape": "1x1x1", "runs": [run("cliques-w1", 1, 1.0)]}
    path = report.save(doc, tmp_path, "scale-x")
    doc["runs"].append(run("kopf", 1, 5.0))
    assert report.save(doc, tmp_path, "scale-x") == path
    assert json.loads(path.read_text())["runs"][1]["operator"] == "kopf"
    assert [p.name for p in tmp_path.iterdir()] == ["scale-x.json"]


def test_compare_marks_an_interrupted_run_as_partial(tmp_path: Path) -> None:
    doc = {
        "kind": "scale",
        "shape": "1x2x2",
        "complete": False,
        "runs": [run("cliques-w1", 1, 1.0), run("kopf", 1, 0.0, error="interrupted by SIGTERM")],
    }
    text = report.compare([report.save(doc, tmp_path, "scale-partial")])
    assert "(partial: the run was interrupted)" in text
    assert "| kopf | **failed**: interrupted by SIGTERM |" in text


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "not JSON"),
        ("[1, 2]", "not a result file of cliques bench"),
        ('{"kind": "scale"}', "a scale result without its 'runs'"),
        (b"\xff\xfe", "cannot read it"),
    ],
)
def test_files_that_are_not_results_are_refused_with_the_reason(
    tmp_path: Path, content: str | bytes, message: str
) -> None:
    path = tmp_path / "x.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(report.BadResults, match=message):
        report.compare([path])


def test_bench_report_exits_2_on_a_bad_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cliques.cli import main

    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main(["bench", "report", str(bad)]) == 2
    assert capsys.readouterr().err.startswith(f"cliques bench report: {bad}: not JSON")


def test_markdown_shows_the_control_planes_cpu_when_measured() -> None:
    measured = run("cliques-w1", 1, 3.0)
    measured["phases"][0]["extra"] = {
        "cpu_control_plane": 12.5,
        "cpu_kube-controller-manager": 4.25,
        "cpu_operator_and_kcm": 7.25,
    }
    table = report.markdown([measured])
    assert "| cliques-w1 | pods-ready | 21.0 | - | 3.00 | 7.25 | 12.50 (kcm 4.25) |" in table
    assert "| cliques-w1 | pods-ready | 21.0 | - | 3.00 |  |  |" in report.markdown(
        [run("cliques-w1", 1, 3.0)]
    )


def scale_doc(operators: dict[str, str | None], pods: int = 4) -> dict[str, Any]:
    """A saved scale run whose operators ran pod templates of the given hashes."""
    runs = []
    for name, digest in operators.items():
        r = run(name, 1, 1.0)
        if digest is not None:
            r["pod_template_hash"] = digest
        runs.append(r)
    doc: dict[str, Any] = {"kind": "scale", "shape": f"1x{pods // 2}x2", "runs": runs}
    digests = {d for d in operators.values() if d is not None}
    if len(digests) == 1:
        doc["pod_template_hash"] = digests.pop()
    return doc


def test_report_refuses_runs_whose_pod_templates_differ(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cliques.cli import main

    same_a = report.save(scale_doc({"cliques-w1": "aaaa"}), tmp_path, "a")
    same_b = report.save(scale_doc({"lws": "aaaa"}), tmp_path, "b")
    other = report.save(scale_doc({"lws": "bbbb"}), tmp_path, "c")
    mixed = report.save(scale_doc({"cliques-w1": "aaaa", "lws": "bbbb"}), tmp_path, "d")
    assert "| lws | pods-ready |" in report.compare([same_a, same_b])
    with pytest.raises(report.BadResults, match="different pod templates"):
        report.compare([same_a, other])
    with pytest.raises(report.BadResults, match="its operators ran different pod templates"):
        report.compare([mixed])
    assert main(["bench", "report", str(same_a), str(other)]) == 2
    assert "not put side by side" in capsys.readouterr().err


def test_a_run_without_a_template_hash_is_shown_with_a_note(tmp_path: Path) -> None:
    old = report.save(scale_doc({"cliques-w1": None}), tmp_path, "old")
    new = report.save(scale_doc({"lws": "aaaa"}), tmp_path, "new")
    text = report.compare([old, new])
    assert "note: old.json: no pod-template hash recorded" in text
    assert "| cliques-w1 | pods-ready |" in text and "| lws | pods-ready |" in text


@pytest.mark.parametrize("count", [1, 4])
def test_the_timeline_legend_stays_clear_of_the_axis_label(count: int) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    phases = ["pods-created", "pods-ready", "available", "steady-state", "delete"]
    runs = [
        {
            "operator": f"op{i}",
            "phases": [{"phase": p, "wall": 1.0 + j} for j, p in enumerate(phases)],
        }
        for i in range(count)
    ]
    fig = report.timeline_figure({"shape": "1x2x2"}, runs, [r["operator"] for r in runs])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    (legend,) = fig.legends
    label = fig.axes[0].xaxis.label.get_window_extent(renderer)
    box = legend.get_window_extent(renderer)
    assert not box.overlaps(label)
    assert box.y1 <= label.y0  # below it, inside the figure
    assert box.y0 >= 0
    plt.close(fig)


def test_the_request_targets_count_the_operators_own_deletes_and_every_conflict() -> None:
    steady = phase(
        "steady-state",
        30.0,
        0.1,
        api={"PATCH 200": 1, "WATCH 200": 1, "LIST 200": 1},  # the bench's own
        extra={"reconciles": 1.0, "reconciles cliqueset": 1.0, "noop_cpu_per_set": 0.001},
    )
    roll = phase(
        "rolling-update",
        50.0,
        5.0,
        api={"DELETE 200": 2000, "POST 201": 1000},  # the fake kubelets' final deletes too
        replaced=1000,
        extra={"requests": 5000.0, "requests delete pods": 1000.0, "requests create pods": 1000.0},
    )
    summary = [{"operator": "cliques-w1", "phases": [steady, roll], "error": ""}]

    def verdicts(runs: list[dict[str, Any]]) -> dict[str, bool]:
        found = report.targets(runs, 1000, gangs=500, sets=1)
        return {t: met for op, t, met in found if "steady state" in t or "rolling" in t}

    assert verdicts(summary) == {
        "steady state: 0 requests from the operator (got 0)": True,
        "steady state: 0 requests from any client but the bench (its 1 no-op PATCH, its "
        "lists and watches; got 0)": True,
        "rolling update: <= 1 DELETE per replaced pod, + 1 per gang (got 1000 of pods and 0 "
        "else for 1000 pods, 500 gangs)": True,
        "rolling update: 0 conflicts (got 0 from the operator, 0 from every client)": True,
    }
    # a GET by anyone in the steady window, a pod deleted twice, a 409 drawn by a client
    steady["api"]["GET 200"] = 613
    steady["extra"] |= {"requests": 2.0, "requests get pods": 2.0}
    roll["api"]["DELETE 409"] = 1000
    roll["extra"] |= {"requests delete pods": 2000.0, "answered 409": 1000.0}
    assert verdicts(summary) == {
        "steady state: 0 requests from the operator (got 2)": False,
        "steady state: 0 requests from any client but the bench (its 1 no-op PATCH, its "
        "lists and watches; got 613)": False,
        "rolling update: <= 1 DELETE per replaced pod, + 1 per gang (got 2000 of pods and 0 "
        "else for 1000 pods, 500 gangs)": False,
        "rolling update: 0 conflicts (got 1000 from the operator, 1000 from every client)": False,
    }
    # a gang's group object deleted with it is allowed, one per gang
    roll["extra"] = {"requests": 5500.0, "requests delete pods": 1000.0}
    roll["extra"]["requests delete podgroups"] = 500.0
    assert verdicts(summary)[
        "rolling update: <= 1 DELETE per replaced pod, + 1 per gang (got 1000 of pods and 500 "
        "else for 1000 pods, 500 gangs)"
    ]
