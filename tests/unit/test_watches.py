"""Controllers declare what they watch (`kube.watches`) and the Manager builds one informer
per declared name, shared between controllers, only for what the cluster serves. No
cluster: the informers are built, not run."""

from __future__ import annotations

from typing import Any

import pytest

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.pod import Pod
from cliques.controllers.clique.controller import CliqueController, gang_key
from cliques.controllers.cliqueset.controller import CliqueSetController
from cliques.controllers.features import drain
from cliques.kube import store
from cliques.kube.gangapi import GangAPI
from cliques.kube.resources import CLIQUES, PODS
from cliques.kube.watches import Watch, merge
from cliques.operator.buckets import BucketSet
from cliques.operator.cliqueset_cache import CliqueSetCache
from cliques.operator.manager import CONTROLLERS, WATCHES_PER_MANAGER, Config, Manager

ALL = GangAPI(
    "v1beta1",
    features=frozenset({"composite"}),
    claims=True,
    kueue=True,
    drain=True,
    evictions=True,
    composite_version="v1alpha3",
)


def test_a_shared_watch_has_the_indexes_of_both_controllers() -> None:
    merged = {w.name: w for w in merge([*CliqueSetController.WATCHES, *CliqueController.WATCHES])}
    cliques = merged["cliques"]
    assert set(cliques.indexers) == {"controller", "gang"}
    assert cliques.indexers["gang"] is gang_key and cliques.faults
    assert merged["pods"].indexers == {"controller": store.by_controller, "node": drain.by_node}
    assert len(merged) == WATCHES_PER_MANAGER == 17


def test_two_functions_for_one_index_are_refused() -> None:
    first = Watch("cliques", Clique, CLIQUES, indexers={"gang": gang_key})
    other = Watch("cliques", Clique, CLIQUES, indexers={"gang": store.by_controller})
    with pytest.raises(ValueError, match="index 'gang'"):
        merge([first, other])
    with pytest.raises(ValueError, match="two kinds"):
        merge([first, Watch("cliques", Pod, PODS)])


def _informers(api: GangAPI) -> tuple[CliqueSetCache, dict[str, Any]]:
    client: Any = None
    cfg = Config(namespace="ns", buckets=BucketSet(frozenset({3}), total=16))
    cache = CliqueSetCache(client, namespace="ns", buckets=frozenset({3}), total=16)
    return cache, Manager(cfg)._informers(client, api, cache)


def test_the_manager_builds_only_what_the_cluster_serves() -> None:
    cache, informers = _informers(GangAPI())
    assert list(informers) == [
        "cliquesets",
        "cliques",
        "services",
        "scaling_groups",
        "hpas",
        "controller_revisions",
        "pods",
    ]
    assert informers["cliquesets"] is cache
    assert informers["pods"].label_selector == BucketSet(frozenset({3}), 16).selector()
    selected = informers["controller_revisions"].label_selector
    assert selected == BucketSet(frozenset({3}), 16).selector()
    _, everything = _informers(ALL)
    assert len(everything) == WATCHES_PER_MANAGER
    # the Nodes are cluster-wide and all of them; the budgets the set owns, by bucket
    assert everything["nodes"].label_selector == ""
    assert everything["nodes"].resource.namespaced is False
    assert (
        everything["pod_disruption_budgets"].label_selector
        == BucketSet(frozenset({3}), 16).selector()
    )
    assert everything["local_queues"].label_selector == ""
    # the Evictions that name the operator's responder, in the namespace
    assert everything["evictions"].label_selector == labels.LABEL_RESPONDER
    assert everything["evictions"].namespace == "ns"
    assert everything["pod_groups"].resource.version == "v1beta1"


def test_each_controller_gets_its_own_informers() -> None:
    _, informers = _informers(ALL)
    manager = Manager(Config())
    manager._wire(None, informers, ALL)  # type: ignore[arg-type]
    by_type = {type(c): c for c in manager.controllers}
    assert set(by_type) == set(CONTROLLERS)
    cqs: Any = by_type[CliqueSetController]
    cq: Any = by_type[CliqueController]
    assert cqs.cliques is cq.cliques is informers["cliques"]
    assert cqs.features.kueue.workloads is informers["kueue_workloads"]
    assert cqs.features.revisions.revisions is informers["controller_revisions"]
    assert [i.resource.plural for i in cqs.features.claims.objects] == [
        "resourceclaims",
        "resourceclaimtemplates",
    ]
    assert [r.name for r in manager.runners] == ["cliqueset", "clique"]
