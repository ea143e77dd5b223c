"""Capacity plots of the node phases (`cliques bench scale --with-phases`): whole Ready gangs
over time, one line per operator, one PNG per phase, with the phase's actions marked (each
node's drain done, the power-off, the out-of-service taint). `series` is pure; drawing needs
matplotlib (the `bench` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cliques_lab.bench import disruption


def series(doc: dict[str, Any], phase: str) -> list[dict[str, Any]]:
    """Per run of `doc` that measured `phase`: its name, samples, marks and figures."""
    many = doc.get("repeat", 1) > 1
    out = []
    for run in doc.get("runs", []):
        ph = next((p for p in run.get("phases", []) if p["phase"] == phase), None)
        if ph is None or not ph.get("samples"):
            continue
        name = run["operator"] + (f" #{run.get('round', 1)}" if many else "")
        out.append(
            {
                "name": name,
                "samples": [tuple(s) for s in ph["samples"]],
                "marks": [tuple(m) for m in ph.get("marks", [])],
                "extra": ph.get("extra", {}),
            }
        )
    return out


def plots(doc: dict[str, Any], out_dir: Path, stem: str) -> list[Path]:
    """One PNG per node phase `doc` measured, `<stem>-<phase>.png`; none without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    paths = []
    for phase in disruption.PHASES:
        lines = series(doc, phase)
        if not lines:
            continue
        fig, ax = plt.subplots(figsize=(10, 4.5), layout="constrained")
        colors = plt.get_cmap("tab10")
        top = 0.0
        for i, line in enumerate(lines):
            ts = [t for t, _ in line["samples"]]
            ns = [n for _, n in line["samples"]]
            top = max(top, float(line["extra"].get("gangs", max(ns))))
            ax.step(ts, ns, where="post", color=colors(i), label=_label(line))
            for t, what in line["marks"]:
                ax.axvline(t, color=colors(i), linestyle=":", linewidth=1)
                ax.annotate(
                    what,
                    (t, 0),
                    xytext=(2 + 9 * i, 4),
                    textcoords="offset points",
                    fontsize="x-small",
                    color=colors(i),
                    rotation=90,
                )
        ax.set_ylim(0, top + 1)
        ax.set_xlabel(f"seconds since the {phase} began")
        ax.set_ylabel("whole Ready gangs")
        ax.set_title(f"cliques bench scale {doc['shape']}: {phase}" + _start_model(doc))
        ax.legend(fontsize="small", loc="center right")
        p = out_dir / f"{stem}-{phase}.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths.append(p)
    return paths


def _label(line: dict[str, Any]) -> str:
    """The legend entry: the operator with its lowest whole gangs and the seconds below full
    (and the drain's completion time)."""
    x = line["extra"]
    parts = [
        f"min {x.get('min_whole_gangs', 0):.0f}",
        f"{x.get('seconds_below_full', 0):.0f} s below full",
    ]
    if "drain_s" in x:
        parts.append(f"drain {x['drain_s']:.0f} s")
    return f"{line['name']} ({', '.join(parts)})"


def _start_model(doc: dict[str, Any]) -> str:
    pull, load = doc.get("pull_seconds"), doc.get("load_seconds")
    if pull is None and load is None:
        return " (pods start at once)"
    return f" (pull {pull or 0:g} s, load {load or 0:g} s)"
