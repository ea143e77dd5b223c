"""A restart of every gang of a CliqueSet, as `kubectl rollout restart` gives one for a
Deployment: every clique's pod template gets the annotation `kubectl.kubernetes.io/
restartedAt` with the time, so the templates hash anew and the operator rolls every gang to
them under the set's `updateStrategy`: within `maxUnavailable`, surge gangs first where
`maxSurge` allows, gangs below `partition` kept, and every pod replaced (an annotation is
never a change made in place). Nothing is restarted by the tool itself.

`restart_patch` is pure: one JSON patch over the set as read, whose first operation tests
its resourceVersion, so an edit made since the read is never overwritten
(`history.ConcurrentEdit`, try again). `restart` reads the set, sends the patch, and
returns the time written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from cliques.api.meta import format_now
from cliques.controllers.base.actions import pointer_key
from cliques.kube import errors
from cliques.kube.client import KubeClient
from cliques.kube.resources import CLIQUESETS
from cliques.rollout.history import ConcurrentEdit

#: The key `kubectl rollout restart` writes on a Deployment's pod template.
RESTARTED_AT: Final = "kubectl.kubernetes.io/restartedAt"


def restart_patch(cqs: Mapping[str, Any], now: str) -> list[dict[str, Any]]:
    """The JSON patch that stamps every clique's pod template of the set `cqs` (as the API
    server returns it) with `RESTARTED_AT: now`, guarded by its resourceVersion."""
    meta = cqs.get("metadata") or {}
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": meta.get("resourceVersion")}
    ]
    cliques = ((cqs.get("spec") or {}).get("template") or {}).get("cliques") or []
    for i, clique in enumerate(cliques):
        path = f"/spec/template/cliques/{i}/template"
        ops.append(
            {"op": "test", "path": f"/spec/template/cliques/{i}/name", "value": clique["name"]}
        )
        template = clique.get("template") or {}
        if "metadata" not in template or template["metadata"] is None:
            ops.append(
                {
                    "op": "add",
                    "path": f"{path}/metadata",
                    "value": {"annotations": {RESTARTED_AT: now}},
                }
            )
            continue
        if not template["metadata"].get("annotations"):
            ops.append(
                {"op": "add", "path": f"{path}/metadata/annotations", "value": {RESTARTED_AT: now}}
            )
            continue
        key = pointer_key(RESTARTED_AT)
        ops.append({"op": "add", "path": f"{path}/metadata/annotations/{key}", "value": now})
    return ops


async def restart(client: KubeClient, namespace: str, set_name: str) -> str:
    """Restart every gang of CliqueSet `set_name`; the time written."""
    cqs = await client.get(CLIQUESETS, namespace, set_name, dict)
    now = format_now()
    try:
        await client.patch(
            CLIQUESETS, namespace, set_name, restart_patch(cqs, now), dict, patch_type="json"
        )
    except errors.ApiError as exc:
        if exc.status not in (409, 422):
            raise
        again = await client.get(CLIQUESETS, namespace, set_name, dict)
        if again["metadata"].get("resourceVersion") == cqs["metadata"].get("resourceVersion"):
            raise
        raise ConcurrentEdit(
            f"CliqueSet {set_name} changed while its restart was written: nothing was "
            "written, try again"
        ) from exc
    return now
