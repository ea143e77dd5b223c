"""Clique bodies as the CliqueSet planner makes them, for tests that need one Clique of a
gang without planning a whole set: the parts the gang features add filled in from a few
keywords (`cliqueset.bodies.CliqueParts`)."""

from __future__ import annotations

from typing import Any

from cliques.api import labels
from cliques.api.cliqueset import CliqueSet, CliqueTemplate
from cliques.controllers.cliqueset import bodies


def clique_body(
    cqs: CliqueSet,
    gang: int,
    tmpl: CliqueTemplate,
    *,
    template_hash: str = "h",
    algorithm: int = 1,
    bucket: str = "0",
    workload: str = "",
    pod_group: str = "",
) -> dict[str, Any]:
    """The Clique of `tmpl` in gang `gang` with no start order, its gang using `workload`
    (1.35) or `pod_group` (1.36 on), if any."""
    annotations = {labels.ANNOTATION_HASH_ALGORITHM: str(algorithm)}
    if workload:
        annotations[labels.ANNOTATION_WORKLOAD] = workload
    if pod_group:
        annotations[labels.ANNOTATION_POD_GROUP] = pod_group
    parts = bodies.CliqueParts(
        template=bodies.gang_template(cqs, gang, tmpl),
        labels={labels.LABEL_TEMPLATE_HASH: template_hash},
        annotations=annotations,
    )
    return bodies.clique_body(
        cqs, gang, tmpl, member=tmpl.name, starts_after=[], bucket=bucket, parts=parts
    )
