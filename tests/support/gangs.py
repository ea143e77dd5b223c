"""What the test cluster serves for gang scheduling, and how a test checks a gang's pods
against it: from Kubernetes 1.36 each gang is a PodGroup its pods name, on 1.35 a replica
of a Workload's pod group (`cliques.kube.gangapi`)."""

from __future__ import annotations

from typing import Any

from cliques.api.cliqueset import CliqueSet
from cliques.controllers import podgroups, workload
from cliques.kube import gangapi
from cliques.kube.client import KubeClient


async def detect(client: KubeClient, namespace: str = "default") -> gangapi.GangAPI:
    """What the operator finds (discovery, then the PodGroup dry-run probes)."""
    found = await gangapi.detect(client)
    assert found.served, f"the test cluster serves no gang API: {found.describe()}"
    return await gangapi.probe(client, found, namespace)


async def check_gang_refs(
    client: KubeClient, api: gangapi.GangAPI, cqs: CliqueSet, pods: list[dict[str, Any]]
) -> dict[int, dict[str, Any]]:
    """Assert each pod references its gang's group and that the group exists with the gang
    policy the set asks for; returns gang index -> the group (PodGroup, or the Workload on
    1.35)."""
    ns = cqs.metadata.namespace
    needed = workload.min_count(cqs)
    found: dict[int, dict[str, Any]] = {}
    for pod in pods:
        gang = int(pod["metadata"]["labels"]["cliques.dev/gang-index"])
        if api.podgroups:
            group = pod["spec"].get("schedulingGroup", {}).get("podGroupName")
            assert group == podgroups.wanted_name(cqs, gang, api.version, api.features), pod["spec"]
            assert "workloadRef" not in pod["spec"]
            if gang not in found:
                obj = await client.get(api.podgroup_resource, ns, group, dict)
                policy = obj["spec"]["schedulingPolicy"]
                assert policy == {"gang": {"minCount": needed}}, policy
                found[gang] = obj
        else:
            ref = pod["spec"].get("workloadRef")
            assert ref is not None and ref["podGroupReplicaKey"] == str(gang), pod["spec"]
            if gang not in found:
                obj = await client.get(api.workload_resource, ns, ref["name"], dict)
                policy = obj["spec"]["podGroups"][0]["policy"]
                assert policy == {"gang": {"minCount": needed}}, policy
                found[gang] = obj
    return found
