"""What a clique's template hash is taken of, declared once: `INPUTS`, in the order they
are applied, each naming the part of the CliqueSet it is and the step that puts it into
the hash basis; `NOT_INPUTS`, what is declared not to count.

The basis starts from the clique's pod template as the user wrote it, then gets gang 0's
placement terms (`placement.hash_basis`), then the claims annotation (`claims.hash_basis`),
then, for `podReadiness: Gang`, the readiness gate (`gang_ready.hash_basis`: a pod's
readiness gates cannot change, so switching rolls the set), then, for a set Kueue queues,
the gangs' revision (`kueue.hash_basis`): a hash of the queue, the priority class and each
clique's name, replicas and hash without the revision (`kueue.revision`), so a queued gang
is what Kueue admitted and any change of it replaces it whole. Every step leaves a basis it
has nothing to add to as it was, so a set without placement, claims, gate or queue hashes
as it always did. `hashes` computes every clique's hash from these steps;
tests/unit/test_template_hash_inputs.py changes each input, and each
thing declared not to count, and checks the hash follows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from cliques.api.cliqueset import CliqueSet
from cliques.api.cliquetemplate import CliqueTemplate
from cliques.controllers.base.revision import Hasher
from cliques.controllers.features import claims, gang_ready, kueue, placement

#: (the basis so far, the set, the clique, the gangs' Kueue revision or "") -> the basis
Step = Callable[[Mapping[str, Any], CliqueSet, CliqueTemplate, str], Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class Input:
    """One input of a clique's template hash: its name, the part of the CliqueSet it is,
    and the step that puts it into the hash basis."""

    name: str
    what: str
    step: Step


def _template(_: Mapping[str, Any], __: CliqueSet, clique: CliqueTemplate, ___: str) -> Any:
    return clique.template


def _placement(
    basis: Mapping[str, Any], cqs: CliqueSet, _: CliqueTemplate, __: str
) -> Mapping[str, Any]:
    return placement.hash_basis(basis, cqs.spec.placement, cqs.metadata.name)


def _claims(
    basis: Mapping[str, Any], cqs: CliqueSet, clique: CliqueTemplate, _: str
) -> Mapping[str, Any]:
    return claims.hash_basis(basis, cqs, clique.name)


def _readiness(
    basis: Mapping[str, Any], cqs: CliqueSet, _: CliqueTemplate, __: str
) -> Mapping[str, Any]:
    return gang_ready.hash_basis(basis, cqs)


def _kueue(
    basis: Mapping[str, Any], _: CliqueSet, __: CliqueTemplate, rev: str
) -> Mapping[str, Any]:
    return kueue.hash_basis(basis, rev) if rev else basis


INPUTS: Final[tuple[Input, ...]] = (
    Input("template", "spec.template.cliques[].template, as written", _template),
    Input("placement", "spec.placement, compiled for gang 0", _placement),
    Input(
        "claims",
        "spec.resourceClaims: those the clique's pods get and every Gang-scope one "
        "(name, scope, a hash of scope and template)",
        _claims,
    ),
    Input(
        "podReadiness",
        "spec.podReadiness Gang: the readiness gate cliques.dev/gang-ready in the pod spec",
        _readiness,
    ),
    Input(
        "kueue",
        "a queued set's revision: its kueue.x-k8s.io/queue-name and priority-class labels, "
        "and each clique's name, spec.template.cliques[].replicas and hash without it",
        _kueue,
    ),
)

#: What is declared not to count: a change of only one of these keeps every hash (the
#: set's Cliques and pods stay as they are; the controllers apply it otherwise).
NOT_INPUTS: Final[tuple[str, ...]] = (
    "spec.replicas",
    "spec.template.cliques[].replicas (but for a queued set)",
    "spec.template.cliques[].minAvailable",
    "spec.template.cliques[].startsAfter",
    "spec.template.cliques[].autoscaling",
    "spec.template.scalingGroups",
    "spec.startupType",
    "spec.podReadiness Pod (the default)",
    "spec.updateStrategy",
    "spec.failurePolicy",
    "spec.gangScheduling",
    "spec.headlessService",
    "spec.subdomainPolicy",
    "the order of a pod template's containers",
)


def basis(cqs: CliqueSet, clique: CliqueTemplate, rev: str = "") -> Mapping[str, Any]:
    """What `clique`'s template hash is taken of: every input's step, in order."""
    out: Mapping[str, Any] = {}
    for i in INPUTS:
        out = i.step(out, cqs, clique, rev)
    return out


def hashes(cqs: CliqueSet, hasher: Hasher) -> tuple[dict[str, str], str]:
    """Each clique's template hash, and the gangs' Kueue revision ("" for a set Kueue does
    not queue), which every hash of a queued set then covers."""
    cliques = cqs.spec.template.cliques
    out = {c.name: hasher.template_hash(dict(basis(cqs, c))) for c in cliques}
    if kueue.queue_of(cqs) is None:
        return out, ""
    rev = kueue.revision(cqs, out)
    return {c.name: hasher.template_hash(dict(basis(cqs, c, rev))) for c in cliques}, rev
