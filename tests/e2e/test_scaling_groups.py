"""Scaling groups and scale targets with the operator on the dev cluster (docs/scaling.md):
the disaggregated example comes up with every instance of its prefill group (each instance
a sub-gang with its own leader address and `CLIQUES_GROUP_INDEX`), one CliqueScalingGroup
per gang publishing the selector of its pods and one HPA per gang for the autoscaled
clique; `kubectl scale` on a CliqueScalingGroup adds or removes whole instances (highest
first) and replaces no other pod; a changed template `replicas` reaches every gang once; an
autoscaled clique keeps the replicas its scaler chose through an apply of the set."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from cliques.api import labels
from cliques.api.scalinggroup import CliqueScalingGroup
from cliques.kube.resources import CLIQUES, HPAS, PODS, SCALING_GROUPS, Resource
from tests.support.harness import Cluster, running_operator, wait_for

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "examples" / "disaggregated.yaml"
NAME = "disagg"
#: pods of one gang of the example: frontend 1, prefill 2 x (1 + 2), decode 1
GANG_PODS = 1 + 2 * 3 + 1


def example(replicas: int = 1) -> dict[str, Any]:
    body: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    body["spec"]["replicas"] = replicas
    return body


def group(body: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = body["spec"]["template"]["scalingGroups"][0]
    return found


async def pods_by_name(cluster: Cluster) -> dict[str, dict[str, Any]]:
    raw = await cluster.client.list_page(PODS, cluster.namespace)
    return {
        p["metadata"]["name"]: p
        for p in json.loads(raw)["items"]
        if not p["metadata"].get("deletionTimestamp")
    }


async def settled(cluster: Cluster, pods: int, timeout: float = 120) -> dict[str, dict[str, Any]]:
    """Wait until the set is Available on its generation with exactly `pods` pods, all
    Ready; the pods by name."""

    async def done() -> dict[str, dict[str, Any]] | None:
        cqs = await cluster.cliqueset(NAME)
        st = cqs.status
        if st is None or st.observed_generation != cqs.metadata.generation:
            return None
        if not any(c.type == "Available" and c.status == "True" for c in st.conditions):
            return None
        have = await pods_by_name(cluster)
        ready = all(
            any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in p["status"].get("conditions", [])
            )
            for p in have.values()
        )
        return have if len(have) == pods and ready else None

    return await wait_for(done, timeout=timeout, what=f"{NAME} Available with {pods} Ready pods")


async def scale(
    cluster: Cluster, name: str, replicas: int, resource: Resource = SCALING_GROUPS
) -> None:
    """What `kubectl scale` (or an HPA) does: a patch of the scale subresource."""
    await cluster.client.patch(
        resource, cluster.namespace, name, {"spec": {"replicas": replicas}}, dict, sub="scale"
    )


def uids(pods: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {n: p["metadata"]["uid"] for n, p in pods.items()}


def env_of(pod: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in pod["spec"]["containers"][0].get("env", [])}


async def test_the_example_comes_up_with_every_instance_and_its_scale_targets(
    cluster: Cluster, kubeconfig: str, namespace: str
) -> None:
    async with running_operator(kubeconfig, namespace):
        await cluster.apply(example(replicas=2))
        pods = await settled(cluster, 2 * GANG_PODS)
        for gang in (0, 1):
            for inst in (0, 1):
                leader = pods[f"{NAME}-{gang}-prefill-leader-{inst}-0"]
                worker = pods[f"{NAME}-{gang}-prefill-worker-{inst}-1"]
                for pod in (leader, worker):
                    env = env_of(pod)
                    assert env[labels.ENV_GROUP_INDEX] == str(inst)
                    assert env[labels.ENV_SCALING_GROUP] == "prefill"
                    # the instance's own leader, under the set's shared Service
                    assert env[labels.ENV_LEADER_ADDRESS] == (
                        f"prefill-leader-{gang}-{inst}-0.{NAME}.{namespace}.svc"
                    )
                    assert pod["metadata"]["labels"][labels.LABEL_GROUP_INDEX] == str(inst)
                assert leader["spec"]["hostname"] == f"prefill-leader-{gang}-{inst}-0"
            decode = pods[f"{NAME}-{gang}-decode-0"]
            assert env_of(decode)[labels.ENV_LEADER_ADDRESS] == (
                f"frontend-{gang}-0.{NAME}.{namespace}.svc"
            )
            assert labels.ENV_GROUP_INDEX not in env_of(decode)

        groups = await cluster.list(SCALING_GROUPS, CliqueScalingGroup)
        assert sorted(g.metadata.name for g in groups) == [f"{NAME}-0-prefill", f"{NAME}-1-prefill"]
        for g in groups:
            assert g.spec.replicas == 2 and g.spec.min_available == 1
            st = g.status
            assert st is not None and st.replicas == 2 and st.ready_replicas == 2
            selected = await cluster.client.list_page(
                PODS, namespace, label_selector=st.selector, limit=100
            )
            assert len(json.loads(selected)["items"]) == 2 * 3, st.selector

        raw = await cluster.client.list_page(HPAS, namespace)
        hpas = {h["metadata"]["name"]: h for h in json.loads(raw)["items"]}
        assert sorted(hpas) == [f"{NAME}-0-decode", f"{NAME}-1-decode"]
        ref = hpas[f"{NAME}-0-decode"]["spec"]["scaleTargetRef"]
        assert ref == {
            "apiVersion": labels.API_VERSION,
            "kind": "Clique",
            "name": f"{NAME}-0-decode",
        }
        assert hpas[f"{NAME}-0-decode"]["spec"]["maxReplicas"] == 4


async def test_a_scale_adds_and_removes_whole_instances_and_replaces_nothing_else(
    cluster: Cluster, kubeconfig: str, namespace: str
) -> None:
    async with running_operator(kubeconfig, namespace):
        await cluster.apply(example(replicas=2))
        before = await settled(cluster, 2 * GANG_PODS)
        await scale(cluster, f"{NAME}-0-prefill", 3)
        grown = await settled(cluster, 2 * GANG_PODS + 3)
        added = set(grown) - set(before)
        assert added == {
            f"{NAME}-0-prefill-leader-2-0",
            f"{NAME}-0-prefill-worker-2-0",
            f"{NAME}-0-prefill-worker-2-1",
        }
        assert {n: u for n, u in uids(grown).items() if n in before} == uids(before)

        async def both_updated() -> bool:
            cqs = await cluster.cliqueset(NAME)
            return cqs.status is not None and cqs.status.updated_replicas == 2

        # (the set's status may be held a moment after the pods turn Ready)
        await wait_for(both_updated, timeout=30, what="both gangs counted updated")

        await scale(cluster, f"{NAME}-0-prefill", 1)
        shrunk = await settled(cluster, 2 * GANG_PODS - 3)
        gone = {
            f"{NAME}-0-prefill-leader-1-0",
            f"{NAME}-0-prefill-worker-1-0",
            f"{NAME}-0-prefill-worker-1-1",
        }
        assert uids(shrunk) == {n: u for n, u in uids(before).items() if n not in gone}
        obj = await cluster.client.get(
            SCALING_GROUPS, namespace, f"{NAME}-0-prefill", CliqueScalingGroup
        )
        assert obj.spec.replicas == 1 and obj.status is not None and obj.status.replicas == 1


async def test_template_replicas_reach_every_gang_once_and_a_scalers_count_stands(
    cluster: Cluster, kubeconfig: str, namespace: str
) -> None:
    async with running_operator(kubeconfig, namespace):
        body = example(replicas=2)
        await cluster.apply(body)
        before = await settled(cluster, 2 * GANG_PODS)
        # what an HPA does to the autoscaled decode clique of gang 1
        await scale(cluster, f"{NAME}-1-decode", 3, CLIQUES)
        await settled(cluster, 2 * GANG_PODS + 2)
        changed = copy.deepcopy(body)
        group(changed)["replicas"] = 3
        await cluster.apply(changed)
        after = await settled(cluster, 2 * GANG_PODS + 2 + 2 * 3)
        assert {n: u for n, u in uids(after).items() if n in before} == uids(before)
        assert f"{NAME}-1-decode-2" in after  # the scaler's count stands through the apply
        for gang in (0, 1):
            obj = await cluster.client.get(
                SCALING_GROUPS, namespace, f"{NAME}-{gang}-prefill", CliqueScalingGroup
            )
            assert obj.spec.replicas == 3
        # a scale by hand stands through an apply that leaves the group's replicas alone
        await scale(cluster, f"{NAME}-0-prefill", 2)
        await settled(cluster, 2 * GANG_PODS + 2 + 3)
        decode = changed["spec"]["template"]["cliques"][3]
        decode["autoscaling"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] = 30
        await cluster.apply(changed)
        await settled(cluster, 2 * GANG_PODS + 2 + 3)  # on the new generation

        async def hpa_changed() -> bool:
            raw = await cluster.client.list_page(HPAS, namespace)
            windows = [
                h["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"]
                for h in json.loads(raw)["items"]
            ]
            return windows == [30, 30]

        await wait_for(hpa_changed, timeout=30, what="the HPAs' new behaviour")
        obj = await cluster.client.get(
            SCALING_GROUPS, namespace, f"{NAME}-0-prefill", CliqueScalingGroup
        )
        assert obj.spec.replicas == 2
        assert f"{NAME}-1-decode-2" in await pods_by_name(cluster)


async def free_gpus(cluster: Cluster) -> int:
    """GPUs the cluster's nodes have that no pod holds (the fake nodes have 8 each)."""
    nodes = json.loads(await cluster.client.get_path("/api/v1/nodes"))["items"]
    total = sum(int(n["status"]["allocatable"].get("nvidia.com/gpu", "0")) for n in nodes)
    pods = json.loads(await cluster.client.get_path("/api/v1/pods"))["items"]
    held = sum(
        int(((c.get("resources") or {}).get("limits") or {}).get("nvidia.com/gpu", "0"))
        for p in pods
        if p["spec"].get("nodeName") and p["status"].get("phase") in ("Pending", "Running")
        for c in p["spec"]["containers"]
    )
    return total - held


async def test_instances_that_cannot_be_placed_hold_nothing_and_go_first(
    cluster: Cluster, kubeconfig: str, namespace: str
) -> None:
    """More instances than the nodes have GPUs for: those that fit run, the rest wait
    Pending, the gang stays Available (its minAvailable instance runs) and the scale target
    says how many are Ready; scaling back removes the waiting ones and replaces nothing."""
    async with running_operator(kubeconfig, namespace):
        await cluster.apply(example(replicas=1))
        before = await settled(cluster, GANG_PODS)
        # each instance needs 3 GPUs: ask for 2 more instances than the free GPUs can run
        want = 2 + await free_gpus(cluster) // 3 + 2
        await scale(cluster, f"{NAME}-0-prefill", want)

        async def stuck() -> CliqueScalingGroup | None:
            obj = await cluster.client.get(
                SCALING_GROUPS, namespace, f"{NAME}-0-prefill", CliqueScalingGroup
            )
            st = obj.status
            if st is None or st.replicas != want or st.ready_replicas >= want:
                return None
            pods = await pods_by_name(cluster)
            pending = [p for p in pods.values() if not p["spec"].get("nodeName")]
            return obj if len(pods) == GANG_PODS + 3 * (want - 2) and pending else None

        obj = await wait_for(stuck, timeout=120, what="the instances made, some waiting")
        assert obj.status is not None and 2 <= obj.status.ready_replicas < want
        cqs = await cluster.cliqueset(NAME)
        available = (
            [c for c in cqs.status.conditions if c.type == "Available"] if cqs.status else []
        )
        assert available and available[0].status == "True", available
        grown = await pods_by_name(cluster)
        assert {n: u for n, u in uids(grown).items() if n in before} == uids(before)

        await scale(cluster, f"{NAME}-0-prefill", 2)
        after = await settled(cluster, GANG_PODS)
        assert uids(after) == uids(before)
