"""The inputs of a clique's template hash, round trip: changing only a declared input
(`template_hash.INPUTS`) changes the hash, and changing only something declared not to
count (`template_hash.NOT_INPUTS`) keeps it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from cliques.api.cliqueset import CliqueSet
from cliques.controllers.base.revision import Hasher
from cliques.controllers.cliqueset import template_hash

QUEUE = "kueue.x-k8s.io/queue-name"
PRIORITY = "kueue.x-k8s.io/priority-class"


def manifest(queued: bool = True) -> dict[str, Any]:
    """A set with every input in use: placement, a Gang claim and (`queued`) a queue."""
    pod = {
        "spec": {
            "containers": [
                {"name": "a", "image": "img:1", "resources": {"claims": [{"name": "gpu"}]}},
                {"name": "b", "image": "side:1"},
            ]
        }
    }
    return {
        "metadata": {
            "name": "llama",
            "namespace": "ns",
            "labels": {QUEUE: "q", PRIORITY: "high"} if queued else {},
        },
        "spec": {
            "replicas": 2,
            "placement": {"pack": {"topologyKey": "topology.kubernetes.io/zone"}},
            "resourceClaims": [
                {
                    "name": "gpu",
                    "scope": "Gang",
                    "template": {"spec": {"devices": {"requests": [{"name": "g"}]}}},
                }
            ],
            "template": {
                "cliques": [
                    {"name": "leader", "replicas": 1, "template": copy.deepcopy(pod)},
                    {"name": "worker", "replicas": 2, "template": copy.deepcopy(pod)},
                ]
            },
        },
    }


Edit = Callable[[dict[str, Any]], None]


def _spec(doc: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = doc["spec"]
    return spec


def _leader(doc: dict[str, Any]) -> dict[str, Any]:
    leader: dict[str, Any] = _spec(doc)["template"]["cliques"][0]
    return leader


#: input name -> edits that change only that input
CHANGES: dict[str, list[Edit]] = {
    "template": [
        lambda d: _leader(d)["template"]["spec"]["containers"][0].update(image="img:2"),
        lambda d: _leader(d)["template"].setdefault("metadata", {}).update(labels={"x": "y"}),
    ],
    "placement": [
        lambda d: _spec(d)["placement"]["pack"].update(topologyKey="kubernetes.io/hostname"),
        lambda d: _spec(d).pop("placement"),
    ],
    "claims": [
        lambda d: _spec(d)["resourceClaims"][0].update(scope="Set"),
        lambda d: _spec(d)["resourceClaims"][0]["template"]["spec"]["devices"]["requests"][
            0
        ].update(name="h"),
    ],
    "podReadiness": [
        lambda d: _spec(d).update(podReadiness="Gang"),
    ],
    "kueue": [
        lambda d: d["metadata"]["labels"].update({QUEUE: "other"}),
        lambda d: d["metadata"]["labels"].update({PRIORITY: "low"}),
        lambda d: _spec(d)["template"]["cliques"][1].update(replicas=3),
        lambda d: d["metadata"]["labels"].pop(QUEUE),
    ],
}

#: what is declared not to count -> an edit that changes only it
UNCOUNTED: dict[str, Edit] = {
    "spec.replicas": lambda d: _spec(d).update(replicas=5),
    "spec.template.cliques[].replicas (but for a queued set)": lambda d: _leader(d).update(
        replicas=3
    ),
    "spec.template.cliques[].minAvailable": lambda d: _leader(d).update(minAvailable=0),
    "spec.template.cliques[].startsAfter": lambda d: (
        _spec(d).update(startupType="Explicit"),
        _spec(d)["template"]["cliques"][1].update(startsAfter=["leader"]),
    ),
    "spec.template.cliques[].autoscaling": lambda d: _leader(d).update(
        autoscaling={"maxReplicas": 4}
    ),
    "spec.template.scalingGroups": lambda d: _spec(d)["template"].update(
        scalingGroups=[{"name": "grp", "cliques": ["worker"], "replicas": 2}]
    ),
    "spec.startupType": lambda d: _spec(d).update(startupType="InOrder"),
    "spec.podReadiness Pod (the default)": lambda d: _spec(d).update(podReadiness="Pod"),
    "spec.updateStrategy": lambda d: _spec(d).update(
        updateStrategy={"type": "Recreate", "inPlace": "IfPossible", "maxUnavailable": 2}
    ),
    "spec.failurePolicy": lambda d: _spec(d).update(
        failurePolicy={"restartPolicy": "RecreateGang", "maxGangRestarts": 1}
    ),
    "spec.gangScheduling": lambda d: _spec(d).update(
        gangScheduling={"backend": "None", "disruption": "Pod"}
    ),
    "spec.headlessService": lambda d: _spec(d).update(headlessService=False),
    "spec.subdomainPolicy": lambda d: _spec(d).update(subdomainPolicy="UniquePerGang"),
    "the order of a pod template's containers": lambda d: _leader(d)["template"]["spec"][
        "containers"
    ].reverse(),
}


def hashes(doc: dict[str, Any]) -> dict[str, str]:
    return template_hash.hashes(msgspec.convert(doc, CliqueSet), Hasher())[0]


def edited(doc: dict[str, Any], edit: Edit) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    edit(out)
    return out


def test_every_input_and_every_uncounted_thing_is_tested() -> None:
    assert set(CHANGES) == {i.name for i in template_hash.INPUTS}
    assert set(UNCOUNTED) == set(template_hash.NOT_INPUTS)


@pytest.mark.parametrize(
    ("name", "index"), [(name, i) for name, edits in CHANGES.items() for i in range(len(edits))]
)
def test_changing_an_input_changes_the_hash(name: str, index: int) -> None:
    base = manifest()
    before, after = hashes(base), hashes(edited(base, CHANGES[name][index]))
    assert before["leader"] != after["leader"], name


@pytest.mark.parametrize("what", sorted(UNCOUNTED))
@pytest.mark.parametrize("queued", [False, True])
def test_changing_what_does_not_count_keeps_the_hash(what: str, queued: bool) -> None:
    if queued and what.startswith("spec.template.cliques[].replicas"):
        pytest.skip("a queued set's revision covers the cliques' replicas (input kueue)")
    base = manifest(queued)
    assert hashes(edited(base, UNCOUNTED[what])) == hashes(base), what


def test_a_set_without_placement_claims_or_queue_hashes_its_templates() -> None:
    doc = manifest(queued=False)
    del doc["spec"]["placement"], doc["spec"]["resourceClaims"]
    cqs = msgspec.convert(doc, CliqueSet)
    hasher = Hasher()
    got, rev = template_hash.hashes(cqs, hasher)
    assert rev == ""
    for c in cqs.spec.template.cliques:
        assert template_hash.basis(cqs, c) == c.template
        assert got[c.name] == hasher.template_hash(c.template)
