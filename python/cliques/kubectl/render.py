"""What `kubectl cliques` prints (pure): a status tree or a diff as text lines of at most
`WIDTH` columns, or as one JSON document for scripts.

Text: a line per set, gang, Clique and pod, indented by depth; a gang that is not whole is
followed by its reasons (`why:`), each wrapped under itself and cut after `WHY_LINES` lines.
Names and other cells that would pass `WIDTH` are cut with `...`. JSON (`-o json`): the same
tree with every message whole, keys in camelCase as the API spells them.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable, Iterator
from typing import Any, Final

from cliques import hashing
from cliques.kubectl.diff import MAX_PATHS, CliqueDiff, Report
from cliques.kubectl.status import CliqueNode, GangNode, PodNode, Status, Why

#: Columns a line of text output fits in.
WIDTH: Final = 100
#: Lines one reason may take before it is cut.
WHY_LINES: Final = 4
#: Columns of a pod's name before it is cut.
NAME_WIDTH: Final = 40
#: Characters of a value shown in a diff.
VALUE_WIDTH: Final = 300


def fit(line: str, width: int = WIDTH) -> str:
    """`line`, cut to `width` columns with `...` when longer."""
    return line if len(line) <= width else line[: width - 3].rstrip() + "..."


def wrap(head: str, text: str, *, width: int = WIDTH, lines: int = WHY_LINES) -> list[str]:
    """`text` after `head`, wrapped under itself into at most `lines` lines."""
    indent = " " * len(head)
    out = textwrap.wrap(
        " ".join(text.split()),
        width=width,
        initial_indent=head,
        subsequent_indent=indent,
        break_long_words=True,
        break_on_hyphens=False,
    ) or [head.rstrip()]
    if len(out) > lines:
        out = out[:lines]
        last = out[-1] if len(out[-1]) + 4 <= width else out[-1][: width - 4]
        out[-1] = last + " ..."
    return [fit(line, width) for line in out]


# --- status ---------------------------------------------------------------------------------


def status_text(st: Status) -> list[str]:
    """The tree, a line each, and the reasons of each gang that is not whole."""
    gangs = len(st.gangs)
    counts = (
        f"  {st.whole}/{st.replicas} gang(s) whole; ready {st.ready}, updated {st.updated}, "
        f"available {st.available}"
    )
    out = [fit(f"CliqueSet {st.namespace}/{st.name}"), fit(counts)]
    if gangs > st.replicas:
        out.append(fit(f"  {gangs - st.replicas} gang(s) beyond spec.replicas, being removed"))
    for why in st.why:
        out += wrap("  why: ", why.message)
    for gang in st.gangs:
        out += _gang_lines(gang)
    return out


def _gang_lines(gang: GangNode) -> list[str]:
    ready = sum(1 for c in gang.cliques if c.ready)
    total = len(gang.cliques) + len(gang.missing)
    state = "whole" if gang.whole else "NOT WHOLE"
    out = [fit(f"gang {gang.index}  {state}  {ready}/{total} Clique(s) ready")]
    width = min(max((len(p.name) for c in gang.cliques for p in c.pods), default=0), NAME_WIDTH)
    for clique in gang.cliques:
        out.append(_clique_line(clique))
        out += [_pod_line(p, width) for p in clique.pods]
    for role in gang.missing:
        out.append(fit(f"  (no Clique for clique {role})"))
    for why in gang.why:
        out += wrap("  why: ", why.message)
    return out


def _clique_line(c: CliqueNode) -> str:
    bar = f", minAvailable {c.min_available}" if c.min_available != c.replicas else ""
    state = "Ready" if c.ready else "not Ready"
    return fit(f"  {c.name}  {c.role}  {c.ready_pods}/{c.replicas} pods ready{bar}  {state}")


def _pod_line(p: PodNode, width: int) -> str:
    name = p.name if len(p.name) <= width else p.name[: width - 3] + "..."
    ready = "ready" if p.ready else "-"
    state = "" if p.state == p.phase else p.state
    cells = [f"    {name.ljust(width)}", p.phase.ljust(9), ready.ljust(5), state.ljust(17), p.node]
    return fit("  ".join(cells).rstrip())


def _why_json(why: Iterable[Why]) -> list[dict[str, Any]]:
    return [{"kind": w.kind, "message": w.message, "objects": list(w.objects)} for w in why]


def status_json(st: Status) -> dict[str, Any]:
    """The tree as a JSON document (messages whole)."""
    return {
        "cliqueSet": {
            "name": st.name,
            "namespace": st.namespace,
            "replicas": st.replicas,
            "whole": st.whole,
            "ready": st.ready,
            "updated": st.updated,
            "available": st.available,
            "templateHash": st.template_hash,
        },
        "conditions": [
            {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}
            for c in st.conditions
        ],
        "why": _why_json(st.why),
        "gangs": [
            {
                "index": g.index,
                "whole": g.whole,
                "missing": list(g.missing),
                "why": _why_json(g.why),
                "cliques": [
                    {
                        "name": c.name,
                        "clique": c.role,
                        "replicas": c.replicas,
                        "minAvailable": c.min_available,
                        "readyPods": c.ready_pods,
                        "ready": c.ready,
                        "templateHash": c.template_hash,
                        "pods": [
                            {
                                "name": p.name,
                                "phase": p.phase,
                                "ready": p.ready,
                                "state": p.state,
                                "node": p.node,
                            }
                            for p in c.pods
                        ],
                    }
                    for c in g.cliques
                ],
            }
            for g in st.gangs
        ],
    }


# --- diff -------------------------------------------------------------------------------------


def _gangs(gangs: tuple[int, ...]) -> str:
    if not gangs:
        return ""
    shown = ", ".join(map(str, gangs[:8])) + (
        f" and {len(gangs) - 8} more" if len(gangs) > 8 else ""
    )
    return f" (gang{'s' if len(gangs) > 1 else ''} {shown})"


def diff_text(report: Report) -> list[str]:
    """What was compared, then each clique: the same, or its first difference."""
    out = wrap("compared: ", report.what)
    width = max(len(report.left), len(report.right))
    for c in report.cliques:
        out += _clique_diff_lines(c, report.left.ljust(width), report.right.ljust(width))
    verdict = "same desired state" if report.same else "different"
    out.append(fit(f"{verdict}: {sum(not c.same for c in report.cliques)} clique(s) differ"))
    return out


def _clique_diff_lines(c: CliqueDiff, left: str, right: str) -> Iterator[str]:
    where = _gangs(c.gangs)
    if c.error:
        yield from wrap(f"clique {c.clique}{where}: ", f"cannot compare: {c.error}")
        return
    if c.only_in == "left":
        yield fit(f"clique {c.clique}{where}: only in {left.strip()} (removed)")
        return
    if c.only_in == "right":
        yield fit(f"clique {c.clique}: only in {right.strip()} (added)")
        return
    hashes = f"hash {c.left_hash or '?'}" + (
        f" -> {c.right_hash}" if c.right_hash and c.right_hash != c.left_hash else ""
    )
    if c.difference is None:
        yield fit(f"clique {c.clique}{where}: same ({hashes})")
        return
    yield fit(f"clique {c.clique}{where}: different ({hashes})")
    yield fit(f"  first difference at {c.difference.path or '(the top)'}")
    yield from wrap(f"    {left}  ", hashing.format_value(c.difference.left, VALUE_WIDTH), lines=3)
    yield from wrap(
        f"    {right}  ", hashing.format_value(c.difference.right, VALUE_WIDTH), lines=3
    )
    shown = list(c.paths[:MAX_PATHS])
    if len(c.paths) > MAX_PATHS:
        shown.append(f"... and {len(c.paths) - MAX_PATHS} more")
    yield from wrap("  changed: ", ", ".join(shown), lines=6)
    yield fit(
        "  in place: yes (only images differ: updateStrategy.inPlace IfPossible keeps the pods)"
        if c.in_place
        else "  in place: no (the gangs' pods are replaced)"
    )


def diff_json(report: Report) -> dict[str, Any]:
    def value(v: Any) -> Any:
        return "absent" if v is hashing.ABSENT else v

    return {
        "compared": report.what,
        "left": report.left,
        "right": report.right,
        "same": report.same,
        "cliques": [
            {
                "clique": c.clique,
                "same": c.same,
                "gangs": list(c.gangs),
                "leftHash": c.left_hash,
                "rightHash": c.right_hash,
                "onlyIn": c.only_in or None,
                "error": c.error or None,
                "difference": None
                if c.difference is None
                else {
                    "path": c.difference.path,
                    "left": value(c.difference.left),
                    "right": value(c.difference.right),
                },
                "paths": list(c.paths),
                "inPlace": c.in_place,
            }
            for c in report.cliques
        ],
    }


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False)
