"""`kubectl cliques rollout history|undo`: a CliqueSet's revisions and the way back to one, as
`kubectl rollout` gives them for a Deployment, through `cliques.rollout.history`.

    history SET [-o json]              every revision the operator recorded (its
                                       ControllerRevisions), oldest first: number, age,
                                       the images of each clique, the change-cause, and
                                       which one the set runs now
    undo SET [--to-revision N]         write revision N (default: the one before the
                                       current) back to the set; the operator then rolls
                                       the gangs back within maxUnavailable

The text is pure (`history_text`, `history_json`); `run` talks to the cluster. An undo to
the revision the set already runs is skipped (exit 0), as `kubectl rollout undo` does; an
edit of the set between the undo's read and its write is refused (`exits.CONFLICT`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from cliques.kubectl import exits
from cliques.kubectl.render import WIDTH, fit
from cliques.rollout import history as rollout_history
from cliques.rollout.history import RevisionInfo


def age(created: str, now: dt.datetime) -> str:
    """`created` (RFC 3339) as kubectl prints an age: 45s, 12m, 5h, 3d."""
    if not created:
        return "-"
    try:
        then = dt.datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return "-"
    seconds = max(0, int((now - then).total_seconds()))
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def images_cell(info: RevisionInfo) -> str:
    """The images of each clique: `leader=vllm:1 worker=vllm:1,sidecar:2`."""
    return " ".join(f"{clique}={','.join(imgs)}" for clique, imgs in sorted(info.images.items()))


def history_text(set_name: str, revisions: Sequence[RevisionInfo], now: dt.datetime) -> list[str]:
    """A table of the revisions, one per line, each at most `WIDTH` columns."""
    if not revisions:
        return [f"CliqueSet {set_name}: no revisions recorded yet"]
    lines = [f"CliqueSet {set_name}", "REVISION  CURRENT  AGE   IMAGES / CHANGE-CAUSE"]
    for r in revisions:
        head = f"{r.revision:<8}  {'*' if r.current else '':<7}  {age(r.created, now):<4}  "
        lines.append(fit(head + images_cell(r)))
        if r.change_cause:
            lines.append(fit(" " * len(head) + f"cause: {r.change_cause}"))
    return [fit(line, WIDTH) for line in lines]


def history_json(set_name: str, revisions: Sequence[RevisionInfo]) -> dict[str, Any]:
    """The revisions as one JSON document for scripts."""
    return {
        "cliqueSet": set_name,
        "revisions": [
            {
                "revision": r.revision,
                "name": r.name,
                "created": r.created,
                "changeCause": r.change_cause,
                "images": {k: list(v) for k, v in sorted(r.images.items())},
                "current": r.current,
            }
            for r in revisions
        ],
    }


def undo_failure(exc: rollout_history.RevisionError) -> exits.Failure | None:
    """The exit an undo's refusal ends with; None for the one that is not a failure (the set
    runs that revision already: nothing to do)."""
    if isinstance(exc, rollout_history.AlreadyAtRevision):
        return None
    if isinstance(exc, rollout_history.ConcurrentEdit):
        return exits.Failure(exits.CONFLICT, str(exc))
    return exits.Failure(exits.NOT_FOUND, str(exc))
