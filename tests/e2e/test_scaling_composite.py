"""Gang scheduling of scaling groups as CompositePodGroup trees, with the operator on the
dev cluster (Kubernetes 1.37, whose dev cluster serves scheduling.k8s.io/v1alpha3
CompositePodGroups, or 1.38, whose serves them in v1beta1: the tests read them in the
version discovery found, the one the operator writes in; docs/scaling.md, "Gang scheduling
of instances"): a set whose gangs
are one scaling group comes up with one CompositePodGroup per gang (`minGroupCount`: the
group's `minAvailable`) and one child PodGroup per instance, which every pod of the
instance names; `kubectl scale` of a gang's CliqueScalingGroup adds a child for the new
instance, whose pods bind, and replaces no other pod; a scale down deletes the child. The
disaggregated example (cliques outside the group too) gets the nested tree."""

from __future__ import annotations

from typing import Any

import pytest

from cliques.api import labels
from cliques.controllers.features import composite_groups
from cliques.kube import gangapi
from cliques.kube.resources import PODS, Resource
from tests.e2e.test_scaling_groups import GANG_PODS, example, scale
from tests.support import gangs
from tests.support.harness import Cluster, running_operator, wait_for

NAME = "flat"
PODGROUPS = gangapi.podgroups(composite_groups.POD_GROUP_VERSION)
#: pods of one instance: a leader and 2 workers
INSTANCE_PODS = 3


def flat_set(replicas: int = 2) -> dict[str, Any]:
    """A set whose gangs are one scaling group `prefill` (a leader and 2 workers per
    instance; 2 instances, 1 needed), gang-scheduled through the Workload backend."""

    def tmpl(role: str) -> dict[str, Any]:
        return {
            "metadata": {"labels": {"role": role}},
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox:1.36",
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                    }
                ]
            },
        }

    return {
        "apiVersion": "cliques.dev/v1alpha1",
        "kind": "CliqueSet",
        "metadata": {"name": NAME},
        "spec": {
            "replicas": replicas,
            "gangScheduling": {"backend": "Workload"},
            "template": {
                "cliques": [
                    {"name": "leader", "replicas": 1, "template": tmpl("leader")},
                    {"name": "worker", "replicas": 2, "template": tmpl("worker")},
                ],
                "scalingGroups": [
                    {
                        "name": "prefill",
                        "cliques": ["leader", "worker"],
                        "replicas": 2,
                        "minAvailable": 1,
                    }
                ],
            },
        },
    }


@pytest.fixture
async def composite_api(cluster: Cluster) -> gangapi.GangAPI:
    api = await gangs.detect(cluster.client, cluster.namespace)
    if not api.composite:
        pytest.skip(f"the dev cluster serves no CompositePodGroups: {api.describe()}")
    return api


async def objects(cluster: Cluster, resource: Resource) -> dict[str, dict[str, Any]]:
    """The live objects of `resource` in the namespace, by name."""
    return {
        o["metadata"]["name"]: o
        for o in await cluster.list(resource, dict)
        if not o["metadata"].get("deletionTimestamp")
    }


def ready(pod: dict[str, Any]) -> bool:
    """Bound and Ready."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    return bool(pod["spec"].get("nodeName")) and any(
        c["type"] == "Ready" and c["status"] == "True" for c in conditions
    )


async def running(cluster: Cluster, count: int, name: str = NAME) -> dict[str, dict[str, Any]]:
    """Wait until the set is Available on its generation with exactly `count` pods, all
    bound and Ready; the pods by name."""

    async def done() -> dict[str, dict[str, Any]] | None:
        cqs = await cluster.cliqueset(name)
        st = cqs.status
        if st is None or st.observed_generation != cqs.metadata.generation:
            return None
        if not any(c.type == "Available" and c.status == "True" for c in st.conditions):
            return None
        pods = await objects(cluster, PODS)
        return pods if len(pods) == count and all(map(ready, pods.values())) else None

    return await wait_for(done, timeout=120, what=f"{name} Available with {count} bound pods")


def group_of(pod: dict[str, Any]) -> str:
    """The PodGroup a pod names."""
    return str((pod["spec"].get("schedulingGroup") or {}).get("podGroupName", ""))


def uid(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["uid"])


def index(obj: dict[str, Any], key: str) -> int:
    return int(obj["metadata"]["labels"][key])


async def trees(
    cluster: Cluster, api: gangapi.GangAPI
) -> dict[int, tuple[dict[str, Any], dict[int, dict[str, Any]]]]:
    """Gang -> (its one CompositePodGroup, instance -> its child PodGroup); asserts the
    flat shape: one composite per gang, each PodGroup a child of its gang's."""
    composites = await objects(cluster, api.composite_resource)
    out: dict[int, tuple[dict[str, Any], dict[int, dict[str, Any]]]] = {}
    for c in composites.values():
        gang = index(c, labels.LABEL_GANG_INDEX)
        assert gang not in out, f"two composites in gang {gang}"
        assert "parentCompositePodGroupName" not in c["spec"]
        out[gang] = (c, {})
    for g in (await objects(cluster, PODGROUPS)).values():
        gang, inst = index(g, labels.LABEL_GANG_INDEX), index(g, labels.LABEL_GROUP_INDEX)
        root, children = out[gang]
        assert g["spec"]["parentCompositePodGroupName"] == root["metadata"]["name"]
        assert inst not in children
        children[inst] = g
    return out


async def test_each_gang_is_a_composite_with_a_child_per_instance_that_scales(
    cluster: Cluster, kubeconfig: str, namespace: str, composite_api: gangapi.GangAPI
) -> None:
    async with running_operator(kubeconfig, namespace):
        await cluster.apply(flat_set(replicas=2))
        before = await running(cluster, 2 * 2 * INSTANCE_PODS)
        found = await trees(cluster, composite_api)
        assert sorted(found) == [0, 1]
        for root, children in found.values():
            assert root["spec"]["schedulingPolicy"] == {"gang": {"minGroupCount": 1}}
            assert sorted(children) == [0, 1]
            for child in children.values():
                assert child["spec"]["schedulingPolicy"] == {"gang": {"minCount": INSTANCE_PODS}}
        # every pod names its own instance's PodGroup
        for name, pod in before.items():
            gang, inst = index(pod, labels.LABEL_GANG_INDEX), index(pod, labels.LABEL_GROUP_INDEX)
            assert group_of(pod) == found[gang][1][inst]["metadata"]["name"], name
        cond = await cluster.condition(NAME, "GangScheduling")
        assert cond.status == "True" and "CompositePodGroups" in cond.message, cond.message
        # the version discovery found: v1beta1 on 1.38, v1alpha3 on 1.37
        assert f"scheduling.k8s.io/{composite_api.composite_version} Comp" in cond.message

        # kubectl scale cqsg/flat-0-prefill --replicas 3: a child for instance 2 only
        await scale(cluster, f"{NAME}-0-prefill", 3)
        grown = await running(cluster, 2 * 2 * INSTANCE_PODS + INSTANCE_PODS)
        added = set(grown) - set(before)
        assert added == {f"{NAME}-0-leader-2-0", f"{NAME}-0-worker-2-0", f"{NAME}-0-worker-2-1"}
        assert {n: uid(grown[n]) for n in before} == {n: uid(p) for n, p in before.items()}
        after = await trees(cluster, composite_api)
        assert sorted(after[0][1]) == [0, 1, 2] and sorted(after[1][1]) == [0, 1]
        assert uid(after[0][0]) == uid(found[0][0])
        for gang, (_, children) in found.items():
            for inst, child in children.items():
                assert uid(after[gang][1][inst]) == uid(child)
        child = after[0][1][2]["metadata"]["name"]
        assert {group_of(grown[n]) for n in added} == {child}

        # and down to 1: the children of instances 1 and 2 go, nothing else
        await scale(cluster, f"{NAME}-0-prefill", 1)
        shrunk = await running(cluster, 2 * 2 * INSTANCE_PODS - INSTANCE_PODS)
        assert {n: uid(p) for n, p in shrunk.items()} == {
            n: uid(p)
            for n, p in before.items()
            if not n.startswith((f"{NAME}-0-leader-1", f"{NAME}-0-worker-1"))
        }
        gone = {after[0][1][i]["metadata"]["name"] for i in (1, 2)}

        async def deleted() -> bool:
            names = {g["metadata"]["name"] for g in await cluster.list(PODGROUPS, dict)}
            return not names & gone

        await wait_for(deleted, timeout=60, what=f"PodGroups {sorted(gone)} deleted")
        final = await trees(cluster, composite_api)
        assert sorted(final[0][1]) == [0] and sorted(final[1][1]) == [0, 1]
        assert {g: uid(r) for g, (r, _) in final.items()} == {
            g: uid(r) for g, (r, _) in found.items()
        }


async def test_a_gang_with_cliques_outside_its_group_is_a_nested_tree(
    cluster: Cluster, kubeconfig: str, namespace: str, composite_api: gangapi.GangAPI
) -> None:
    async with running_operator(kubeconfig, namespace):
        await cluster.apply(example(replicas=1))
        pods = await running(cluster, GANG_PODS, name="disagg")
        composites = await objects(cluster, composite_api.composite_resource)
        pgs = await objects(cluster, PODGROUPS)
        (root,) = [c for c in composites.values() if "parentCompositePodGroupName" not in c["spec"]]
        (prefill,) = [c for c in composites.values() if c is not root]
        root_name = root["metadata"]["name"]
        # the root needs both its children: the frontend's and decode's PodGroup, prefill's
        assert root["spec"]["schedulingPolicy"] == {"gang": {"minGroupCount": 2}}
        assert prefill["spec"]["parentCompositePodGroupName"] == root_name
        assert prefill["spec"]["schedulingPolicy"] == {"gang": {"minGroupCount": 1}}
        for pod in pods.values():
            group = pgs[group_of(pod)]
            inst = pod["metadata"]["labels"].get(labels.LABEL_GROUP_INDEX)
            if inst is None:
                assert group["spec"]["parentCompositePodGroupName"] == root_name
                assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
            else:
                assert group["metadata"]["labels"][labels.LABEL_GROUP_INDEX] == inst
                assert group["spec"]["parentCompositePodGroupName"] == prefill["metadata"]["name"]
        assert len(pgs) == 3
