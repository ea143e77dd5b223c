"""What the test cluster serves for gang scheduling, and how a test checks a gang's pods
against it: from Kubernetes 1.36 each gang is a PodGroup its pods name, on 1.35 a replica
of a Workload's pod group (`cliques.kube.gangapi`)."""

from __future__ import annotations

from typing import Any

from cliques.api.cliqueset import CliqueSet
from cliques.controllers.features import gang_apis, podgroups, workload
from cliques.kube import gangapi
from cliques.kube.client import KubeClient


async def detect(client: KubeClient, namespace: str = "default") -> gangapi.GangAPI:
    """What the operator finds (discovery, then the PodGroup dry-run probes)."""
    found = await gangapi.detect(client)
    assert found.served, f"the test cluster serves no gang API: {found.describe()}"
    return await gangapi.probe(client, found, namespace)


async def check_gang_refs(
    client: KubeClient,
    api: gangapi.GangAPI,
    cqs: CliqueSet,
    pods: list[dict[str, Any]],
    *,
    made_whole: bool = True,
) -> dict[int, dict[str, Any]]:
    """Assert the pods of each gang name one group, which exists with a gang policy whose
    `minCount` they reach; returns gang index -> the group (PodGroup, or the Workload on
    1.35). `made_whole`: every pod of the gangs was made since the set took its present
    shape, so their group is the one the set asks for now, with its `minCount`; else (a
    gang grown in place) the group may be an older one, whose `minCount` may only be
    lower, except on v1beta1, where the operator patches it."""
    ns = cqs.metadata.namespace
    needed = workload.min_count(cqs)
    exact = made_whole or gang_apis.pick(api).mutable_min_count
    found: dict[int, dict[str, Any]] = {}
    names: dict[int, str] = {}
    for pod in pods:
        gang = int(pod["metadata"]["labels"]["cliques.dev/gang-index"])
        if api.podgroups:
            group = pod["spec"].get("schedulingGroup", {}).get("podGroupName")
            assert "workloadRef" not in pod["spec"]
            if made_whole:
                wanted = podgroups.wanted_name(cqs, gang, gang_apis.pick(api))
                assert group == wanted, pod["spec"]
            resource = api.podgroup_resource
        else:
            ref = pod["spec"].get("workloadRef")
            assert ref is not None and ref["podGroupReplicaKey"] == str(gang), pod["spec"]
            group = ref["name"]
            resource = api.workload_resource
        assert names.setdefault(gang, group) == group, f"gang {gang}: {names[gang]} and {group}"
        if gang not in found:
            obj = await client.get(resource, ns, group, dict)
            if api.podgroups:
                policy = obj["spec"]["schedulingPolicy"]
            else:
                policy = obj["spec"]["podGroups"][0]["policy"]
            count = policy["gang"]["minCount"]
            assert count == needed if exact else count <= needed, policy
            found[gang] = obj
    return found
