"""What `kubectl cliques` reads from the API server, through the operator's own client
(`cliques.kube.client`, `cliques.kube.kubeconfig`), and the namespace kubectl would use.

Every read is a GET or a LIST (paged). The set, its Cliques and its pods must be readable:
a failure there ends the command with one line and its exit code (`exits`). What only adds
detail (the ResourceClaims of the namespace, the ControllerRevisions) is left out where
the API server does not serve it or the user may not read it, and the output says so.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import msgspec
import yaml

from cliques.api import labels
from cliques.api.clique import Clique, CliqueList
from cliques.api.cliqueset import CliqueSet
from cliques.api.pod import Pod, PodList
from cliques.kube import errors
from cliques.kube import kubeconfig as kc
from cliques.kube.client import KubeClient
from cliques.kube.resources import (
    CLIQUES,
    CLIQUESETS,
    CONTROLLER_REVISIONS,
    PODS,
    RESOURCE_CLAIMS,
    Resource,
)
from cliques.kubectl import exits
from cliques.kubectl.objects import (
    ControllerRevision,
    ControllerRevisionList,
    ResourceClaim,
    ResourceClaimList,
)

T = TypeVar("T")
#: Seconds one request may take before the command gives up.
REQUEST_TIMEOUT = 30.0
#: Where a pod finds its own namespace.
POD_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
FIELD_MANAGER = "kubectl-cliques"


@dataclass
class Objects:
    """A CliqueSet and what belongs to it. `claims` and `revisions` are None when they
    could not be read (`unread` says why)."""

    cliqueset: CliqueSet
    cliques: list[Clique] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    claims: list[ResourceClaim] | None = None
    revisions: list[ControllerRevision] | None = None
    unread: dict[str, str] = field(default_factory=dict)


def namespace(given: str | None, kubeconfig: str | None, context: str | None) -> str:
    """The namespace kubectl would use: `-n`, else the context's, else the pod's own (in a
    pod), else `default`."""
    if given:
        return given
    paths = (
        [kubeconfig]
        if kubeconfig
        else [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
        or [str(Path.home() / ".kube" / "config")]
    )
    current = ""
    contexts: dict[str, dict[str, Any]] = {}
    for path in paths:
        try:
            doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError, UnicodeDecodeError):
            continue
        if not isinstance(doc, dict):
            continue
        current = current or str(doc.get("current-context") or "")
        for entry in doc.get("contexts") or []:
            if isinstance(entry, dict) and isinstance(entry.get("context"), dict):
                contexts.setdefault(str(entry.get("name")), entry["context"])
    found = contexts.get(context or current, {}).get("namespace")
    if isinstance(found, str) and found:
        return found
    if not kubeconfig and not contexts and POD_NAMESPACE.is_file():
        return POD_NAMESPACE.read_text(encoding="utf-8").strip() or "default"
    return "default"


async def connect(kubeconfig: str | None, context: str | None) -> KubeClient:
    """The operator's client for the cluster of `kubeconfig` and `context`."""
    try:
        return await KubeClient.connect(
            kubeconfig,
            context=context,
            qps=0,
            field_manager=FIELD_MANAGER,
            request_timeout=REQUEST_TIMEOUT,
            max_connections=8,
        )
    except kc.ConfigError as exc:
        raise exits.Failure(exits.CLUSTER, str(exc)) from None


async def read(
    client: KubeClient, ns: str, name: str, *, claims: bool = False, revisions: bool = False
) -> Objects:
    """The set `name` of `ns`, its Cliques and pods; with `claims`, the namespace's
    ResourceClaims; with `revisions`, its ControllerRevisions."""
    cqs = await guarded(client, lambda: client.get(CLIQUESETS, ns, name, CliqueSet), ns, name)
    selector = f"{labels.LABEL_CLIQUESET}={name}"
    out = Objects(cqs)
    out.cliques = await guarded(
        client, lambda: _list(client, CLIQUES, ns, selector, CliqueList), ns, name
    )
    out.pods = await guarded(client, lambda: _list(client, PODS, ns, selector, PodList), ns, name)
    if claims and (cqs.spec.resource_claims or any(_claims_of(c) for c in out.cliques)):
        out.claims = await _optional(
            out, "ResourceClaims", client, lambda: _list(client, RESOURCE_CLAIMS, ns, "", _Claims)
        )
    if revisions:
        out.revisions = await _optional(
            out,
            "ControllerRevisions",
            client,
            lambda: _list(client, CONTROLLER_REVISIONS, ns, "", _Revisions),
        )
    return out


def _claims_of(clique: Clique) -> bool:
    spec = clique.spec.template.get("spec")
    return isinstance(spec, dict) and bool(spec.get("resourceClaims"))


_Claims = ResourceClaimList
_Revisions = ControllerRevisionList


async def _list(
    client: KubeClient, resource: Resource, ns: str, selector: str, type_: type[Any]
) -> list[Any]:
    """Every item of a LIST, page by page."""
    items: list[Any] = []
    token = ""
    decoder = msgspec.json.Decoder(type_)
    while True:
        raw = await client.list_page(
            resource, ns, label_selector=selector, limit=500, continue_token=token
        )
        page = decoder.decode(raw)
        items.extend(page.items)
        token = page.metadata.continue_
        if not token:
            return items


async def _optional(
    out: Objects, what: str, client: KubeClient, call: Callable[[], Awaitable[list[T]]]
) -> list[T] | None:
    """`call`'s items, or None (with the reason in `out.unread`) where the API server does
    not serve them or refuses them."""
    try:
        return await call()
    except errors.NotFound:
        out.unread[what] = "not served by the API server"
    except errors.Unauthorized as exc:
        out.unread[what] = f"not readable ({exc.status} {exc.reason})"
    return None


async def guarded(client: KubeClient, call: Callable[[], Awaitable[T]], ns: str, name: str) -> T:
    """`call`'s answer; the failures that end the command as `exits.Failure`."""
    try:
        return await call()
    except errors.NotFound as exc:
        if f'"{name}" not found' in exc.message:
            raise exits.Failure(
                exits.NOT_FOUND, f'CliqueSet "{name}" not found in namespace "{ns}"'
            ) from None
        hint = " (are the cliques CRDs installed?)" if "/apis/cliques.dev/" in exc.path else ""
        raise exits.Failure(
            exits.NOT_FOUND, f"{exc.verb} {exc.path}: {exc.status} {exc.message}{hint}"
        ) from None
    except errors.Unauthorized as exc:
        if exc.status == 401:
            message = f"the API server at {client.host} refused the credentials (401 Unauthorized)"
        else:
            message = f"no permission: {exc.message or exc}"
        raise exits.Failure(exits.FORBIDDEN, message) from None
    except errors.ApiError as exc:
        raise exits.Failure(exits.CLUSTER, f"the API server at {client.host}: {exc}") from None
    except (aiohttp.ClientError, ssl.SSLError, OSError, TimeoutError) as exc:
        detail = str(exc) or type(exc).__name__
        raise exits.Failure(
            exits.CLUSTER, f"cannot reach the API server at {client.host}: {detail}"
        ) from None
