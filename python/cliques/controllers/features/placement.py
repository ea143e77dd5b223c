"""`spec.placement` compiled into pod affinity and anti-affinity (pure; docs/gangs.md).

    pack  {topologyKey: K, mode: Required}   podAffinity.requiredDuringScheduling...:
                                             a pod of my gang on the same K
    pack  {topologyKey: K, mode: Preferred}  podAffinity.preferredDuringScheduling...,
                                             weight 100, the same term
    exclusive {topologyKey: K}               podAntiAffinity.requiredDuringScheduling...:
                                             no pod of my CliqueSet from another gang on
                                             the same K

A gang is named by the labels every pod of it carries: `cliques.dev/cliqueset` and
`cliques.dev/gang-index`. The terms are appended to the pod template's own affinity, never
replacing a term of the user's, and `nodeAffinity` is left as written. Nothing is mutated:
`merge_affinity` and `apply_to_template` return new dicts, and applying them twice adds
nothing the second time.

**The first pod of a gang.** A required pod-affinity term on the gang's own labels is
satisfied by a pod of the gang already on (or assumed onto) a node; the first pod has
none. kube-scheduler's InterPodAffinity filter (`satisfyPodAffinity`) lets a pod through
anyway when no pod in the cluster matches all of its required affinity terms *and the pod
matches all of them itself*. Our pack term selects exactly the pod's own identity labels,
so on its own it always matches itself, and the first pod of a gang goes to any domain
with room; the others follow it there. A user's own required podAffinity term is ANDed
with ours (an existing pod must match every term at once): if no pod of the gang can
match the user's term (say it selects `app: cache` pods that are not in the gang), no pod
ever matches all the terms of the gang's pods, and they never schedule. `unplaceable`
finds such cliques for a gang template, so the controller can report them instead of
creating pods that wait forever.

Nodes without the `topologyKey` label are never chosen for a required pack term (the
scheduler requires every topology key of a pod's required affinity on the node).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from cliques.api import labels
from cliques.api.policies import PackMode, Placement

#: The weight of a Preferred pack term (the highest the API allows).
PREFERRED_WEIGHT: Final = 100

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def gang_labels(cliqueset: str, gang_index: int) -> dict[str, str]:
    """The labels that name one gang on every pod of it."""
    return {labels.LABEL_CLIQUESET: cliqueset, labels.LABEL_GANG_INDEX: str(gang_index)}


def pack_term(cliqueset: str, gang_index: int, topology_key: str) -> dict[str, Any]:
    """A pod-affinity term: a pod of this gang in the same `topology_key` domain."""
    return {
        "labelSelector": {"matchLabels": gang_labels(cliqueset, gang_index)},
        "topologyKey": topology_key,
    }


def exclusive_term(cliqueset: str, gang_index: int, topology_key: str) -> dict[str, Any]:
    """A pod-anti-affinity term: a pod of another gang of the same CliqueSet in the domain."""
    return {
        "labelSelector": {
            "matchExpressions": [
                {"key": labels.LABEL_CLIQUESET, "operator": "In", "values": [cliqueset]},
                {
                    "key": labels.LABEL_GANG_INDEX,
                    "operator": "NotIn",
                    "values": [str(gang_index)],
                },
            ]
        },
        "topologyKey": topology_key,
    }


def compile_placement(
    placement: Placement | None, cliqueset: str, gang_index: int
) -> dict[str, Any]:
    """The affinity `placement` asks for, alone (`{}` when it asks for nothing)."""
    affinity: dict[str, Any] = {}
    if placement is None:
        return affinity
    if placement.pack is not None:
        term = pack_term(cliqueset, gang_index, placement.pack.topology_key)
        if placement.pack.mode == PackMode.REQUIRED:
            affinity["podAffinity"] = {_REQUIRED: [term]}
        else:
            weighted = {"weight": PREFERRED_WEIGHT, "podAffinityTerm": term}
            affinity["podAffinity"] = {_PREFERRED: [weighted]}
    if placement.exclusive is not None:
        term = exclusive_term(cliqueset, gang_index, placement.exclusive.topology_key)
        affinity["podAntiAffinity"] = {_REQUIRED: [term]}
    return affinity


def merge_affinity(
    user: Mapping[str, Any] | None, placement: Placement | None, cliqueset: str, gang_index: int
) -> dict[str, Any] | None:
    """The pod's `spec.affinity`: the user's, with the placement's terms appended.

    None when there is neither (so a pod without affinity keeps none). The user's terms
    come first and are kept whole; a term already present is not added again.
    """
    ours = compile_placement(placement, cliqueset, gang_index)
    if not ours:
        return copy.deepcopy(dict(user)) if user is not None else None
    merged: dict[str, Any] = copy.deepcopy(dict(user)) if user else {}
    for kind, lists in ours.items():
        section = merged.get(kind)
        section = dict(section) if isinstance(section, Mapping) else {}
        for list_name, terms in lists.items():
            existing = section.get(list_name)
            existing = list(existing) if isinstance(existing, list) else []
            existing += [t for t in terms if t not in existing]
            section[list_name] = existing
        merged[kind] = section
    return merged


def apply_to_template(
    template: Mapping[str, Any], placement: Placement | None, cliqueset: str, gang_index: int
) -> dict[str, Any]:
    """A PodTemplateSpec with `merge_affinity` in `spec.affinity` (a new dict; the input is
    left as it was)."""
    result = copy.deepcopy(dict(template))
    spec = result.setdefault("spec", {})
    affinity = merge_affinity(spec.get("affinity"), placement, cliqueset, gang_index)
    if affinity is not None:
        spec["affinity"] = affinity
    return result


# ---- Can the gang's pods ever satisfy their required pod affinity? --------------------------


def selector_matches(selector: Mapping[str, Any] | None, pod_labels: Mapping[str, str]) -> bool:
    """A `metav1.LabelSelector` against labels, as Kubernetes evaluates it (a null selector
    matches nothing, an empty one everything)."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if pod_labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or ():
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        present = key in pod_labels
        if op == "In" and not (present and pod_labels[key] in values):
            return False
        if op == "NotIn" and present and pod_labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def term_matches(
    term: Mapping[str, Any], pod_labels: Mapping[str, str], namespace: str | None = None
) -> bool:
    """Whether a pod-affinity term selects a pod of the gang (in `namespace`, the namespace
    of the pod that carries the term). A `namespaceSelector` is taken to select it (the
    namespace's labels are not known here); a `namespaces` list without a selector must
    name it, or the term means other namespaces only."""
    names = term.get("namespaces")
    if names and term.get("namespaceSelector") is None and namespace not in names:
        return False
    return selector_matches(term.get("labelSelector"), pod_labels)


def required_affinity_terms(template: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    affinity = (template.get("spec") or {}).get("affinity") or {}
    terms = (affinity.get("podAffinity") or {}).get(_REQUIRED) or []
    return [t for t in terms if isinstance(t, Mapping)]


def _is_pack_term(term: Mapping[str, Any]) -> bool:
    match = (term.get("labelSelector") or {}).get("matchLabels") or {}
    return labels.LABEL_CLIQUESET in match and labels.LABEL_GANG_INDEX in match


def unplaceable(
    templates: Sequence[tuple[str, Mapping[str, Any], Mapping[str, str]]],
    namespace: str | None = None,
) -> list[str]:
    """The cliques of one gang whose pods could never pass the scheduler's pod-affinity
    filter, given every clique's compiled template and the labels its pods carry.

    `templates` is (clique name, pod template after `apply_to_template`, pod labels) per
    clique. A clique can be placed when its pods match all their own required pod-affinity
    terms (the scheduler's first-pod rule), or when pods of a clique that can be placed
    match all of them; what is left after that fixed point waits forever. Only cliques with
    a required pack term are judged: it restricts the candidates to pods of the gang, while
    the user's terms alone may be met by any pod of the cluster.
    """
    terms = {name: required_affinity_terms(t) for name, t, _ in templates}
    packed = {n for n, ts in terms.items() if any(_is_pack_term(t) for t in ts)}
    pod_labels = {name: dict(lbls) for name, _, lbls in templates}

    def satisfied_by(ts: list[Mapping[str, Any]], other: str) -> bool:
        return all(term_matches(t, pod_labels[other], namespace) for t in ts)

    placeable = {n for n, ts in terms.items() if n not in packed or satisfied_by(ts, n)}
    changed = True
    while changed:
        changed = False
        for name, ts in terms.items():
            if name not in placeable and any(satisfied_by(ts, o) for o in placeable):
                placeable.add(name)
                changed = True
    return [name for name, _, _ in templates if name not in placeable]


# ---- The template of one gang's Clique, and what its hash is taken of ----------------------


def gang_template(
    template: Mapping[str, Any], placement: Placement | None, cliqueset: str, gang_index: int
) -> Mapping[str, Any]:
    """The pod template of gang `gang_index`'s Clique: the user's template itself without
    placement (never copied), else `apply_to_template`."""
    if placement is None or (placement.pack is None and placement.exclusive is None):
        return template
    return apply_to_template(template, placement, cliqueset, gang_index)


def hash_basis(
    template: Mapping[str, Any], placement: Placement | None, cliqueset: str
) -> Mapping[str, Any]:
    """What a clique's template hash is taken of: the user's template without placement
    (so the hash of a set without placement is what it always was, and its gangs never
    roll on an upgrade), else the template compiled for gang 0 (the same for every gang,
    and a change of `placement` is a change of hash: the gangs roll)."""
    return gang_template(template, placement, cliqueset, 0)


def regang(
    template: Mapping[str, Any],
    placement: Placement | None,
    cliqueset: str,
    gang_index: int,
) -> Mapping[str, Any]:
    """A gang's compiled template with its own placement terms swapped for gang 0's, so
    that it hashes as `hash_basis` does (a template compiled from another placement keeps
    its terms and hashes differently, as it should)."""
    if placement is None or gang_index == 0:
        return template
    ours = compile_placement(placement, cliqueset, gang_index)
    zero = compile_placement(placement, cliqueset, 0)
    result = copy.deepcopy(dict(template))
    affinity = (result.get("spec") or {}).get("affinity")
    if not isinstance(affinity, dict):
        return result
    for kind, lists in ours.items():
        section = affinity.get(kind)
        if not isinstance(section, dict):
            continue
        for list_name, terms in lists.items():
            existing = section.get(list_name)
            if not isinstance(existing, list):
                continue
            swap = dict(zip(map(_key, terms), zero[kind][list_name], strict=True))
            section[list_name] = [swap.get(_key(t), t) for t in existing]
    return result


def _key(term: Any) -> str:
    return json.dumps(term, sort_keys=True)


def unplaceable_cliques(
    cliques: Sequence[tuple[str, Mapping[str, Any]]],
    placement: Placement | None,
    cliqueset: str,
    namespace: str,
) -> list[str]:
    """`unplaceable` for gang 0 of a CliqueSet, from its (clique name, user template) pairs:
    the cliques whose pods could never be scheduled (every gang is the same up to its
    index). Empty without a required pack term."""
    if placement is None or placement.pack is None or placement.pack.mode != PackMode.REQUIRED:
        return []
    judged = []
    for name, template in cliques:
        compiled = apply_to_template(template, placement, cliqueset, 0)
        own = {
            k: v
            for k, v in (((compiled.get("metadata") or {}).get("labels")) or {}).items()
            if not labels.is_reserved(k)  # never on a pod (`clique.bodies.pod_body`)
        }
        own.update(gang_labels(cliqueset, 0))
        own[labels.LABEL_CLIQUE] = name
        judged.append((name, compiled, own))
    return unplaceable(judged, namespace)
