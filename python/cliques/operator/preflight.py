"""What an operator process checks before it serves: the API server serves its CRDs, the
operator may read them (a LIST of one CliqueSet: a 403 means its RBAC is missing), which
gang-scheduling API the cluster serves and which of its gated PodGroup fields it keeps
(`gangapi.detect`, `gangapi.probe`: dry-run creates, in the watched namespace or
`default`), whether it may list the CompositePodGroups the server serves (without: gangs
with scaling groups are one PodGroup each, and a warning says so), whether it may manage DRA
claims (resource.k8s.io/v1 served, and a LIST of
resourceclaims allowed: without them the operator runs, and says so), whether it
resizes pods in place (`pods/resize` served), whether Kueue is installed (its Workloads
and LocalQueues served and listable), and whether it answers EvictionRequests
(lifecycle.k8s.io/v1alpha1 Evictions served and listable).

Each call waits out a struggling API server (`kube.startup.patiently`); what waiting cannot
fix (the CRDs not installed, credentials refused, RBAC missing) raises `StartupError` with
one line that says what to do. A process asks once, whatever number of shards it runs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time

from cliques.api import labels
from cliques.kube import errors, gangapi
from cliques.kube.client import KubeClient
from cliques.kube.resources import (
    CLIQUES,
    CLIQUESETS,
    EVICTIONS,
    KUEUE_WORKLOADS,
    NODES,
    PDBS,
    RESOURCE_CLAIMS,
    SCALING_GROUPS,
    Resource,
)
from cliques.kube.startup import StartupError, patiently

log = logging.getLogger(__name__)

#: The resources the operator cannot run without.
NEEDED = (CLIQUESETS.plural, CLIQUES.plural, SCALING_GROUPS.plural)
#: Seconds the CRDs may be missing from discovery before the operator says they are not
#: installed (an API server that restarts lists them a moment after it answers).
CRD_GRACE = 60.0
#: Where the PodGroup dry runs go when the operator watches every namespace.
PROBE_NAMESPACE = "default"


class NotYetServed(errors.ServerError):
    """The CRDs are not in discovery yet: retried as a server that is still starting."""

    def __init__(self, message: str) -> None:
        super().__init__(
            503, "NotYetServed", message, verb="get", path=f"/apis/{labels.API_VERSION}"
        )


async def served(client: KubeClient) -> set[str]:
    """The resources the API server serves in `cliques.dev/v1alpha1` (none if the group
    is not served)."""
    return await gangapi.served_resources(client, labels.API_VERSION)


def missing_crds(have: set[str]) -> str:
    """The `StartupError` message for CRDs not served, "" if all are."""
    missing = [r for r in NEEDED if r not in have]
    if not missing:
        return ""
    names = ", ".join(f"{r}.{labels.GROUP}" for r in missing)
    return (
        f"the API server does not serve {names} ({labels.API_VERSION}): install the "
        "CustomResourceDefinitions first (kubectl apply -f deploy/crds/, or the Helm chart, "
        "which installs them)"
    )


async def check(
    client: KubeClient, stop: asyncio.Event | None = None, *, namespace: str | None = None
) -> gangapi.GangAPI:
    """The checks, in order; returns what the cluster serves for gang scheduling.
    `namespace`: the one the operator watches (None: all)."""

    async def crds_served() -> set[str]:
        # An API server that has just started serves custom resources a moment after
        # the rest (its discovery lists them once their CRDs are loaded): a group missing
        # is retried for `CRD_GRACE` seconds before it counts as not installed.
        have = await served(client)
        if missing_crds(have) and time.monotonic() < deadline:
            raise NotYetServed(missing_crds(have))
        return have

    deadline = time.monotonic() + CRD_GRACE
    have = await patiently(f"discovery of {labels.API_VERSION}", crds_served, stop=stop)
    problem = missing_crds(have)
    if problem:
        raise StartupError(problem)
    where = f"in {namespace}" if namespace else "in all namespaces"
    await patiently(
        f"list of cliquesets {where}",
        lambda: client.list_page(CLIQUESETS, namespace, limit=1),
        stop=stop,
    )
    found = await patiently(
        f"discovery of {gangapi.GROUP}", lambda: gangapi.detect(client), stop=stop
    )
    found = await patiently(
        f"dry-run probes of {found.api_version} podgroups",
        lambda: gangapi.probe(client, found, namespace or PROBE_NAMESPACE),
        stop=stop,
    )
    found = await _composite(client, found, namespace, where, stop)
    dra = await patiently(
        f"discovery of {gangapi.DRA_VERSION}", lambda: gangapi.dra_served(client), stop=stop
    )
    allowed = dra and await patiently(
        f"list of resourceclaims {where}",
        lambda: _may_list(client, RESOURCE_CLAIMS, namespace),
        stop=stop,
    )
    if not allowed:
        log.warning(
            "DRA claims off: %s; CliqueSets with spec.resourceClaims are reported invalid",
            "the operator may not list resourceclaims (its RBAC predates them)"
            if dra
            else f"the API server does not serve {gangapi.DRA_VERSION}",
        )
    resize = await patiently(
        f"discovery of {gangapi.POD_RESIZE}", lambda: gangapi.resize_served(client), stop=stop
    )
    if not resize:
        log.info("in-place updates change images only: the API server does not serve pods/resize")
    kueue = await _kueue(client, namespace, where, stop)
    drain = await _drain(client, namespace, where, stop)
    evictions = await _evictions(client, namespace, where, stop)
    return dataclasses.replace(
        found, claims=allowed, resize=resize, kueue=kueue, drain=drain, evictions=evictions
    )


async def _composite(
    client: KubeClient,
    found: gangapi.GangAPI,
    namespace: str | None,
    where: str,
    stop: asyncio.Event | None,
) -> gangapi.GangAPI:
    """`found`, without `gangapi.COMPOSITE` where the operator may not list the
    CompositePodGroups it serves: gangs are then one PodGroup each, as elsewhere."""
    if not found.composite:
        return found
    resource = found.composite_resource
    allowed = await patiently(
        f"list of {resource.plural} {where}",
        lambda: _may_list(client, resource, namespace),
        stop=stop,
    )
    if allowed:
        return found
    log.warning(
        "composite pod groups off: the operator may not list %s %s (its RBAC predates "
        "them); a gang with scaling groups gets one PodGroup",
        resource.api_version,
        resource.plural,
    )
    return dataclasses.replace(
        found, features=found.features - {gangapi.COMPOSITE}, composite_version=""
    )


async def _kueue(
    client: KubeClient, namespace: str | None, where: str, stop: asyncio.Event | None
) -> bool:
    """Whether CliqueSets may be queued by Kueue: its API served and listable."""
    served = await patiently(
        f"discovery of {gangapi.KUEUE_VERSION}", lambda: gangapi.kueue_served(client), stop=stop
    )
    allowed = served and await patiently(
        f"list of Kueue workloads {where}",
        lambda: _may_list(client, KUEUE_WORKLOADS, namespace),
        stop=stop,
    )
    if served and not allowed:
        log.warning(
            "Kueue off: the operator may not list %s workloads (its RBAC predates them); "
            "CliqueSets labelled %s are reported not admitted",
            gangapi.KUEUE_VERSION,
            "kueue.x-k8s.io/queue-name",
        )
    elif allowed:
        log.info(
            "Kueue: %s served; queued CliqueSets are admitted gang by gang", gangapi.KUEUE_VERSION
        )
    return allowed


async def _drain(
    client: KubeClient, namespace: str | None, where: str, stop: asyncio.Event | None
) -> bool:
    """Whether gangs move off drained nodes (`controllers.features.drain`): the operator may
    list Nodes (cluster-wide: not with the namespaced install's Role) and
    PodDisruptionBudgets."""
    nodes = await patiently("list of nodes", lambda: _may_list(client, NODES, None), stop=stop)
    budgets = await patiently(
        f"list of poddisruptionbudgets {where}",
        lambda: _may_list(client, PDBS, namespace),
        stop=stop,
    )
    if not (nodes and budgets):
        log.warning(
            "gang-aware drain off: the operator may not list %s (its RBAC predates them, or "
            "it is confined to a namespace); drained nodes evict gang pods one by one",
            "nodes" if not nodes else "poddisruptionbudgets",
        )
    return nodes and budgets


async def _evictions(
    client: KubeClient, namespace: str | None, where: str, stop: asyncio.Event | None
) -> bool:
    """Whether the operator answers EvictionRequests (`controllers.features.eviction_requests`):
    the API server serves lifecycle.k8s.io/v1alpha1 Evictions (Kubernetes 1.37+ with the
    alpha gate `EvictionRequestAPI`) and the operator may list them. Said either way: what
    it falls back to otherwise is the drain of cordoned and tainted nodes alone."""
    served = await patiently(
        f"discovery of {gangapi.EVICTION_VERSION}",
        lambda: gangapi.evictions_served(client),
        stop=stop,
    )
    allowed = served and await patiently(
        f"list of evictions {where}", lambda: _may_list(client, EVICTIONS, namespace), stop=stop
    )
    if served and not allowed:
        log.warning(
            "EvictionRequests unanswered: the operator may not list %s evictions (its RBAC "
            "predates them); gang pods are evicted one by one by the default responder",
            gangapi.EVICTION_VERSION,
        )
    elif allowed:
        log.info(
            "EvictionRequests: %s served; pods outside PodGroups name responder %s, which "
            "moves their gangs whole",
            gangapi.EVICTION_VERSION,
            labels.LABEL_RESPONDER,
        )
    else:
        log.info(
            "EvictionRequests: %s not served; gangs move whole only off cordoned or tainted nodes",
            gangapi.EVICTION_VERSION,
        )
    return allowed


async def _may_list(client: KubeClient, resource: Resource, namespace: str | None) -> bool:
    """Whether the operator may list `resource` (False on a 403)."""
    try:
        await client.list_page(resource, namespace, limit=1)
    except errors.Unauthorized as exc:
        if exc.status != 403:
            raise
        return False
    return True
