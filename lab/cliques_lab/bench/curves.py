"""Cost curves across saved scale runs (`cliques bench plot`): each operator's deploy CPU per
pod (its own, and with the controller-manager's) and peak RSS against the number of pods, and
a Markdown table per shape beside them (time to Ready, the control plane's CPU, the no-op
reconcile, how fast the control plane settles, spurious writes). One set of many gangs and
many sets of a few gangs are different curves: an operator that is cheap per gang may still
pay per set. The points are pure data; only `draw` needs matplotlib (the `bench` extra)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cliques_lab.bench.workload import Shape

#: The control plane a user's cluster runs, whatever the nodes are: the kwok controller
#: (the fake kubelets) is left out of it.
CONTROL_PLANE = ("kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler")


@dataclass(frozen=True)
class Point:
    """One operator at one shape: the median over the runs (files, rounds) of that shape."""

    shape: str
    pods: int
    cpu_ms_per_pod: float  # the operator's CPU from the apply to every set Available
    cpu_with_kcm_ms_per_pod: float | None  # plus the controller-manager's (dev cluster only)
    rss_peak_mib: float  # the operator's highest peak RSS over the phases
    ready_s: float | None = None  # apply to every pod Ready
    deploy_cpu_s: float = 0.0  # the operator's CPU, apply to Available
    control_plane_cpu_s: float | None = None  # CONTROL_PLANE's CPU over the same deploy
    noop_ms_per_set: float | None = None  # the no-op reconcile of the steady state, per set
    settle_kcm_cpu_s: float | None = None  # controller-manager CPU in the window after Available
    settle_window_s: float | None = None
    idle_kcm_cpu_per_s: float | None = None  # its rate before the apply, when measured
    #: seconds after Available the controller-manager was last busy (above
    #: `procstats.SETTLED_RATE`), and how long it was watched (busy at the end: not settled)
    kcm_busy_until_s: float | None = None
    kcm_sampled_s: float | None = None
    spurious: int = 0  # creates and deletes no correct operator makes, over every phase
    runs: int = 1
    #: what the deploy made the API server do, from every client (`PLANE` keys), when known
    plane: dict[str, float] | None = None


#: The deploy's control-plane work the second table shows (bench.apimetrics keys).
PLANE = (
    "writes",
    "write bytes",
    "watch events",
    "watch bytes",
    "writes endpointslices",
    "watch events pods",
)


def _phase(run: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((p for p in run["phases"] if p["phase"] == name), None)


def line_name(operator: str, shape: str) -> str:
    """The curve a run belongs to: the operator, and for shapes of many sets the gangs per
    set (`cliques-w1 [sets of 5 gangs]`), which is a curve of its own."""
    try:
        parsed = Shape.parse(shape)
    except ValueError:
        return operator
    return operator if parsed.sets == 1 else f"{operator} [sets of {parsed.gangs} gangs]"


@dataclass
class _Sample:
    cpu: float
    kcm: float | None
    rss: float
    ready: float | None
    plane: float | None
    noop: float | None
    settle: float | None
    window: float | None
    idle: float | None
    busy: float | None
    sampled: float | None
    spurious: int
    work: dict[str, float] | None


def _sample(run: dict[str, Any], pods: int) -> _Sample | None:
    deploy = _phase(run, "available")
    if run.get("error") or deploy is None or not deploy["completed"]:
        return None
    extra = deploy.get("extra", {})
    kcm = extra.get("cpu_operator_and_kcm")
    plane = [extra[f"cpu_{c}"] for c in CONTROL_PLANE if f"cpu_{c}" in extra]
    ready = _phase(run, "pods-ready")
    steady = _phase(run, "steady-state")
    steady_extra = steady.get("extra", {}) if steady else {}
    noop = steady_extra.get("noop_cpu_per_set")
    return _Sample(
        cpu=deploy["cpu"],
        kcm=kcm,
        rss=max(p["rss_peak_mib"] for p in run["phases"]),
        ready=ready["wall"] if ready and ready["completed"] else None,
        plane=sum(plane) if len(plane) == len(CONTROL_PLANE) else None,
        noop=None if noop is None else noop * 1000,
        settle=steady_extra.get("settle_cpu_kube-controller-manager"),
        window=steady_extra.get("settle_window"),
        idle=extra.get("idle_cpu_kube-controller-manager"),
        busy=steady_extra.get("kcm_busy_until"),
        sampled=steady_extra.get("kcm_sampled_until"),
        spurious=sum(
            p.get("spurious_creates", 0) + p.get("spurious_deletes", 0) for p in run["phases"]
        ),
        work=({k: extra.get(f"plane {k}", 0) for k in PLANE} if "plane writes" in extra else None),
    )


def _median(values: list[float | None]) -> float | None:
    seen = [v for v in values if v is not None]
    return statistics.median(seen) if seen else None


def _median_plane(seen: list[dict[str, float] | None]) -> dict[str, float] | None:
    known = [p for p in seen if p is not None]
    if not known:
        return None
    return {k: statistics.median(p[k] for p in known) for k in PLANE}


def points(docs: list[dict[str, Any]]) -> dict[str, list[Point]]:
    """Per curve (`line_name`), its points sorted by pods. A run counts when its deploy
    completed; several of one shape (rounds, files) give their median, and the worst
    spurious count."""
    samples: dict[str, dict[tuple[int, str], list[_Sample]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for doc in docs:
        if doc.get("kind") != "scale":
            continue
        pods = int(doc["total_pods"])
        shape = str(doc.get("shape", ""))
        for run in doc["runs"]:  # every round, not the summary: the median is taken here
            got = _sample(run, pods)
            if got is not None:
                samples[line_name(run["operator"], shape)][(pods, shape)].append(got)
    out: dict[str, list[Point]] = {}
    for line, by_shape in samples.items():
        row = []
        for (pods, shape), seen in sorted(by_shape.items()):

            def med(get: Callable[[_Sample], float | None], seen: list[_Sample] = seen) -> Any:
                return _median([get(s) for s in seen])

            kcm = med(lambda s: s.kcm)
            row.append(
                Point(
                    shape=shape,
                    pods=pods,
                    cpu_ms_per_pod=med(lambda s: s.cpu) * 1000 / pods,
                    cpu_with_kcm_ms_per_pod=None if kcm is None else kcm * 1000 / pods,
                    rss_peak_mib=med(lambda s: s.rss),
                    ready_s=med(lambda s: s.ready),
                    deploy_cpu_s=med(lambda s: s.cpu),
                    control_plane_cpu_s=med(lambda s: s.plane),
                    noop_ms_per_set=med(lambda s: s.noop),
                    settle_kcm_cpu_s=med(lambda s: s.settle),
                    settle_window_s=med(lambda s: s.window),
                    idle_kcm_cpu_per_s=med(lambda s: s.idle),
                    kcm_busy_until_s=med(lambda s: s.busy),
                    kcm_sampled_s=med(lambda s: s.sampled),
                    spurious=max(s.spurious for s in seen),
                    runs=len(seen),
                    plane=_median_plane([s.work for s in seen]),
                )
            )
        out[line] = row
    return out


def _num(value: float | None, fmt: str) -> str:
    return "" if value is None else format(value, fmt)


def _settled(p: Point) -> str:
    """When the controller-manager settled after Available, as the table says it."""
    if p.kcm_busy_until_s is None or p.kcm_sampled_s is None:
        return ""
    if p.kcm_busy_until_s >= p.kcm_sampled_s - 1.0:
        return f"; still busy at {p.kcm_sampled_s:.0f} s"
    return f"; idle from {p.kcm_busy_until_s:.0f} s"


def table(curves: dict[str, list[Point]]) -> str:
    """A Markdown table, one row per shape and operator, shapes by pods then name."""
    rows = sorted(
        ((p, line) for line, row in curves.items() for p in row),
        key=lambda pl: (pl[0].pods, pl[0].shape, pl[1]),
    )
    out = [
        "| shape | operator | rounds | pods Ready, s | deploy CPU, s | per pod, ms "
        "| with kcm, ms | control plane CPU, s | peak RSS, MiB | no-op per set, ms "
        "| controller-manager after Available | spurious |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p, line in rows:
        operator = line.split(" [", 1)[0]
        settle = (
            ""
            if p.settle_kcm_cpu_s is None
            else f"{p.settle_kcm_cpu_s:.2f} s in {_num(p.settle_window_s, '.0f')} s"
        )
        if settle and p.idle_kcm_cpu_per_s is not None and p.settle_window_s:
            settle += f" (idle: {p.idle_kcm_cpu_per_s * p.settle_window_s:.2f})"
        settle += _settled(p)
        out.append(
            f"| {p.shape} | {operator} | {p.runs} | {_num(p.ready_s, '.1f')} "
            f"| {p.deploy_cpu_s:.2f} | {p.cpu_ms_per_pod:.2f} "
            f"| {_num(p.cpu_with_kcm_ms_per_pod, '.2f')} | {_num(p.control_plane_cpu_s, '.1f')} "
            f"| {p.rss_peak_mib:.0f} | {_num(p.noop_ms_per_set, '.1f')} | {settle} "
            f"| {p.spurious} |"
        )
    return "\n".join(out)


def plane_table(curves: dict[str, list[Point]]) -> str:
    """What each deploy made the API server do, from every client: objects written, request
    bytes, watch events fanned out to every watcher and their bytes, endpoint-slice writes;
    the rows of runs that recorded it (`table`'s order)."""
    rows = sorted(
        ((p, line) for line, row in curves.items() for p in row if p.plane is not None),
        key=lambda pl: (pl[0].pods, pl[0].shape, pl[1]),
    )
    out = [
        "| shape | operator | writes | per pod | written, MB | watch events | per pod "
        "| watch events of pods | sent, MB | endpoint-slice writes |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p, line in rows:
        plane = p.plane or {}
        out.append(
            f"| {p.shape} | {line.split(' [', 1)[0]} | {plane['writes']:.0f} "
            f"| {plane['writes'] / p.pods:.1f} | {plane['write bytes'] / 1e6:.1f} "
            f"| {plane['watch events']:.0f} | {plane['watch events'] / p.pods:.1f} "
            f"| {plane['watch events pods']:.0f} | {plane['watch bytes'] / 1e6:.0f} "
            f"| {plane['writes endpointslices']:.0f} |"
        )
    return "\n".join(out) if rows else ""


class NoMatplotlib(Exception):
    """matplotlib is not installed (it comes with the `bench` extra)."""


def draw(curves: dict[str, list[Point]], out: Path, title: str = "") -> Path:
    """Two panels against pods, one line per curve: deploy CPU per pod (solid: the
    operator; dashed: with the controller-manager), and peak RSS."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise NoMatplotlib(
            "drawing needs matplotlib: pip install 'cliques[bench]' (or matplotlib)"
        ) from None
    fig, (cpu_ax, rss_ax) = plt.subplots(1, 2, figsize=(13, 5))
    colors = plt.get_cmap("tab10")
    for i, (line, row) in enumerate(sorted(curves.items())):
        xs = [p.pods for p in row]
        color = colors(i % 10)
        marker = "s" if "[" in line else "o"
        cpu_ax.plot(xs, [p.cpu_ms_per_pod for p in row], f"{marker}-", color=color, label=line)
        with_kcm = [(p.pods, p.cpu_with_kcm_ms_per_pod) for p in row if p.cpu_with_kcm_ms_per_pod]
        if with_kcm:
            cpu_ax.plot(
                [x for x, _ in with_kcm],
                [y for _, y in with_kcm],
                f"{marker}--",
                color=color,
                alpha=0.6,
                label=f"{line} + controller-manager",
            )
        rss_ax.plot(xs, [p.rss_peak_mib for p in row], f"{marker}-", color=color, label=line)
    for ax in (cpu_ax, rss_ax):
        ax.set_xscale("log")
        ax.set_xlabel("pods")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="x-small")
    cpu_ax.set_ylabel("deploy CPU per pod, ms")
    cpu_ax.set_title("CPU per pod (apply to every set Available)")
    rss_ax.set_ylabel("peak RSS, MiB")
    rss_ax.set_title("operator peak RSS")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
