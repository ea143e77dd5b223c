"""Cost curves across saved scale runs: each operator's deploy CPU per pod (its own, and
with the controller-manager's) and peak RSS against the number of pods, from result JSONs
of different shapes (`cliques bench plot`). The points are pure data; only `draw` needs
matplotlib (the `bench` extra)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Point:
    """One operator at one size: the median over the runs (files, rounds) of that size."""

    pods: int
    cpu_ms_per_pod: float  # the operator's CPU from the apply to every set Available
    cpu_with_kcm_ms_per_pod: float | None  # plus the controller-manager's (dev cluster only)
    rss_peak_mib: float  # the operator's highest peak RSS over the phases


def _phase(run: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((p for p in run["phases"] if p["phase"] == name), None)


def points(docs: list[dict[str, Any]]) -> dict[str, list[Point]]:
    """Per operator, its points sorted by pods. A run counts when its deploy completed;
    several at one size (rounds, files) give their median."""
    samples: dict[str, dict[int, list[tuple[float, float | None, float]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for doc in docs:
        if doc.get("kind") != "scale":
            continue
        pods = int(doc["total_pods"])
        for run in doc["runs"]:  # every round, not the summary: the median is taken here
            deploy = _phase(run, "available")
            if run.get("error") or deploy is None or not deploy["completed"]:
                continue
            kcm = deploy.get("extra", {}).get("cpu_operator_and_kcm")
            rss = max(p["rss_peak_mib"] for p in run["phases"])
            samples[run["operator"]][pods].append(
                (deploy["cpu"] * 1000 / pods, None if kcm is None else kcm * 1000 / pods, rss)
            )
    out: dict[str, list[Point]] = {}
    for operator, by_size in samples.items():
        row = []
        for pods, seen in sorted(by_size.items()):
            kcm = [k for _, k, _ in seen if k is not None]
            row.append(
                Point(
                    pods=pods,
                    cpu_ms_per_pod=statistics.median(c for c, _, _ in seen),
                    cpu_with_kcm_ms_per_pod=statistics.median(kcm) if kcm else None,
                    rss_peak_mib=statistics.median(r for _, _, r in seen),
                )
            )
        out[operator] = row
    return out


class NoMatplotlib(Exception):
    """matplotlib is not installed (it comes with the `bench` extra)."""


def draw(curves: dict[str, list[Point]], out: Path, title: str = "") -> Path:
    """Two panels against pods, one line per operator: deploy CPU per pod (solid: the
    operator; dashed: with the controller-manager), and peak RSS."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise NoMatplotlib(
            "drawing needs matplotlib: pip install 'cliques[bench]' (or matplotlib)"
        ) from None
    fig, (cpu_ax, rss_ax) = plt.subplots(1, 2, figsize=(12, 4.5))
    colors = plt.get_cmap("tab10")
    for i, (operator, row) in enumerate(sorted(curves.items())):
        xs = [p.pods for p in row]
        color = colors(i % 10)
        cpu_ax.plot(xs, [p.cpu_ms_per_pod for p in row], "o-", color=color, label=operator)
        with_kcm = [(p.pods, p.cpu_with_kcm_ms_per_pod) for p in row if p.cpu_with_kcm_ms_per_pod]
        if with_kcm:
            cpu_ax.plot(
                [x for x, _ in with_kcm],
                [y for _, y in with_kcm],
                "o--",
                color=color,
                alpha=0.6,
                label=f"{operator} + controller-manager",
            )
        rss_ax.plot(xs, [p.rss_peak_mib for p in row], "o-", color=color, label=operator)
    for ax in (cpu_ax, rss_ax):
        ax.set_xscale("log")
        ax.set_xlabel("pods")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
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
