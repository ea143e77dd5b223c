"""The bodies the controllers create: one owner reference for every kind of owner."""

from __future__ import annotations

from cliques.api import labels
from cliques.controllers.base import builders
from cliques.controllers.clique import bodies as pod_bodies
from tests.support import bodies as support_bodies

from .planner_fixtures import clique, cliqueset


def test_every_body_is_owned_by_a_blocking_controller_reference() -> None:
    cqs = cliqueset(replicas=1)
    tmpl = cqs.spec.template.cliques[0]
    body = support_bodies.clique_body(cqs, 0, tmpl, template_hash="h1", algorithm=1, bucket="7")
    service = builders.service_body(cqs, 0, "7")
    member = clique(0, "leader")
    pod = pod_bodies.pod_body(member, 0, "h1", 1)
    for owned, owner in ((body, cqs), (service, cqs), (pod, member)):
        (ref,) = owned["metadata"]["ownerReferences"]
        assert ref == {
            "apiVersion": owner.api_version,
            "kind": owner.kind,
            "name": owner.metadata.name,
            "uid": owner.metadata.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    assert service["metadata"]["labels"] == builders.gang_labels(cqs, 0, "7")
    assert body["metadata"]["labels"][labels.LABEL_CLIQUE] == tmpl.name
