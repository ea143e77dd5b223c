"""A lost node on the real local control plane: a set of 3 gangs (leader 1 + worker 1) on 4
KWOK nodes with room for 2 pods each, `maxUnavailable: 1`, `nodeDrain.lostNodeSeconds: 5`.
One node that holds gang pods is powered off (its Lease taken from KWOK,
`cliques_lab.devcluster.node_power`: no heartbeat, no pod status, no final delete). The
controller-manager's node lifecycle marks it unreachable (NoExecute) after its grace period
(60 s in the dev cluster); 5 s later the operator moves the node's gangs whole and says on
the set (condition `Moving`) that their pods stay terminating
until an administrator acts. The gang is whole again elsewhere once the administrator taints
the node `node.kubernetes.io/out-of-service` (KEP-2268: the pod garbage collector then
deletes the node's terminating pods), or deletes the Node; never before, since its pod's
name is still taken; and no pod of the set runs on the lost node afterwards. The node's
gangs move one at a time (`maxUnavailable: 1`), as restarts do."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from cliques.api import labels
from cliques.controllers.features import drain
from cliques.kube.resources import NODES
from cliques_lab.devcluster import node_power
from tests.support.gangnodes import gang_nodes, own_slot, slot_cliqueset
from tests.support.harness import Cluster, PodTracker, running_operator, wait_for
from tests.support.kubectl import Kubectl

pytestmark = pytest.mark.cluster
__all__ = ["gang_nodes"]

SET = "lost"
UNREACHABLE = "node.kubernetes.io/unreachable"
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
#: The controller-manager's node-monitor grace period (50 s by default) and the taint after it.
LIFECYCLE_TIMEOUT = 150.0


def set_pods_on(pods: list[Any], node: str) -> tuple[list[str], list[str]]:
    """The set's pods bound to `node`: (live, terminating) names."""
    live, terminating = [], []
    for p in pods:
        if p.spec.node_name != node or p.metadata.labels.get(labels.LABEL_CLIQUESET) != SET:
            continue
        (terminating if p.metadata.deletion_timestamp else live).append(p.metadata.name)
    return sorted(live), sorted(terminating)


async def lose_a_node(
    cluster: Cluster,
    kubeconfig: str,
    gang_nodes: Callable[..., list[str]],
    *,
    recovery: str,
) -> None:
    slot = own_slot()
    gang_nodes(4, slots=2, resource=slot)
    k = Kubectl(kubeconfig)
    body = slot_cliqueset(
        SET,
        3,
        (("leader", 1), ("worker", 1)),
        resource=slot,
        updateStrategy={"maxUnavailable": 1},
        nodeDrain={"lostNodeSeconds": 5},
    )
    async with running_operator(kubeconfig, cluster.namespace, status_hold=0.0):
        await cluster.apply(body)
        await cluster.wait_available(SET, timeout=60)
        gangs_on: dict[str, set[str]] = {}
        for p in await cluster.pods():
            gangs_on.setdefault(p.spec.node_name, set()).add(
                p.metadata.labels[labels.LABEL_GANG_INDEX]
            )
        node = max(sorted(gangs_on), key=lambda n: len(gangs_on[n]))
        lost_gangs = gangs_on[node]
        on_node, _ = set_pods_on(await cluster.pods(), node)

        async with PodTracker(cluster.client, cluster.namespace, pods_per_gang=2) as tracker:
            tracker.start_counting()
            assert tracker.whole() == 3
            started = time.monotonic()
            k.ok(
                "patch",
                "lease",
                node,
                "-n",
                node_power.NODE_LEASE_NAMESPACE,
                "--type=merge",
                "-p",
                json.dumps(node_power.power_off_patch()),
            )

            async def tainted() -> bool:
                got = await cluster.client.get(NODES, None, node, dict)
                taints = got.get("spec", {}).get("taints") or []
                return any(t["key"] == UNREACHABLE and t["effect"] == "NoExecute" for t in taints)

            await wait_for(tainted, timeout=LIFECYCLE_TIMEOUT, what=f"{node} tainted unreachable")
            lost_after = time.monotonic() - started

            async def moving() -> Any:
                cond = await cluster.condition(SET, drain.CONDITION_MOVING)
                return cond if cond is not None and cond.status == "True" else None

            cond = await wait_for(moving, timeout=60, what="the set's Moving condition")
            assert node in cond.message and OUT_OF_SERVICE in cond.message, cond.message

            async def left_terminating() -> bool:
                live, terminating = set_pods_on(await cluster.pods(), node)
                return bool(terminating) and sorted(live + terminating) == on_node

            # The operator deleted a lost gang's pods (the first: the others wait for it, as
            # restarts do, maxUnavailable being 1); with no kubelet to finish the delete, the
            # lost node's pod stays terminating and its name stays taken.
            try:
                await wait_for(left_terminating, timeout=60, what=f"{node}'s pods terminating")
            except AssertionError:
                live, terminating = set_pods_on(await cluster.pods(), node)
                cond = await cluster.condition(SET, drain.CONDITION_MOVING)
                print(f"on {node}: live {live}, terminating {terminating}, was {on_node}; {cond}")
                raise
            st = (await cluster.cliqueset(SET)).status
            assert st is not None and st.available_replicas == 3 - len(lost_gangs), st
            acted = time.monotonic()
            if recovery == "out-of-service":
                k.ok("taint", "node", node, f"{OUT_OF_SERVICE}=nodeshutdown:NoExecute")
            else:
                k.ok("delete", "node", node, "--wait=false")

            async def whole_again() -> bool:
                st = (await cluster.cliqueset(SET)).status
                live, terminating = set_pods_on(await cluster.pods(), node)
                return (
                    st is not None
                    and st.available_replicas == 3
                    and tracker.whole() == 3
                    and not live
                    and not terminating
                )

            await wait_for(whole_again, timeout=90, what="3 whole gangs after the node is let go")
            back = time.monotonic() - acted
        cond_after = await wait_for(
            lambda: cluster.condition(SET, drain.CONDITION_MOVING), timeout=30, what="Moving"
        )
    print(
        f"{node} ({on_node}, gangs {sorted(lost_gangs)}) tainted unreachable after "
        f"{lost_after:.1f}s; whole again {back:.1f}s after {recovery}; "
        f"min whole {tracker.min_whole}"
    )
    # the other gangs kept serving: only the lost node's gangs went down
    assert tracker.min_whole is not None and tracker.min_whole >= 3 - len(lost_gangs)
    assert cond_after.status == "False", cond_after


async def test_lost_node_gangs_move_once_the_node_is_tainted_out_of_service(
    cluster: Cluster, kubeconfig: str, gang_nodes: Callable[..., list[str]]
) -> None:
    await lose_a_node(cluster, kubeconfig, gang_nodes, recovery="out-of-service")


async def test_lost_node_gangs_move_once_the_node_is_deleted(
    cluster: Cluster, kubeconfig: str, gang_nodes: Callable[..., list[str]]
) -> None:
    await lose_a_node(cluster, kubeconfig, gang_nodes, recovery="delete")
