"""The Cliques the CliqueSet controller creates (pure): their bodies and pod templates.

A Clique is one clique template of one gang: its deterministic name, the gang labels (with
the bucket label used for sharding), the template-hash label and algorithm annotation, and
what the gang features add to it (`CliqueParts`): its gang's DNS layout annotations
(`subdomains`), the Workload or PodGroup its gang uses (`gang_scheduling`), a scaling group
member's labels (`scaling`), `startGate` where start order is kept after placement
(`start_gate`), and its pod template for that gang (`gang_template`: the user's without the
operator's keys, with the affinity of `spec.placement`, the gang's DRA claim entries, the
readiness gate of `podReadiness: Gang` and, for a set Kueue queues, the gang's pod group).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from cliques.api import labels
from cliques.api.cliqueset import CliqueSet
from cliques.api.cliquetemplate import CliqueTemplate
from cliques.controllers.base import bounds
from cliques.controllers.base.builders import gang_labels, owner_reference
from cliques.controllers.features import claims, gang_ready, kueue, placement


@dataclass
class CliqueParts:
    """What the gang features add to one new Clique, besides its name and start order."""

    #: its pod template for its gang (`gang_template`)
    template: Any
    #: labels besides the gang's and the clique's: the template hash, a scaling group
    #: member's (`scaling.member_labels`)
    labels: dict[str, str] = field(default_factory=dict)
    #: the hash algorithm, the gang's Workload or PodGroup, its DNS layout (`subdomains`)
    annotations: dict[str, str] = field(default_factory=dict)
    #: its start order is kept by start gates after placement (`start_gate`)
    start_gate: bool = False


def clique_body(
    cqs: CliqueSet,
    gang: int,
    tmpl: CliqueTemplate,
    *,
    member: str,
    starts_after: list[str],
    bucket: str,
    parts: CliqueParts,
) -> dict[str, Any]:
    """The Clique of clique template `tmpl` in gang `gang`: `member` is its name in the
    gang (`labels.member_name`: the role, or `<role>-<instance>` for an instance of a
    scaling group); `starts_after` the names of the Cliques it starts after; `parts` what
    the gang features add to it. `startGate` is set only where there is an order to keep."""
    name = cqs.metadata.name
    return {
        "apiVersion": labels.API_VERSION,
        "kind": labels.KIND_CLIQUE,
        "metadata": {
            "name": labels.clique_name(name, gang, member),
            "namespace": cqs.metadata.namespace,
            "labels": {
                **gang_labels(cqs, gang, bucket),
                **parts.labels,
                labels.LABEL_CLIQUE: tmpl.name,
            },
            "annotations": dict(parts.annotations),
            "ownerReferences": [owner_reference(cqs)],
        },
        "spec": {
            "cliqueName": tmpl.name,
            "gangIndex": gang,
            "replicas": tmpl.replicas,
            "minAvailable": tmpl.effective_min_available,
            "startsAfter": starts_after,
            **({"startGate": True} if parts.start_gate and starts_after else {}),
            "template": parts.template,
        },
    }


def gang_template(
    cqs: CliqueSet,
    gang: int,
    tmpl: CliqueTemplate,
    *,
    scheduler_packs: bool = False,
    claims_via_group: bool = False,
    kueue_revision: str = "",
) -> Any:
    """The pod template of clique template `tmpl` in gang `gang`: the user's without the
    operator's label and annotation keys (`bounds.tenant_template`), with the affinity
    `spec.placement` compiles to for that gang (`placement.gang_template`); without the
    pack term when the scheduler packs the gang (`scheduler_packs`: its PodGroup's topology
    constraint). The template hash is still taken of the user's template as stored
    (`placement.hash_basis`), so a set stored with such keys keeps its hash: leaving them
    out never rolls its gangs. With `spec.resourceClaims`, the claim entries of the
    clique's pods in that gang (`claims.resolve`). With `podReadiness: Gang`, the readiness
    gate `cliques.dev/gang-ready` (`gang_ready.add_gate`). For a set queued by Kueue
    (`kueue_revision`), the gang's pod group (`kueue.resolve`)."""
    where = cqs.spec.placement
    if scheduler_packs and where is not None:
        where = msgspec.structs.replace(where, pack=None)
    placed = placement.gang_template(
        bounds.tenant_template(tmpl.template), where, cqs.metadata.name, gang
    )
    resolved = gang_ready.add_gate(
        claims.resolve(placed, cqs, tmpl.name, gang, claims_via_group), cqs.spec.pod_readiness
    )
    if not kueue_revision:
        return resolved
    return kueue.resolve(resolved, cqs, tmpl.name, gang, kueue_revision)
