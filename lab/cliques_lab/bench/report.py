"""Benchmark output: a Markdown table a person reads, JSON a later run compares against,
PNG plots to look at, and the target check of the scale benchmark. With several rounds
(`--repeat`), `summarize` folds each operator's rounds into one run of medians, which the
table and the targets then use."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from cliques_lab.bench import capacity_plot

PHASES = (
    "pods-created",
    "pods-ready",
    "available",
    "steady-state",
    "rolling-update",
    "in-place-update",
    "gang-crash",
    "reorder-apply",
    "delete",
)
#: The phases `cliques bench scale --skip` may leave out; every run measures the deploy.
SKIPPABLE = ("steady-state", "rolling-update", "in-place-update", "reorder-apply", "delete")


def _api_summary(api: dict[str, int]) -> tuple[int, int, int]:
    total = sum(api.values())
    conflicts = sum(n for k, n in api.items() if k.endswith(" 409"))
    throttled = sum(n for k, n in api.items() if k.endswith(" 429"))
    return total, conflicts, throttled


def summarize(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One run per operator, in first-seen order, from all its rounds: per phase the median
    wall time, CPU, peak RSS, API counts and extra figures (with the min-max range of wall
    and CPU), the worst spurious and replaced counts, and `completed` only if every round
    completed. Rounds that failed are left out and counted in `failed_rounds`."""
    order: list[str] = []
    by_op: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        if run["operator"] not in by_op:
            order.append(run["operator"])
            by_op[run["operator"]] = []
        by_op[run["operator"]].append(run)
    out = []
    for name in order:
        rounds = by_op[name]
        good = [r for r in rounds if not r.get("error")]
        summary: dict[str, Any] = {
            "operator": name,
            "rounds": len(good),
            "failed_rounds": len(rounds) - len(good),
            "phases": [],
            "cpu_timeline": [],
            "rss_by_process": {},
            "error": "" if good else rounds[-1].get("error", "failed"),
            "log": rounds[-1].get("log", ""),
        }
        for phase in PHASES:
            seen = [p for r in good if (p := _phase(r, phase)) is not None]
            if seen:
                summary["phases"].append(_median_phase(phase, seen))
        out.append(summary)
    return out


def _median_phase(phase: str, seen: list[dict[str, Any]]) -> dict[str, Any]:
    def med(values: list[float]) -> float:
        return float(statistics.median(values))

    api_keys = sorted({k for p in seen for k in p["api"]})
    extra_keys = sorted({k for p in seen for k in p["extra"]})
    return {
        "phase": phase,
        "wall": med([p["wall"] for p in seen]),
        "cpu": med([p["cpu"] for p in seen]),
        "wall_range": [min(p["wall"] for p in seen), max(p["wall"] for p in seen)],
        "cpu_range": [min(p["cpu"] for p in seen), max(p["cpu"] for p in seen)],
        "rss_peak_mib": med([p["rss_peak_mib"] for p in seen]),
        "api": {k: round(med([p["api"].get(k, 0) for p in seen])) for k in api_keys},
        "spurious_creates": max(p["spurious_creates"] for p in seen),
        "spurious_deletes": max(p["spurious_deletes"] for p in seen),
        "replaced": max(p["replaced"] for p in seen),
        "extra": {k: med([p["extra"].get(k, 0.0) for p in seen]) for k in extra_keys},
        "completed": all(p["completed"] for p in seen),
        "rounds": len(seen),
        "time_to_serve": _median_or_none([p.get("time_to_serve") for p in seen]),
    }


def _median_or_none(values: list[float | None]) -> float | None:
    """The median of the rounds' values, None unless every round has one."""
    if not values or any(v is None for v in values):
        return None
    return float(statistics.median([v for v in values if v is not None]))


def _span(ph: dict[str, Any], key: str, fmt: str) -> str:
    """`value`, or `value (min-max)` for a phase summarized from several rounds."""
    text = format(ph[key], fmt)
    rng = ph.get(f"{key}_range")
    if rng and ph.get("rounds", 1) > 1:
        text += f" ({format(rng[0], fmt)}-{format(rng[1], fmt)})"
    return text


def markdown(runs: list[dict[str, Any]]) -> str:
    """The table: per operator and phase, the operator's CPU and, beside it, the operator's
    plus the controller-manager's (the one that creates the pods of StatefulSets)."""
    head = (
        "| operator | phase | wall s | serve s | CPU s | CPU s with kcm | control plane CPU s | "
        "peak RSS MiB | API req | 409 | 429 | spurious +/- | replaced |"
    )
    rows = [head, "|" + "---|" * 13]
    for run in runs:
        if run.get("error"):
            rows.append(f"| {run['operator']} | **failed**: {run['error'][:80]} ||||||||||||")
        for ph in run["phases"]:
            total, c409, c429 = _api_summary(ph["api"])
            wall = _span(ph, "wall", ".1f") + ("" if ph["completed"] else " (timeout)")
            rows.append(
                f"| {run['operator']} | {ph['phase']} | {wall} | {_serve(ph)} | "
                f"{_span(ph, 'cpu', '.2f')} | "
                f"{_with_kcm(ph)} | {_plane(ph)} | {ph['rss_peak_mib']:.0f} | {total} | "
                f"{c409} | {c429} | "
                f"{ph['spurious_creates']}/{ph['spurious_deletes']} | {ph['replaced']} |"
            )
    return "\n".join(rows)


def _serve(ph: dict[str, Any]) -> str:
    """Time to serve: every gang whole and Ready on the phase's template ("-" when that did
    not happen within the phase or was not measured)."""
    value = ph.get("time_to_serve")
    return "-" if value is None else f"{value:.1f}"


def _with_kcm(ph: dict[str, Any]) -> str:
    """The operator's CPU plus the controller-manager's ("" when not measured)."""
    value = ph.get("extra", {}).get("cpu_operator_and_kcm")
    return "" if value is None else f"{value:.2f}"


def _plane(ph: dict[str, Any]) -> str:
    """The control plane's CPU over the phase, with the controller-manager's share ("" when
    the cluster's processes were not measured, e.g. a cluster given by --kubeconfig)."""
    extra = ph.get("extra", {})
    if "cpu_control_plane" not in extra:
        return ""
    kcm = extra.get("cpu_kube-controller-manager", 0.0)
    return f"{extra['cpu_control_plane']:.2f} (kcm {kcm:.2f})"


def _phase(run: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((p for p in run["phases"] if p["phase"] == name), None)


def _round_ratios(rounds: list[dict[str, Any]], operator: str, phase: str) -> list[float]:
    """kopf's CPU over `operator`'s in `phase`, round by round (rounds both completed)."""
    out = []
    for run in rounds:
        if run["operator"] != operator or run.get("error"):
            continue
        mine = _phase(run, phase)
        kopf = next(
            (
                r
                for r in rounds
                if r["operator"] == "kopf"
                and r.get("round") == run.get("round")
                and not r.get("error")
            ),
            None,
        )
        theirs = _phase(kopf, phase) if kopf is not None else None
        if mine is not None and theirs is not None and mine["cpu"] > 0:
            out.append(theirs["cpu"] / mine["cpu"])
    return out


def _own(ph: dict[str, Any], key: str) -> int:
    """One of the operator's own counters over a phase (`opmetrics`), 0 when absent."""
    value: float = ph["extra"].get(key, 0.0)
    return round(value)


def _requests_targets(
    name: str, steady: dict[str, Any] | None, roll: dict[str, Any] | None, gangs: int, sets: int
) -> list[tuple[str, str, bool]]:
    """The operator's requests: none in the steady state (the bench's own annotation of
    each set, one PATCH per set, and its observer's lists and watches are the only requests
    the API server may count there), and in the replacing roll one DELETE per replaced pod
    (plus one per gang, for the gang's group objects) and no 409 from any client. Judged
    only where the operator's own counters were read (their figures in the phase's extra)."""
    out: list[tuple[str, str, bool]] = []
    if steady is not None and "reconciles" in steady["extra"]:  # the no-op's, so read
        own = _own(steady, "requests")
        out.append((name, f"steady state: 0 requests from the operator (got {own})", own == 0))
        own_verbs = ("WATCH ", "LIST ")  # the bench's observer's, beside its PATCH per set
        api = steady["api"]
        others = sum(n for k, n in api.items() if not k.startswith(own_verbs)) - sets
        out.append(
            (
                name,
                f"steady state: 0 requests from any client but the bench (its {sets} no-op "
                f"PATCH, its lists and watches; got {others})",
                others <= 0,
            )
        )
    if roll is not None and roll["replaced"] and "requests" in roll["extra"]:
        pods = _own(roll, "requests delete pods")
        every = sum(round(v) for k, v in roll["extra"].items() if k.startswith("requests delete "))
        replaced = roll["replaced"]
        out.append(
            (
                name,
                f"rolling update: <= 1 DELETE per replaced pod, + 1 per gang (got {pods} of "
                f"pods and {every - pods} else for {replaced} pods, {gangs} gangs)",
                pods <= replaced and every <= replaced + gangs,
            )
        )
        mine = _own(roll, "answered 409")
        seen = _api_summary(roll["api"])[1]
        out.append(
            (
                name,
                f"rolling update: 0 conflicts (got {mine} from the operator, {seen} from every "
                "client)",
                mine == 0 and seen == 0,
            )
        )
    return out


def targets(
    runs: list[dict[str, Any]],
    total_pods: int,
    rounds: list[dict[str, Any]] | None = None,
    *,
    gangs: int = 0,
    sets: int = 1,
) -> list[tuple[str, str, bool]]:
    """(operator, target, met) for every cliques run against the issue's targets. With
    `rounds` (every round of a repeated run; `runs` is then their summary), a kopf ratio
    also gives the range of its round-by-round values. `gangs` and `sets`: the shape's
    gangs in all and CliqueSets."""
    out: list[tuple[str, str, bool]] = []
    kopf = next((r for r in runs if r["operator"] == "kopf" and not r.get("error")), None)
    for run in runs:
        if not run["operator"].startswith("cliques") or run.get("error"):
            continue
        name = run["operator"]
        ready = _phase(run, "pods-ready")
        avail = _phase(run, "available")
        steady = _phase(run, "steady-state")
        reorder = _phase(run, "reorder-apply")
        if ready:
            out.append(
                (
                    name,
                    f"{total_pods} pods Ready <= 60 s (got {ready['wall']:.1f} s)",
                    ready["completed"] and ready["wall"] <= 60,
                )
            )
        if avail:
            out.append((name, f"deploy CPU <= 5 s (got {avail['cpu']:.2f} s)", avail["cpu"] <= 5))
        if steady:
            noop = steady["extra"].get("noop_cpu_per_set", 0.0) * 1000
            out.append(
                (name, f"no-op reconcile CPU <= 50 ms per set (got {noop:.1f} ms)", noop <= 50)
            )
        out += _requests_targets(name, steady, _phase(run, "rolling-update"), gangs, sets)
        spurious = sum(p["spurious_creates"] + p["spurious_deletes"] for p in run["phases"])
        out.append((name, f"zero spurious creates/deletes (got {spurious})", spurious == 0))
        if reorder:
            out.append(
                (
                    name,
                    f"re-order-only apply replaces 0 pods (got {reorder['replaced']})",
                    reorder["replaced"] == 0,
                )
            )
        if kopf is not None:
            for ph in run["phases"]:
                other = _phase(kopf, ph["phase"])
                if other is None or ph["phase"] == "steady-state":
                    continue
                ratio = other["cpu"] / ph["cpu"] if ph["cpu"] > 0 else float("inf")
                each = _round_ratios(rounds or [], name, ph["phase"])
                spread = f"; rounds {min(each):.1f}-{max(each):.1f}x" if len(each) > 1 else ""
                out.append(
                    (
                        name,
                        f"{ph['phase']}: >= 5x less CPU than kopf (got {ratio:.1f}x{spread})",
                        ratio >= 5,
                    )
                )
    return out


def save(doc: dict[str, Any], out_dir: Path, stem: str) -> Path:
    """Write `doc` as `out_dir/stem.json`, atomically: the benchmark saves after every
    operator, so a run killed while writing must leave the previous file whole."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{stem}.json"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(path)
    return path


class BadResults(Exception):
    """A file given to `cliques bench report` is not a saved benchmark run."""


def load(path: Path) -> dict[str, Any]:
    """A saved run, or BadResults saying why the file is not one."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise BadResults(f"{path}: cannot read it: {exc}") from None
    except json.JSONDecodeError as exc:
        raise BadResults(f"{path}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or "kind" not in doc:
        raise BadResults(f"{path}: not a result file of cliques bench (no 'kind')")
    if doc["kind"] == "scale" and not isinstance(doc.get("runs"), list):
        raise BadResults(f"{path}: a scale result without its 'runs'")
    return doc


def plots(doc: dict[str, Any], out_dir: Path, stem: str) -> list[Path]:
    """Phase timeline per operator, and operator CPU over time. Needs matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    runs = [r for r in doc["runs"] if r["phases"]]
    many = doc.get("repeat", 1) > 1
    names = [r["operator"] + (f" #{r.get('round', 1)}" if many else "") for r in runs]
    paths = []
    fig = timeline_figure(doc, runs, names)
    p = out_dir / f"{stem}-timeline.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    paths.append(p)

    fig, ax = plt.subplots(figsize=(10, 4))
    for run, name in zip(runs, names, strict=True):
        tl = run["cpu_timeline"]
        if tl:
            ax.plot([t for t, _ in tl], [c for _, c in tl], label=name)
    ax.set_xlabel("seconds since the operator started")
    ax.set_ylabel("operator CPU seconds (cumulative)")
    ax.set_title(f"operator CPU over the run ({doc['shape']})")
    ax.legend()
    fig.tight_layout()
    p = out_dir / f"{stem}-cpu.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    paths.append(p)
    return paths + capacity_plot.plots(doc, out_dir, stem)


def timeline_figure(doc: dict[str, Any], runs: list[dict[str, Any]], names: list[str]) -> Any:
    """The phase timeline of `runs` (a matplotlib Figure): a bar per run, a colour per
    phase, the legend below the axes and their label."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 2 + 0.6 * max(1, len(runs))), layout="constrained")
    colors = plt.get_cmap("tab10")
    for y, run in enumerate(runs):
        start = 0.0
        deploy_end = 0.0
        for i, ph in enumerate(run["phases"]):
            if ph["phase"] in ("pods-created", "pods-ready", "available"):
                left, width = deploy_end, ph["wall"] - deploy_end
                deploy_end = ph["wall"]
                start = deploy_end
            else:
                left, width = start, ph["wall"]
                start += ph["wall"]
            ax.barh(
                y,
                width,
                left=left,
                color=colors(i % 10),
                edgecolor="white",
                label=ph["phase"] if y == 0 else None,
            )
    ax.set_yticks(range(len(runs)), names)
    ax.set_xlabel("seconds")
    ax.set_title(f"cliques bench scale {doc['shape']}: phases")
    fig.legend(ncol=4, fontsize="small", loc="outside lower center")
    return fig


def template_hashes(doc: dict[str, Any]) -> set[str]:
    """The pod-template hashes a saved run records (its own and each operator's); empty for
    a run saved before they were recorded."""
    found = {doc["pod_template_hash"]} if doc.get("pod_template_hash") else set()
    found |= {r["pod_template_hash"] for r in doc.get("runs", []) if r.get("pod_template_hash")}
    return found


def check_comparable(docs: list[tuple[Path, dict[str, Any]]]) -> list[str]:
    """Raise BadResults when the runs' workloads have different pod templates (their
    operators did not schedule the same pods); return a note per run without a hash."""
    seen: dict[str, Path] = {}
    notes = []
    for path, doc in docs:
        if doc.get("kind") != "scale":
            continue
        hashes = template_hashes(doc)
        if len(hashes) > 1:
            raise BadResults(f"{path}: its operators ran different pod templates {sorted(hashes)}")
        if not hashes:
            notes.append(f"{path.name}: no pod-template hash recorded (an older run): not checked")
        for h in hashes:
            seen.setdefault(h, path)
    if len(seen) > 1:
        which = ", ".join(f"{p.name} {h}" for h, p in seen.items())
        raise BadResults(
            f"the runs' workloads have different pod templates ({which}): their operators did "
            "not schedule the same pods, so they are not put side by side"
        )
    return notes


def compare(paths: list[Path]) -> str:
    """`cliques bench report`: saved runs side by side (refused if their pod templates
    differ)."""
    docs = [(path, load(path)) for path in paths]
    notes = check_comparable(docs)
    blocks = [f"note: {n}" for n in notes]
    for path, doc in docs:
        if doc.get("kind") != "scale":
            blocks.append(f"## {path.name}\n\n(not a scale run: kind={doc.get('kind')!r})")
            continue
        rounds = doc.get("repeat", 1)
        title = f"## {path.name}: shape {doc['shape']}, {doc.get('started', '?')}"
        if rounds > 1:
            title += f", median of {rounds} rounds (min-max)"
        if doc.get("complete") is False:
            title += " (partial: the run was interrupted)"
        blocks.append(title + "\n\n" + markdown(doc.get("summary") or doc["runs"]))
    return "\n\n".join(blocks)
