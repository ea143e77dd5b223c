"""What the informer adds to a failure it keeps retrying, so that a person reading the log
knows what to fix (no API server needed: only the message is built here)."""

from __future__ import annotations

from typing import Any

from cliques.api.pod import Pod
from cliques.kube import errors
from cliques.kube.informer import Informer
from cliques.kube.resources import CLIQUESETS, PODS


def informer(resource: Any) -> Informer[Pod]:
    return Informer(None, resource, Pod)  # type: ignore[arg-type]  # the client is unused


def test_a_custom_type_nobody_serves_points_at_its_crd() -> None:
    err = errors.from_response(404, b"404 page not found")
    assert informer(CLIQUESETS)._hint(err) == (
        " (the API server does not serve cliquesets.cliques.dev/v1alpha1: "
        "is its CustomResourceDefinition installed?)"
    )
    assert informer(PODS)._hint(err) == "", "a core type is always served"


def test_a_refusal_points_at_rbac() -> None:
    err = errors.from_response(403, b'{"reason": "Forbidden", "message": "no"}')
    assert "check the RBAC of this operator's service account for pods" in informer(PODS)._hint(err)


def test_other_failures_get_no_hint() -> None:
    assert informer(PODS)._hint(errors.from_response(500, b"boom")) == ""
    assert informer(PODS)._hint(TimeoutError()) == ""
