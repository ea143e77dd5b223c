"""cliques.controllers.features.placement: spec.placement compiled into pod (anti-)affinity, merged
with the user's, and the check that a gang's pods can pass the scheduler's pod-affinity
filter. The real scheduler's verdict is in tests/integration/test_gang_scheduler.py."""

import copy
from typing import Any

import pytest

from cliques import api
from cliques.api import labels
from cliques.controllers.features import placement as pl

REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"
RACK = "topology.kubernetes.io/rack"

PACK_TERM = {
    "labelSelector": {
        "matchLabels": {labels.LABEL_CLIQUESET: "llama", labels.LABEL_GANG_INDEX: "3"}
    },
    "topologyKey": RACK,
}
EXCLUSIVE_TERM = {
    "labelSelector": {
        "matchExpressions": [
            {"key": labels.LABEL_CLIQUESET, "operator": "In", "values": ["llama"]},
            {"key": labels.LABEL_GANG_INDEX, "operator": "NotIn", "values": ["3"]},
        ]
    },
    "topologyKey": "zone",
}


def placement(
    pack: str | None = None, mode: str = "Required", exclusive: str | None = None
) -> api.Placement:
    return api.Placement(
        pack=api.PackPolicy(topology_key=pack, mode=mode) if pack else None,  # type: ignore[arg-type]
        exclusive=api.ExclusivePolicy(topology_key=exclusive) if exclusive else None,
    )


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, {}),
        (api.Placement(), {}),
        (placement(pack=RACK), {"podAffinity": {REQ: [PACK_TERM]}}),
        (
            placement(pack=RACK, mode="Preferred"),
            {"podAffinity": {PREF: [{"weight": 100, "podAffinityTerm": PACK_TERM}]}},
        ),
        (placement(exclusive="zone"), {"podAntiAffinity": {REQ: [EXCLUSIVE_TERM]}}),
        (
            placement(pack=RACK, exclusive="zone"),
            {"podAffinity": {REQ: [PACK_TERM]}, "podAntiAffinity": {REQ: [EXCLUSIVE_TERM]}},
        ),
    ],
    ids=["none", "empty", "pack-required", "pack-preferred", "exclusive", "both"],
)
def test_compile(given: api.Placement | None, expected: dict[str, Any]) -> None:
    assert pl.compile_placement(given, "llama", 3) == expected


USER_NODE = {
    "nodeAffinity": {
        REQ: {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]}
    }
}
USER_POD_REQ = {"labelSelector": {"matchLabels": {"app": "llama"}}, "topologyKey": "zone"}
USER_POD_PREF = {"weight": 5, "podAffinityTerm": USER_POD_REQ}
USER_ANTI = {"labelSelector": {"matchLabels": {"app": "noisy"}}, "topologyKey": RACK}


@pytest.mark.parametrize(
    ("user", "given", "expected"),
    [
        (None, None, None),
        (None, api.Placement(), None),
        (USER_NODE, None, USER_NODE),
        (USER_NODE, placement(pack=RACK), {**USER_NODE, "podAffinity": {REQ: [PACK_TERM]}}),
        (
            {"podAffinity": {REQ: [USER_POD_REQ], PREF: [USER_POD_PREF]}},
            placement(pack=RACK),
            {"podAffinity": {REQ: [USER_POD_REQ, PACK_TERM], PREF: [USER_POD_PREF]}},
        ),
        (
            {"podAffinity": {PREF: [USER_POD_PREF]}},
            placement(pack=RACK, mode="Preferred"),
            {"podAffinity": {PREF: [USER_POD_PREF, {"weight": 100, "podAffinityTerm": PACK_TERM}]}},
        ),
        (
            {**USER_NODE, "podAntiAffinity": {REQ: [USER_ANTI], PREF: []}},
            placement(exclusive="zone"),
            {**USER_NODE, "podAntiAffinity": {REQ: [USER_ANTI, EXCLUSIVE_TERM], PREF: []}},
        ),
        # Applied to a template that already carries our terms: nothing is added twice.
        (
            {"podAffinity": {REQ: [PACK_TERM]}, "podAntiAffinity": {REQ: [EXCLUSIVE_TERM]}},
            placement(pack=RACK, exclusive="zone"),
            {"podAffinity": {REQ: [PACK_TERM]}, "podAntiAffinity": {REQ: [EXCLUSIVE_TERM]}},
        ),
    ],
    ids=[
        "nothing",
        "empty-placement",
        "user-only",
        "node-affinity-kept",
        "user-required-first",
        "user-preferred-first",
        "anti-affinity-appended",
        "idempotent",
    ],
)
def test_merge_keeps_the_users_terms_first(
    user: dict[str, Any] | None, given: api.Placement | None, expected: dict[str, Any] | None
) -> None:
    before = copy.deepcopy(user)
    merged = pl.merge_affinity(user, given, "llama", 3)
    assert merged == expected
    assert user == before  # never mutated
    if user is not None and merged is not None:
        assert merged is not user
        for kind in ("podAffinity", "podAntiAffinity"):
            if kind in user and kind in merged:
                assert merged[kind] is not user[kind]


def test_apply_to_template_returns_a_new_template() -> None:
    template = {
        "metadata": {"labels": {"app": "llama"}},
        "spec": {"containers": [{"name": "m"}], "affinity": copy.deepcopy(USER_NODE)},
    }
    before = copy.deepcopy(template)
    out = pl.apply_to_template(template, placement(pack=RACK), "llama", 3)
    assert template == before
    assert out["spec"]["affinity"] == {**USER_NODE, "podAffinity": {REQ: [PACK_TERM]}}
    assert out["spec"]["containers"] == template["spec"]["containers"]
    assert out["spec"]["containers"] is not template["spec"]["containers"]
    # No placement, no affinity: the template is unchanged (and still a copy).
    bare = {"spec": {"containers": [{"name": "m"}]}}
    assert pl.apply_to_template(bare, None, "llama", 0) == bare


def test_gang_index_is_a_label_value_string() -> None:
    terms = pl.compile_placement(placement(pack="k", exclusive="k"), "s", 12)
    assert terms["podAffinity"][REQ][0]["labelSelector"]["matchLabels"] == pl.gang_labels("s", 12)
    expr = terms["podAntiAffinity"][REQ][0]["labelSelector"]["matchExpressions"][1]
    assert expr["values"] == ["12"]


# ---- Label selectors, as the API server evaluates them ------------------------------------

POD = {"app": "llama", "tier": "gpu", labels.LABEL_GANG_INDEX: "0"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        (None, False),
        ({}, True),
        ({"matchLabels": {"app": "llama"}}, True),
        ({"matchLabels": {"app": "other"}}, False),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["x", "llama"]}]}, True),
        ({"matchExpressions": [{"key": "missing", "operator": "In", "values": ["x"]}]}, False),
        ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["llama"]}]}, False),
        ({"matchExpressions": [{"key": "missing", "operator": "NotIn", "values": ["x"]}]}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, False),
        ({"matchExpressions": [{"key": "missing", "operator": "DoesNotExist"}]}, True),
        (
            {
                "matchLabels": {"app": "llama"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["cpu"]}],
            },
            False,
        ),
    ],
)
def test_selector_matches(selector: dict[str, Any] | None, matches: bool) -> None:
    assert pl.selector_matches(selector, POD) is matches


@pytest.mark.parametrize(
    ("term", "namespace", "matches"),
    [
        ({"labelSelector": {"matchLabels": {"app": "llama"}}}, "ns", True),
        ({"labelSelector": {"matchLabels": {"app": "llama"}}, "namespaces": ["ns"]}, "ns", True),
        ({"labelSelector": {"matchLabels": {"app": "llama"}}, "namespaces": ["o"]}, "ns", False),
        (
            {
                "labelSelector": {"matchLabels": {"app": "llama"}},
                "namespaces": ["o"],
                "namespaceSelector": {},
            },
            "ns",
            True,
        ),
        ({"topologyKey": "k"}, "ns", False),
    ],
)
def test_term_matches(term: dict[str, Any], namespace: str, matches: bool) -> None:
    assert pl.term_matches(term, POD, namespace) is matches


# ---- Which cliques of a gang could never schedule ------------------------------------------


def clique(
    name: str, role: str, user_terms: list[dict[str, Any]], pack: bool = True
) -> tuple[str, dict[str, Any], dict[str, str]]:
    pod_labels = {"role": role, **pl.gang_labels("llama", 0)}
    template: dict[str, Any] = {"spec": {"containers": [{"name": "m"}]}}
    if user_terms:
        template["spec"]["affinity"] = {"podAffinity": {REQ: user_terms}}
    out = pl.apply_to_template(template, placement(pack=RACK) if pack else None, "llama", 0)
    return name, out, pod_labels


def selects(role: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"role": role}}, "topologyKey": "zone"}


@pytest.mark.parametrize(
    ("gang", "stuck"),
    [
        # The pack term alone always matches the pod itself: the first pod may go anywhere.
        ([clique("leader", "leader", []), clique("worker", "worker", [])], []),
        # A user term every pod of the clique matches itself: still fine.
        ([clique("leader", "leader", [selects("leader")])], []),
        # Workers need the leader in their zone; the leader can go first: fine.
        ([clique("leader", "leader", []), clique("worker", "worker", [selects("leader")])], []),
        # A user term no pod of the gang matches (a cache outside it): ANDed with the pack
        # term, no pod ever matches both, and the first-pod rule does not apply.
        (
            [clique("leader", "leader", []), clique("worker", "worker", [selects("cache")])],
            ["worker"],
        ),
        # Two cliques each waiting for the other: neither can go first.
        (
            [
                clique("leader", "leader", [selects("worker")]),
                clique("worker", "worker", [selects("leader")]),
            ],
            ["leader", "worker"],
        ),
        # Without a required pack term the user's terms are the user's business.
        ([clique("worker", "worker", [selects("cache")], pack=False)], []),
    ],
    ids=["pack-only", "self-matching", "chain", "outside-pod", "cycle", "no-pack"],
)
def test_unplaceable(
    gang: list[tuple[str, dict[str, Any], dict[str, str]]], stuck: list[str]
) -> None:
    assert pl.unplaceable(gang, "ns") == stuck
