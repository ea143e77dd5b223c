"""The CliqueSet plan's per-Clique checks, written for sets of thousands of gangs (one
lookup per Clique where the common case allows it), decide as the definitions they
shortcut: the subdomain policy as `recorded_policy`, the rehash as `needs_rehash`, the
Workloads in use as every Clique's annotation, the members of a set without scaling
groups as `scaling.member_of` (a Clique labelled with an instance is regrouped)."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import msgspec
import pytest

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.workload import Workload
from cliques.controllers.base.revision import Hasher
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.cliqueset import rollout as cliqueset_rollout
from cliques.controllers.cliqueset.controller import CliqueSetController
from cliques.controllers.features import gang_apis, gang_scheduling, subdomains
from cliques.kube.gangapi import GangAPI

from .planner_fixtures import HASHES, clique, cliqueset, gangs, services
from .planner_fixtures import set_snapshot as snap


def _with(c: Clique, *, annotations: dict[str, str], deleting: bool = False) -> Clique:
    meta = msgspec.structs.replace(
        c.metadata,
        annotations=annotations,
        deletion_timestamp="2030-01-01T00:00:00Z" if deleting else None,
    )
    return msgspec.structs.replace(c, metadata=meta)


@pytest.mark.parametrize(
    ("subdomain", "policy", "deleting"),
    list(
        itertools.product(
            ["", "llama-0"],
            [None, "Shared", "UniquePerGang", "Other"],
            [False, True],
        )
    ),
)
def test_the_subdomain_policy_is_the_recorded_ones(
    subdomain: str, policy: str | None, deleting: bool
) -> None:
    ann = {labels.ANNOTATION_SUBDOMAIN: subdomain} if subdomain else {}
    if policy is not None:
        ann[labels.ANNOTATION_SUBDOMAIN_POLICY] = policy
    one = _with(clique(0, "leader"), annotations=ann, deleting=deleting)
    shared = _with(
        clique(1, "leader"),
        annotations={
            labels.ANNOTATION_SUBDOMAIN: "llama",
            labels.ANNOTATION_SUBDOMAIN_POLICY: "Shared",
        },
    )
    cqs = cliqueset(replicas=2)
    assert cqs.spec.subdomain_policy is None
    unique = not deleting and subdomains.recorded_policy(one) == "UniquePerGang"
    want = "UniquePerGang" if unique else "Shared"
    assert subdomains.policy(cqs, [shared, one]) == want


@pytest.mark.parametrize(
    ("hash_", "algorithm", "role"),
    list(itertools.product(["h1", "old"], [1, 2], ["leader", "gone"])),
)
def test_rehashes_are_those_needs_rehash_asks_for(hash_: str, algorithm: int, role: str) -> None:
    hasher = Hasher()
    c = clique(0, role, hash_=hash_, algorithm=algorithm)
    hashes = {"leader": "h1", "worker": "h1"}
    ctl = SimpleNamespace(hasher=hasher)
    got = CliqueSetController._rehashes(ctl, cliqueset(), [c], hashes)  # type: ignore[arg-type]
    needed = cliqueset_rollout.needs_rehash(c, hashes, hasher.algorithm)
    assert (c.metadata.name in got) == needed


def _workload(name: str) -> Workload:
    return msgspec.convert(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
            "spec": {"podGroups": []},
        },
        type=Workload,
        from_attributes=True,
    )


@pytest.mark.parametrize("annotated", [False, True])
def test_workloads_in_use_are_kept_and_unused_ones_deleted(annotated: bool) -> None:
    cqs = cliqueset(replicas=2)
    ann = {labels.ANNOTATION_WORKLOAD: "llama-old"} if annotated else {}
    cl = [_with(c, annotations={**c.metadata.annotations, **ann}) for c in gangs(2)]
    api = gang_apis.pick(GangAPI(""))
    # (no Workload backend: every Workload of the set but one a Clique names is unused)
    plan = gang_scheduling.plan(cqs, cl, [_workload("llama-old")], api=api, bucket="7")
    assert [d.name for d in plan.deletes] == ([] if annotated else ["llama-old"])
    assert gang_scheduling.plan(cqs, cl, [], api=api, bucket="7").deletes == []


def test_a_clique_labelled_with_an_instance_in_a_set_without_groups_is_regrouped() -> None:
    cqs = cliqueset(replicas=2)
    cl = gangs(2)
    odd = cl[1]
    meta = msgspec.structs.replace(
        odd.metadata, labels={**odd.metadata.labels, labels.LABEL_GROUP_INDEX: "0"}
    )
    cl[1] = msgspec.structs.replace(odd, metadata=meta)
    plan = cliqueset_planner.plan(snap(cqs, cl, services=services(2), hashes=dict(HASHES)))
    assert [(d.name, d.reason) for d in plan.deletes] == [(odd.metadata.name, "CliqueRegrouped")]
