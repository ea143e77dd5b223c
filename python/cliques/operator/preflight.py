"""What an operator process checks before it serves: the API server serves its CRDs, the
operator may read them (a LIST of one CliqueSet: a 403 means its RBAC is missing), and which
gang-scheduling API the cluster serves (`gangapi`).

Each call waits out a struggling API server (`kube.startup.patiently`); what waiting cannot
fix (the CRDs not installed, credentials refused, RBAC missing) raises `StartupError` with
one line that says what to do. A process asks once, whatever number of shards it runs.
"""

from __future__ import annotations

import asyncio

import msgspec

from cliques.api import labels
from cliques.kube import errors, gangapi
from cliques.kube.client import KubeClient
from cliques.kube.resources import CLIQUES, CLIQUESETS
from cliques.kube.startup import StartupError, patiently


class _Res(msgspec.Struct):
    name: str


class _ResourceList(msgspec.Struct):
    resources: list[_Res] = msgspec.field(default_factory=list)


#: The resources the operator cannot run without.
NEEDED = (CLIQUESETS.plural, CLIQUES.plural)


async def served(client: KubeClient) -> set[str]:
    """The resources the API server serves in `cliques.dev/v1alpha1` (none if the group
    is not served)."""
    try:
        raw = await client.get_path(f"/apis/{labels.API_VERSION}")
    except errors.NotFound:
        return set()
    return {r.name for r in msgspec.json.decode(raw, type=_ResourceList).resources}


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
    have = await patiently(f"discovery of {labels.API_VERSION}", lambda: served(client), stop=stop)
    problem = missing_crds(have)
    if problem:
        raise StartupError(problem)
    where = f"in {namespace}" if namespace else "in all namespaces"
    await patiently(
        f"list of cliquesets {where}",
        lambda: client.list_page(CLIQUESETS, namespace, limit=1),
        stop=stop,
    )
    return await patiently(
        f"discovery of {gangapi.GROUP}", lambda: gangapi.detect(client), stop=stop
    )
