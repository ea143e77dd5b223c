"""What one CliqueSet may ask of the operator (pure): the names that are the operator's, and
how many Cliques, pods and bytes of templates its gangs are made of.

- Reserved keys. Label and annotation keys under `cliques.dev/` (and its subdomains,
  `labels.is_reserved`) are the operator's: it reads them back from the objects it made
  (`cliques.dev/gang-restarts` on a pod says which gang restart the pod belongs to; a pod
  of another count is deleted). The CRD refuses them in a pod template; a CliqueSet stored
  before that rule may still carry them. `tenant_template` leaves them out of the template
  a Clique and its pods are built from, and `reserved_keys` lists them for a Warning Event.
- Cliques and pods. The CRD's rules bound the Cliques and pods of a set and the pods of a
  gang as they are made (`api.sizes`: a clique of a scaling group once per instance, an
  instance count or a clique's pods at its autoscaling maxReplicas where that is higher).
  A set stored before those rules counted scaling groups may ask for far more (625 gangs
  of 8 groups of 100 instances are a million Cliques): `counts_invalid` refuses it, as an
  InvalidSpec, before any object is made.
- Template bytes. Every Clique stores a copy of its pod template, so a CliqueSet's
  templates are stored once per gang, and a grouped clique's once per instance. The CRD
  bounds the counts and the API server the size of the CliqueSet itself (about 1.5 MiB),
  but CEL cannot measure a template, so nothing bounds the product: 10,000 Cliques of
  1 MiB of template would be about 10 GiB. `template_bytes_invalid` refuses a set whose
  Cliques would store more than `MAX_TEMPLATE_BYTES` of templates, as an InvalidSpec.

`invalid` checks the counts, then the bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

import msgspec

from cliques.api import labels, sizes
from cliques.api.cliqueset import MAX_GANG_PODS, MAX_SET_CLIQUES, MAX_SET_PODS, CliqueSet

#: The most bytes of pod templates (JSON) the Cliques of one CliqueSet may store together:
#: `spec.replicas` x the sum of its clique templates' sizes. An eighth of etcd's default
#: space quota (2 GiB), so that one object can never fill the cluster's store on its own
#: (docs/operator.md#limits).
MAX_TEMPLATE_BYTES: Final = 256 * 2**20

#: The reason of the Warning Event that says a CliqueSet's templates carry reserved keys.
REASON_RESERVED_KEYS: Final = "ReservedKeys"
#: How many reserved keys `reserved_keys_message` names before it only counts the rest.
MESSAGE_KEYS: Final = 8

_encode = msgspec.json.Encoder().encode


class ReservedKey(NamedTuple):
    """A reserved key in the pod template of clique `clique`: a `label` or `annotation`."""

    clique: str
    kind: str
    key: str

    def __str__(self) -> str:
        return f"{self.clique}: {self.kind} {self.key}"


def _metadata_map(template: Mapping[str, Any], field: str) -> Mapping[str, Any]:
    meta = template.get("metadata")
    values = meta.get(field) if isinstance(meta, Mapping) else None
    return values if isinstance(values, Mapping) else {}


def reserved_keys(cqs: CliqueSet) -> list[ReservedKey]:
    """The reserved label and annotation keys the pod templates of `cqs` carry, in template
    order (empty for every CliqueSet the CRD admitted since it refuses them)."""
    out: list[ReservedKey] = []
    for tmpl in cqs.spec.template.cliques:
        for kind, field in (("label", "labels"), ("annotation", "annotations")):
            out.extend(
                ReservedKey(tmpl.name, kind, key)
                for key in _metadata_map(tmpl.template, field)
                if labels.is_reserved(key)
            )
    return out


def reserved_keys_message(cqs: CliqueSet) -> str:
    """The message of a Warning Event about the reserved keys of `cqs`, or "" if it has
    none. It names the first `MESSAGE_KEYS` and counts the others."""
    found = reserved_keys(cqs)
    if not found:
        return ""
    named = "; ".join(str(k) for k in found[:MESSAGE_KEYS])
    more = len(found) - MESSAGE_KEYS
    if more > 0:
        named += f"; and {more} more"
    return (
        f"pod template keys reserved for the operator (prefix {labels.RESERVED_PREFIX}) are "
        f"left out of the Cliques and pods: {named}"
    )


def tenant_template(template: Mapping[str, Any]) -> Mapping[str, Any]:
    """`template` without the reserved keys of its `metadata.labels` and
    `metadata.annotations`: the template itself when it has none (never copied), else a
    copy of its top level and metadata (the rest is shared, never changed)."""
    meta = template.get("metadata")
    if not isinstance(meta, Mapping):
        return template
    stripped: dict[str, Any] = {}
    for field in ("labels", "annotations"):
        values = meta.get(field)
        if isinstance(values, Mapping) and any(labels.is_reserved(k) for k in values):
            stripped[field] = {k: v for k, v in values.items() if not labels.is_reserved(k)}
    if not stripped:
        return template
    return {**template, "metadata": {**meta, **stripped}}


#: How a message says what a gang's count counts.
_COUNTED: Final = (
    "a clique of a scaling group once per instance; a group's instances and a clique's pods "
    "at autoscaling.maxReplicas where that is higher than replicas"
)


def counts_invalid(cqs: CliqueSet) -> str:
    """Why the gangs of `cqs` would be more pods (per gang, per set) or Cliques than one
    CliqueSet may have, or "" if they would not (`api.sizes` counts them). The message
    names each bound passed, with the count and the limit."""
    spec = cqs.spec
    cliques, groups = spec.template.cliques, spec.template.scaling_groups
    gangs = spec.replicas
    gang_pods = sizes.gang_pods(cliques, groups)
    gang_cliques = sizes.gang_cliques(cliques, groups)
    found: list[str] = []
    if gang_pods > MAX_GANG_PODS:
        found.append(
            f"a gang of this CliqueSet would have {gang_pods:,} pods, more than the "
            f"{MAX_GANG_PODS:,} one gang may have"
        )
    if gangs * gang_cliques > MAX_SET_CLIQUES:
        found.append(
            f"this CliqueSet would have {gangs * gang_cliques:,} Cliques ({gangs:,} gangs x "
            f"{gang_cliques:,} Cliques per gang), more than the {MAX_SET_CLIQUES:,} one "
            "CliqueSet may have"
        )
    if gangs * gang_pods > MAX_SET_PODS:
        found.append(
            f"this CliqueSet would have {gangs * gang_pods:,} pods ({gangs:,} gangs x "
            f"{gang_pods:,} pods per gang), more than the {MAX_SET_PODS:,} one CliqueSet may "
            "have"
        )
    if not found:
        return ""
    return (
        f"{'; '.join(found)} ({_COUNTED}): lower spec.replicas, the cliques' replicas or "
        "autoscaling.maxReplicas, or the scaling groups' replicas or autoscaling.maxReplicas"
    )


def scaled_invalid(cqs: CliqueSet, counts: Mapping[int, Mapping[str, int]]) -> str:
    """Why the instances the gangs' CliqueScalingGroups ask for (`counts`: gang -> group ->
    instances, their `spec.replicas`) would be more pods (per gang, per set) or Cliques
    than one CliqueSet may have, or "": a `kubectl scale` of a group past its template's
    count stands, and the CRD of a CliqueScalingGroup bounds one group of one gang only.
    The message names the counts, the limits and the way back."""
    spec = cqs.spec
    cliques, groups = spec.template.cliques, spec.template.scaling_groups
    total_cliques = total_pods = 0
    worst = (0, 0)  # (pods, gang)
    for gang in range(spec.replicas):
        have = counts.get(gang)
        if not have:
            continue  # (no group: the template's counts hold, `counts_invalid`)
        pods = sizes.gang_pods(cliques, groups, have)
        total_pods += pods
        total_cliques += sizes.gang_cliques(cliques, groups, have)
        worst = max(worst, (pods, -gang))
    found: list[str] = []
    if worst[0] > MAX_GANG_PODS:
        found.append(
            f"gang {-worst[1]} would have {worst[0]:,} pods, more than the "
            f"{MAX_GANG_PODS:,} one gang may have"
        )
    if total_cliques > MAX_SET_CLIQUES:
        found.append(
            f"the gangs would have {total_cliques:,} Cliques, more than the "
            f"{MAX_SET_CLIQUES:,} one CliqueSet may have"
        )
    if total_pods > MAX_SET_PODS:
        found.append(
            f"the gangs would have {total_pods:,} pods, more than the {MAX_SET_PODS:,} one "
            "CliqueSet may have"
        )
    if not found:
        return ""
    return (
        f"with the instances their CliqueScalingGroups ask for (spec.replicas), {'; '.join(found)}"
        f": scale them down (kubectl scale {labels.KIND_SCALING_GROUP.lower()}/"
        f"{cqs.metadata.name}-<gang>-<group> --replicas=...) or change the template's replicas "
        "to apply it to every gang"
    )


def template_bytes(cqs: CliqueSet) -> tuple[int, int]:
    """(bytes of pod templates per gang, for all gangs): the JSON size of every clique
    template's pod template times its Cliques per gang (the instances of its scaling
    group, `sizes.multiplicity`), summed, and that times `spec.replicas`."""
    cliques = cqs.spec.template.cliques
    times = sizes.multiplicity(cliques, cqs.spec.template.scaling_groups)
    per_gang = sum(len(_encode(c.template)) * times[c.name] for c in cliques)
    return per_gang, per_gang * cqs.spec.replicas


def template_bytes_invalid(cqs: CliqueSet, limit: int = MAX_TEMPLATE_BYTES) -> str:
    """Why the Cliques of `cqs` would store too many bytes of pod templates, or "" if they
    would not: the message names the gangs, the bytes per gang, their product and `limit`."""
    per_gang, total = template_bytes(cqs)
    if total <= limit:
        return ""
    return (
        f"the Cliques of this CliqueSet would store {total:,} bytes of pod templates "
        f"({cqs.spec.replicas:,} gangs x {per_gang:,} bytes per gang, a clique of a scaling "
        f"group once per instance), more than the {limit:,} bytes one CliqueSet may store: "
        "lower spec.replicas or the scaling groups' instances, or shrink the pod templates"
    )


def invalid(cqs: CliqueSet) -> str:
    """Why `cqs` asks for more than one CliqueSet may (`counts_invalid`, then
    `template_bytes_invalid`), or ""."""
    return counts_invalid(cqs) or template_bytes_invalid(cqs)
