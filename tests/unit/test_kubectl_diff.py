"""`kubectl cliques diff`, pure: ControllerRevisions compared, else the live Cliques against
spec.template, on the canonical form; and its text and JSON."""

from __future__ import annotations

import copy
import json
from typing import Any

import msgspec
import pytest

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.kubectl import diff, render
from cliques.kubectl.objects import ControllerRevision


def _pod_template(image: str = "vllm:1", cpu: str = "1") -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "x"}},
        "spec": {
            "containers": [
                {"name": "main", "image": image, "resources": {"requests": {"cpu": cpu}}},
                {"name": "side", "image": "busybox"},
            ]
        },
    }


def _set(image: str = "vllm:2") -> CliqueSet:
    return msgspec.convert(
        {
            "metadata": {"name": "llama", "namespace": "ns", "uid": "u1"},
            "spec": {
                "replicas": 2,
                "template": {
                    "cliques": [
                        {"name": "leader", "template": _pod_template()},
                        {"name": "worker", "replicas": 2, "template": _pod_template(image)},
                    ]
                },
            },
        },
        CliqueSet,
    )


def _clique(gang: int, role: str, template: dict[str, Any], hash_: str) -> Clique:
    return msgspec.convert(
        {
            "metadata": {
                "name": f"llama-{gang}-{role}",
                "labels": {labels.LABEL_TEMPLATE_HASH: hash_},
            },
            "spec": {"cliqueName": role, "gangIndex": gang, "template": template},
        },
        Clique,
    )


def _live(cqs: CliqueSet, worker_image: str) -> list[Clique]:
    """Two gangs: the leader on the current template, the worker on `worker_image`, each
    template as the operator writes it (with its claims annotation, say)."""
    hashes = diff.current_hashes(cqs)
    old = _pod_template(worker_image)
    old["metadata"]["annotations"] = {labels.ANNOTATION_RESOURCE_CLAIMS: "[]"}
    return [
        c
        for g in (0, 1)
        for c in (
            _clique(g, "leader", _pod_template(), hashes["leader"]),
            _clique(g, "worker", old, "old-hash" if worker_image != "vllm:2" else hashes["worker"]),
        )
    ]


def test_the_live_cliques_against_spec_template_name_the_first_real_difference() -> None:
    cqs = _set("vllm:2")
    report = diff.against_live(cqs, _live(cqs, "vllm:1"))
    assert not report.same
    leader, worker = report.cliques
    assert (leader.clique, leader.same, leader.gangs) == ("leader", True, (0, 1))
    assert worker.clique == "worker" and worker.gangs == (0, 1)
    assert worker.difference is not None
    assert worker.difference.path == "spec.containers[name=main].image"
    assert (worker.difference.left, worker.difference.right) == ("vllm:1", "vllm:2")
    assert worker.paths == ("spec.containers[name=main].image",)
    assert worker.in_place is True
    assert (worker.left_hash, worker.right_hash) == ("old-hash", diff.current_hashes(cqs)["worker"])
    assert "no ControllerRevisions recorded" in report.what


def test_a_reordered_list_and_a_respelled_quantity_are_no_difference() -> None:
    cqs = _set("vllm:1")
    live = _live(cqs, "vllm:1")
    respelled = copy.deepcopy(live[1].spec.template)
    respelled["spec"]["containers"].reverse()
    respelled["spec"]["containers"][1]["resources"]["requests"]["cpu"] = "1000m"
    live[1] = _clique(0, "worker", respelled, "some-other-hash")
    report = diff.against_live(cqs, live)
    assert report.same, report


def test_a_clique_added_or_removed_is_on_one_side() -> None:
    cqs = _set()
    live = [*_live(cqs, "vllm:2"), _clique(0, "gone", _pod_template(), "h")]
    live = [c for c in live if c.spec.clique_name != "worker"]
    report = diff.against_live(cqs, live)
    assert [(c.clique, c.only_in) for c in report.cliques] == [
        ("leader", ""),
        ("gone", "left"),
        ("worker", "right"),
    ]
    assert not report.same


def _revision(n: int, image: str, owner: str = "u1", **meta: Any) -> ControllerRevision:
    data = {
        "spec": {"template": {"cliques": [{"name": "worker", "template": _pod_template(image)}]}}
    }
    owners = [
        {"apiVersion": "cliques.dev/v1alpha1", "kind": "CliqueSet", "name": "llama", "uid": owner}
    ]
    return msgspec.convert(
        {
            "metadata": {"name": f"llama-r{n}", "ownerReferences": owners, **meta},
            "revision": n,
            "data": data,
        },
        ControllerRevision,
    )


def test_revisions_of_the_set_are_its_own_oldest_first() -> None:
    cqs = _set()
    labelled = msgspec.convert(
        {
            "metadata": {"name": "llama-l", "labels": {labels.LABEL_CLIQUESET: "llama"}},
            "revision": 2,
        },
        ControllerRevision,
    )
    others = [_revision(9, "x", owner="another-uid")]
    found = diff.owned_revisions(cqs, [_revision(3, "c"), labelled, _revision(1, "a"), *others])
    assert [r.metadata.name for r in found] == ["llama-r1", "llama-l", "llama-r3"]


def test_a_revision_against_the_newest() -> None:
    cqs = _set()
    revisions = [_revision(1, "vllm:1"), _revision(2, "vllm:2"), _revision(3, "vllm:3")]
    report = diff.between_revisions(cqs, revisions, None)
    (worker,) = report.cliques
    assert worker.difference is not None
    assert (worker.difference.left, worker.difference.right) == ("vllm:2", "vllm:3")
    assert "revision 2" in report.what and "revision 3, the newest" in report.what
    report = diff.between_revisions(cqs, revisions, 1)
    assert report.cliques[0].difference is not None
    assert report.cliques[0].difference.left == "vllm:1"
    with pytest.raises(diff.RevisionError, match=r"has no revision 7 \(1, 2, 3\)"):
        diff.between_revisions(cqs, revisions, 7)


@pytest.mark.parametrize(
    "data",
    [
        {"spec": {"template": {"cliques": [{"name": "w", "template": {"spec": {}}}]}}},
        {"template": {"cliques": [{"name": "w", "template": {"spec": {}}}]}},
        {"cliques": [{"name": "w", "template": {"spec": {}}}]},
    ],
)
def test_a_revisions_data_is_read_in_each_shape(data: dict[str, Any]) -> None:
    assert diff.revision_templates(data) == {"w": {"spec": {}}}
    assert diff.revision_templates("not a template") == {}


def test_the_text_says_what_was_compared_and_fits_100_columns() -> None:
    cqs = _set("vllm:" + "x" * 400)
    report = diff.against_live(cqs, _live(cqs, "vllm:1"))
    lines = render.diff_text(report)
    assert all(len(line) <= render.WIDTH for line in lines), lines
    assert lines[0].startswith("compared: the pod templates the live Cliques of CliqueSet llama")
    assert "clique leader (gangs 0, 1): same (hash " in "\n".join(lines)
    assert any(
        line.startswith("clique worker (gangs 0, 1): different (hash old-hash -> ")
        for line in lines
    )
    assert "  first difference at spec.containers[name=main].image" in lines
    assert lines[-1] == "different: 1 clique(s) differ"
    doc = json.loads(render.dumps(render.diff_json(report)))
    assert doc["same"] is False
    worker = doc["cliques"][1]
    assert worker["difference"]["right"] == "vllm:" + "x" * 400  # whole in JSON
    assert worker["inPlace"] is True and worker["gangs"] == [0, 1]
