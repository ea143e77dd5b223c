"""spec.placement with the operator on the real scheduler: pack Required puts each gang in
one rack, exclusive keeps gangs in different racks (KWOK nodes labelled into racks). Both
ways the operator packs: with pod affinity terms (backend None, and servers without the
TopologyAwareWorkloadScheduling gate), and through each gang's PodGroup topology constraint
(backend Workload where the server keeps it)."""

from __future__ import annotations

from typing import Any

import pytest

from cliques.api import labels
from cliques.controllers.features import gang_apis, podgroups
from cliques.kube.resources import PODS
from tests.support import gangs
from tests.support.gangnodes import RACK, gang_nodes, slot_cliqueset
from tests.support.harness import Cluster, running_operator, wait_for
from tests.support.kubectl import Kubectl

__all__ = ["gang_nodes"]


@pytest.mark.parametrize("backend", ["None", "Workload"])
async def test_pack_and_exclusive_place_each_gang_in_its_own_rack(
    cluster: Cluster, kubeconfig: str, namespace: str, gang_nodes: Any, backend: str
) -> None:
    # Three racks of three one-slot nodes; two gangs of three pods.
    for rack in ("r1", "r2", "r3"):
        gang_nodes(3, node_labels={RACK: rack})
    body = slot_cliqueset(
        "placed",
        2,
        (("leader", 1), ("worker", 2)),
        gangScheduling={"backend": backend},
        placement={"pack": {"topologyKey": RACK}, "exclusive": {"topologyKey": RACK}},
    )
    async with running_operator(kubeconfig, namespace):
        await cluster.apply(body)

        async def all_bound() -> dict[str, list[str]] | None:
            pods = await cluster.pods()
            if len(pods) != 6 or any(not p.spec.node_name for p in pods):
                return None
            by_gang: dict[str, list[str]] = {}
            for p in pods:
                by_gang.setdefault(p.metadata.labels[labels.LABEL_GANG_INDEX], []).append(
                    p.spec.node_name
                )
            return by_gang

        by_gang = await wait_for(all_bound, timeout=60, what="6 pods bound")
        nodes = {n["metadata"]["name"]: n for n in Kubectl(kubeconfig).items("nodes")}
        racks = {g: {nodes[n]["metadata"]["labels"][RACK] for n in ns} for g, ns in by_gang.items()}
        assert all(len(r) == 1 for r in racks.values()), racks
        assert racks["0"] != racks["1"], racks
        await cluster.wait_available("placed", timeout=60)

        # Which way was it packed?
        api = await gangs.detect(cluster.client)
        by_scheduler = backend == "Workload" and "topology" in api.features
        for pod in await cluster.list(PODS, dict):
            affinity = pod["spec"].get("affinity") or {}
            assert ("podAffinity" not in affinity) is by_scheduler, affinity
            assert "podAntiAffinity" in affinity  # exclusive is always a pod term
        if by_scheduler:
            cqs = await cluster.cliqueset("placed")
            name = podgroups.wanted_name(cqs, 0, gang_apis.pick(api))
            group = await cluster.client.get(api.podgroup_resource, namespace, name, dict)
            assert group["spec"]["schedulingConstraints"] == {"topology": [{"key": RACK}]}
