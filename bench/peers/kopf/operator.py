"""CliqueSets with kopf: the benchmark's "how a kopf user would write it" peer.

Run it with kopf's own CLI, from the peer's virtualenv (see venv.py and README.md):

    python -m kopf run --standalone --all-namespaces bench/peers/kopf/operator.py

One CliqueSet (cliques.dev/v1alpha1) is `spec.replicas` gangs; gang g has one Clique object
`<cqs>-<g>-<clique>` per entry of `spec.template.cliques`, and each Clique has pods
`<clique object>-<i>`. The Clique objects are records (kopf runs no handler for them): the
CliqueSet handler creates them and their pods directly, with the official synchronous
`kubernetes` client, and `kopf.adopt()` sets the owner references (CliqueSet -> Clique and
headless Service, Clique -> Pod), so deletion is left to the garbage collector.

Handlers:
- `@kopf.on.create/update/resume` on CliqueSets -> `reconcile()`: list the CliqueSet's
  Cliques and pods, delete removed gangs, create missing Cliques, Services and pods,
  resize, and roll a changed template gang by gang within `maxUnavailable` (patch the
  gang's Cliques, delete their old pods). While a rollout is not finished the handler
  raises `kopf.TemporaryError(delay=...)`, so kopf calls it again (a safety net: the pod
  events below drive the rollout).
- `@kopf.index` on pods and on CliqueSets: kopf's in-memory indices, so that a pod event
  sees its CliqueSet and the other pods of that CliqueSet without an API call.
- `@kopf.on.event` on pods: recompute the CliqueSet's status from the pod index and patch
  it when it changed; a deleted pod that is still wanted (lost, or replaced by a rollout)
  is created again from its Clique; a gang that became ready during a rollout runs
  `reconcile()` again for the next gangs.

Handlers are synchronous (the official client blocks) and kopf runs them in its thread
pool, so reconciles of one CliqueSet are serialized, and status writes too.

The template hash is sha256 over `json.dumps(template, sort_keys=True)`.
"""

from __future__ import annotations

import copy
import datetime
import hashlib
import json
import logging
import os
import threading
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import kopf
import kubernetes
from kubernetes.client.exceptions import ApiException

GROUP = "cliques.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

LABEL_CLIQUESET = f"{GROUP}/cliqueset"
LABEL_GANG = f"{GROUP}/gang-index"
LABEL_CLIQUE = f"{GROUP}/clique"
LABEL_POD_INDEX = f"{GROUP}/pod-index"
LABEL_HASH = f"{GROUP}/template-hash"
HASH_LABEL_PATH = "/metadata/labels/cliques.dev~1template-hash"  # JSON patch path

ENV_NAMES = (
    "CLIQUES_SET",
    "CLIQUES_GANG_INDEX",
    "CLIQUES_CLIQUE",
    "CLIQUES_POD_INDEX",
    "CLIQUES_CLIQUE_SIZE",
    "CLIQUES_LEADER_ADDRESS",
)

#: How long kopf waits before calling the CliqueSet handler again while a rollout runs.
RETRY_DELAY = float(os.environ.get("KOPF_PEER_RETRY_DELAY", "10"))


class _Clients:
    """The synchronous API clients, made at startup once the configuration is loaded."""

    core: kubernetes.client.CoreV1Api
    custom: kubernetes.client.CustomObjectsApi


api = _Clients()

# One status computation at a time per CliqueSet, so that an older view of the pods never
# overwrites a newer status; the last status written, to skip writes that change nothing.
_status_locks: dict[tuple[str, str], threading.Lock] = {}
_last_status: dict[tuple[str, str], dict[str, Any]] = {}


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    try:
        kubernetes.config.load_incluster_config()
    except kubernetes.config.ConfigException:
        kubernetes.config.load_kube_config()
    client = kubernetes.client.ApiClient()
    api.core = kubernetes.client.CoreV1Api(client)
    api.custom = kubernetes.client.CustomObjectsApi(client)
    # The CRD's status has a schema: keep kopf's bookkeeping in annotations, not in status.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage()
    # Do not turn every info log line into a Kubernetes Event.
    settings.posting.level = logging.WARNING


class PodInfo(NamedTuple):
    """What the pod index keeps of one pod."""

    gang: int
    clique: str
    index: int
    hash: str
    ready: bool
    live: bool  # not being deleted


# --- helpers ---------------------------------------------------------------------------


def template_hash(template: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:16]


def min_available(role: Mapping[str, Any]) -> int:
    replicas = int(role.get("replicas", 1))
    value = role.get("minAvailable")
    return replicas if value is None else int(value)


def clique_name(cqs: str, gang: int, role: str) -> str:
    return f"{cqs}-{gang}-{role}"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _create(fn: Any, *args: Any) -> Any:
    """Create; an object that is already there (a stale list) is not an error."""
    try:
        return fn(*args)
    except ApiException as exc:
        if exc.status != 409:
            raise
        return None


def _delete(fn: Any, *args: Any) -> None:
    try:
        fn(*args, propagation_policy="Background")
    except ApiException as exc:
        if exc.status != 404:
            raise


def _pod_ready(pod: Any) -> bool:
    conditions = pod.status.conditions if pod.status else None
    return any(c.type == "Ready" and c.status == "True" for c in conditions or ())


def _lock(locks: dict[tuple[str, str], threading.Lock], key: tuple[str, str]) -> threading.Lock:
    return locks.setdefault(key, threading.Lock())


# --- building the children ---------------------------------------------------------------


def build_clique(cqs: Mapping[str, Any], gang: int, role: Mapping[str, Any]) -> dict[str, Any]:
    name = cqs["metadata"]["name"]
    body = {
        "apiVersion": API_VERSION,
        "kind": "Clique",
        "metadata": {
            "name": clique_name(name, gang, role["name"]),
            "labels": {
                LABEL_CLIQUESET: name,
                LABEL_GANG: str(gang),
                LABEL_CLIQUE: role["name"],
                LABEL_HASH: template_hash(role["template"]),
            },
        },
        "spec": {
            "cliqueName": role["name"],
            "gangIndex": gang,
            "replicas": int(role.get("replicas", 1)),
            "minAvailable": min_available(role),
            "startsAfter": [],
            "template": role["template"],
        },
    }
    kopf.adopt(body, owner=cqs)
    return body


def build_service(cqs: Mapping[str, Any], gang: int) -> dict[str, Any]:
    name = cqs["metadata"]["name"]
    selector = {LABEL_CLIQUESET: name, LABEL_GANG: str(gang)}
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{name}-{gang}", "labels": dict(selector)},
        "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": selector},
    }
    kopf.adopt(body, owner=cqs)
    return body


def build_pod(cqs: Mapping[str, Any], clique: Mapping[str, Any], index: int) -> dict[str, Any]:
    """Pod `index` of `clique`, from the template the Clique records."""
    cqs_name = cqs["metadata"]["name"]
    namespace = cqs["metadata"]["namespace"]
    headless = cqs["spec"].get("headlessService", True)
    spec = clique["spec"]
    gang, role = spec["gangIndex"], spec["cliqueName"]
    template = copy.deepcopy(spec["template"])
    tmeta = template.get("metadata") or {}

    env = [
        {"name": "CLIQUES_SET", "value": cqs_name},
        {"name": "CLIQUES_GANG_INDEX", "value": str(gang)},
        {"name": "CLIQUES_CLIQUE", "value": role},
        {"name": "CLIQUES_POD_INDEX", "value": str(index)},
        {"name": "CLIQUES_CLIQUE_SIZE", "value": str(spec.get("replicas", 1))},
    ]
    pod_spec = template["spec"]
    if headless:
        leader = cqs["spec"]["template"]["cliques"][0]["name"]
        env.append(
            {
                "name": "CLIQUES_LEADER_ADDRESS",
                "value": f"{leader}-0.{cqs_name}-{gang}.{namespace}.svc",
            }
        )
        pod_spec["subdomain"] = f"{cqs_name}-{gang}"
    for container in [*pod_spec["containers"], *pod_spec.get("initContainers", [])]:
        own = [e for e in container.get("env", []) if e.get("name") not in ENV_NAMES]
        container["env"] = own + env
    pod_spec["hostname"] = f"{role}-{index}"

    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{clique['metadata']['name']}-{index}",
            "labels": {
                **(tmeta.get("labels") or {}),
                LABEL_CLIQUESET: cqs_name,
                LABEL_GANG: str(gang),
                LABEL_CLIQUE: role,
                LABEL_POD_INDEX: str(index),
                LABEL_HASH: clique["metadata"]["labels"][LABEL_HASH],
            },
            "annotations": dict(tmeta.get("annotations") or {}),
        },
        "spec": pod_spec,
    }
    kopf.adopt(body, owner=clique)
    return body


# --- the CliqueSet handler ---------------------------------------------------------------


class _Turn:
    """Whose turn it is to reconcile one CliqueSet."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.busy = False
        self.again: Mapping[str, Any] | None = None


_turns: dict[tuple[str, str], _Turn] = {}


def reconcile(cqs: Mapping[str, Any], logger: Any, *, wait: bool = True) -> bool:
    """Make the children match the CliqueSet; True while a rollout is still to finish.

    One reconcile at a time per CliqueSet. A CliqueSet handler waits for its turn; a pod
    event that finds one running (`wait=False`) only asks it to run once more, so that a
    burst of pod events costs one more reconcile, not one each.
    """
    turn = _turns.setdefault((cqs["metadata"]["namespace"], cqs["metadata"]["name"]), _Turn())
    with turn.cond:
        if turn.busy and not wait:
            turn.again = cqs
            return True
        while turn.busy:
            turn.cond.wait()
        turn.busy = True
        turn.again = None
    try:
        while True:
            rolling = _reconcile(cqs, logger)
            with turn.cond:
                if turn.again is None:
                    return rolling
                cqs, turn.again = turn.again, None
    finally:
        with turn.cond:
            turn.busy = False
            turn.cond.notify_all()


def _reconcile(cqs: Mapping[str, Any], logger: Any) -> bool:
    name = cqs["metadata"]["name"]
    namespace = cqs["metadata"]["namespace"]
    spec = cqs["spec"]
    gangs = int(spec.get("replicas", 1))
    roles = {role["name"]: role for role in spec["template"]["cliques"]}
    hashes = {role: template_hash(r["template"]) for role, r in roles.items()}
    strategy = spec.get("updateStrategy") or {}
    max_unavailable = max(1, int(strategy.get("maxUnavailable", 1)))
    headless = spec.get("headlessService", True)
    selector = f"{LABEL_CLIQUESET}={name}"

    listed = api.custom.list_namespaced_custom_object(
        GROUP, VERSION, namespace, "cliques", label_selector=selector
    )
    cliques = {c["metadata"]["name"]: c for c in listed["items"]}
    pods: dict[str, dict[int, Any]] = {}
    for pod in api.core.list_namespaced_pod(namespace, label_selector=selector).items:
        labels = pod.metadata.labels or {}
        try:
            owner = clique_name(name, int(labels[LABEL_GANG]), labels[LABEL_CLIQUE])
            pods.setdefault(owner, {})[int(labels[LABEL_POD_INDEX])] = pod
        except (KeyError, ValueError):
            logger.warning(f"pod {pod.metadata.name} has no valid cliques.dev labels")

    # Scale down: remove the Cliques of removed gangs and cliques; GC removes their pods.
    removed_gangs = set()
    for cname, clique in cliques.items():
        gang, role = clique["spec"]["gangIndex"], clique["spec"]["cliqueName"]
        if gang >= gangs or role not in roles:
            if not clique["metadata"].get("deletionTimestamp"):
                logger.info(f"deleting Clique {cname}")
                _delete(
                    api.custom.delete_namespaced_custom_object,
                    GROUP,
                    VERSION,
                    namespace,
                    "cliques",
                    cname,
                )
            if gang >= gangs:
                removed_gangs.add(gang)
    if headless:
        for gang in sorted(removed_gangs):
            _delete(api.core.delete_namespaced_service, f"{name}-{gang}", namespace)

    # Every wanted Clique exists and has the wanted size; which gangs are outdated or down.
    outdated: set[int] = set()
    unavailable: set[int] = set()
    for gang in range(gangs):
        if headless and any(clique_name(name, gang, role) not in cliques for role in roles):
            _create(api.core.create_namespaced_service, namespace, build_service(cqs, gang))
        for role, tmpl in roles.items():
            cname = clique_name(name, gang, role)
            clique = cliques.get(cname)
            if clique is None:
                body = build_clique(cqs, gang, tmpl)
                created = _create(
                    api.custom.create_namespaced_custom_object,
                    GROUP,
                    VERSION,
                    namespace,
                    "cliques",
                    body,
                )
                clique = created or api.custom.get_namespaced_custom_object(
                    GROUP, VERSION, namespace, "cliques", cname
                )
                cliques[cname] = clique
            size = {"replicas": int(tmpl.get("replicas", 1)), "minAvailable": min_available(tmpl)}
            if any(clique["spec"].get(k) != v for k, v in size.items()):
                clique = api.custom.patch_namespaced_custom_object(
                    GROUP, VERSION, namespace, "cliques", cname, {"spec": size}
                )
                cliques[cname] = clique
            if clique["metadata"]["labels"].get(LABEL_HASH) != hashes[role]:
                outdated.add(gang)
            ready = sum(
                1
                for pod in pods.get(cname, {}).values()
                if not pod.metadata.deletion_timestamp and _pod_ready(pod)
            )
            if ready < size["minAvailable"]:
                unavailable.add(gang)

    # Rolling update: outdated gangs that are down anyway first, then as many of the others
    # as maxUnavailable allows (Recreate: all at once).
    if outdated:
        if strategy.get("type") == "Recreate":
            picked = sorted(outdated)
        else:
            picked = sorted(outdated & unavailable)
            budget = max_unavailable - len(unavailable)
            picked += sorted(outdated - unavailable)[: max(0, budget)]
        if picked:
            logger.info(f"rolling gang(s) {picked}; {len(outdated) - len(picked)} more to go")
        for gang in picked:
            for role, tmpl in roles.items():
                cname = clique_name(name, gang, role)
                if cliques[cname]["metadata"]["labels"].get(LABEL_HASH) == hashes[role]:
                    continue
                ops = [
                    {"op": "replace", "path": "/spec/template", "value": tmpl["template"]},
                    {"op": "replace", "path": HASH_LABEL_PATH, "value": hashes[role]},
                ]
                cliques[cname] = api.custom.patch_namespaced_custom_object(
                    GROUP,
                    VERSION,
                    namespace,
                    "cliques",
                    cname,
                    ops,
                    _content_type="application/json-patch+json",
                )

    # Pods: replace those of an older template, create the missing, delete the extra.
    for gang in range(gangs):
        for role in roles:
            sync_pods(cqs, cliques[clique_name(name, gang, role)], pods, namespace)
    return bool(outdated)


def sync_pods(
    cqs: Mapping[str, Any], clique: Mapping[str, Any], pods: dict[str, dict[int, Any]], ns: str
) -> None:
    want_hash = clique["metadata"]["labels"][LABEL_HASH]
    replicas = int(clique["spec"].get("replicas", 1))
    have = pods.get(clique["metadata"]["name"], {})
    for index, pod in sorted(have.items()):
        if pod.metadata.deletion_timestamp:
            continue
        if index >= replicas or pod.metadata.labels.get(LABEL_HASH) != want_hash:
            _delete(api.core.delete_namespaced_pod, pod.metadata.name, ns)
    for index in range(replicas):
        if index not in have:
            _create(api.core.create_namespaced_pod, ns, build_pod(cqs, clique, index))


@kopf.on.resume(GROUP, VERSION, "cliquesets", backoff=5)
@kopf.on.create(GROUP, VERSION, "cliquesets", backoff=5)
@kopf.on.update(GROUP, VERSION, "cliquesets", backoff=5)
def reconcile_cliqueset(
    body: kopf.Body,
    logger: Any,
    cliqueset_pods: kopf.Index[tuple[str, str], PodInfo],
    **_: Any,
) -> None:
    cqs = copy.deepcopy(dict(body))
    rolling = reconcile(cqs, logger)
    key = (cqs["metadata"]["namespace"], cqs["metadata"]["name"])
    update_status(key, cqs, cliqueset_pods.get(key, ()))
    if rolling:
        raise kopf.TemporaryError("rolling update in progress", delay=RETRY_DELAY)


# --- indices and pod events --------------------------------------------------------------


@kopf.index("pods", labels={LABEL_CLIQUESET: kopf.PRESENT})
async def cliqueset_pods(
    namespace: str, labels: Mapping[str, str], meta: kopf.Meta, status: kopf.Status, **_: Any
) -> dict[tuple[str, str], PodInfo]:
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )
    info = PodInfo(
        gang=int(labels.get(LABEL_GANG, "0")),
        clique=labels.get(LABEL_CLIQUE, ""),
        index=int(labels.get(LABEL_POD_INDEX, "0")),
        hash=labels.get(LABEL_HASH, ""),
        ready=ready,
        live=meta.get("deletionTimestamp") is None,
    )
    return {(namespace, labels[LABEL_CLIQUESET]): info}


@kopf.index(GROUP, VERSION, "cliquesets")
async def cliquesets(
    namespace: str, name: str, body: kopf.Body, **_: Any
) -> dict[tuple[str, str], dict[str, Any]]:
    return {(namespace, name): copy.deepcopy(dict(body))}


def compute_status(cqs: Mapping[str, Any], pods: Iterable[PodInfo]) -> dict[str, Any]:
    spec = cqs["spec"]
    gangs = int(spec.get("replicas", 1))
    roles = spec["template"]["cliques"]
    hashes = {r["name"]: template_hash(r["template"]) for r in roles}
    ready: dict[tuple[int, str], int] = {}
    updated: dict[tuple[int, str], int] = {}
    existing: set[int] = set()
    for pod in pods:
        if not pod.live:
            continue
        existing.add(pod.gang)
        key = (pod.gang, pod.clique)
        ready[key] = ready.get(key, 0) + pod.ready
        updated[key] = updated.get(key, 0) + (pod.hash == hashes.get(pod.clique))
    ready_gangs = sum(
        all(ready.get((g, r["name"]), 0) >= min_available(r) for r in roles) for g in range(gangs)
    )
    updated_gangs = sum(
        all(updated.get((g, r["name"]), 0) >= int(r.get("replicas", 1)) for r in roles)
        for g in range(gangs)
    )
    available = ready_gangs == gangs
    complete = available and updated_gangs == gangs and len(existing) == gangs
    return {
        "observedGeneration": cqs["metadata"].get("generation"),
        "replicas": len(existing),
        "readyReplicas": ready_gangs,
        "availableReplicas": ready_gangs,
        "updatedReplicas": updated_gangs,
        "templateHash": template_hash(spec["template"]),
        "selector": f"{LABEL_CLIQUESET}={cqs['metadata']['name']}",
        "conditions": [
            {
                "type": "Available",
                "status": "True" if available else "False",
                "reason": "AllGangsReady" if available else "GangsNotReady",
                "message": f"{ready_gangs}/{gangs} gangs ready",
            },
            {
                "type": "Progressing",
                "status": "False" if complete else "True",
                "reason": "Complete" if complete else "Progressing",
                "message": f"{updated_gangs}/{gangs} gangs updated",
            },
        ],
    }


def update_status(
    key: tuple[str, str], cqs: Mapping[str, Any], pods: Iterable[PodInfo]
) -> dict[str, Any]:
    """Patch the CliqueSet status from the pod index, unless it would not change."""
    with _lock(_status_locks, key):
        new = compute_status(cqs, list(pods))
        old = _last_status.get(key) or cqs.get("status") or {}
        old_conditions = {c.get("type"): c for c in old.get("conditions") or ()}
        for cond in new["conditions"]:
            prev = old_conditions.get(cond["type"])
            same = prev is not None and prev.get("status") == cond["status"]
            cond["lastTransitionTime"] = prev["lastTransitionTime"] if same else _now()
        if all(old.get(k) == v for k, v in new.items()):
            return old
        api.custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, key[0], "cliquesets", key[1], {"status": new}
        )
        _last_status[key] = new
        return new


@kopf.on.event("pods", labels={LABEL_CLIQUESET: kopf.PRESENT})
def pod_event(
    type: str | None,
    namespace: str,
    labels: Mapping[str, str],
    logger: Any,
    cliqueset_pods: kopf.Index[tuple[str, str], PodInfo],
    cliquesets: kopf.Index[tuple[str, str], dict[str, Any]],
    **_: Any,
) -> None:
    key = (namespace, labels[LABEL_CLIQUESET])
    found = cliquesets.get(key)
    if not found:
        return  # the CliqueSet is gone; the garbage collector takes the rest
    cqs = next(iter(found))
    before = (_last_status.get(key) or cqs.get("status") or {}).get("readyReplicas")
    pods = cliqueset_pods.get(key, ())
    status = update_status(key, cqs, pods)
    if type is None:
        return  # the initial listing: the resume handler reconciles

    spec = cqs["spec"]
    roles = {r["name"]: r for r in spec["template"]["cliques"]}
    gang = int(labels.get(LABEL_GANG, "0"))
    role = roles.get(labels.get(LABEL_CLIQUE, ""))
    wanted = (
        role is not None
        and gang < int(spec.get("replicas", 1))
        and int(labels.get(LABEL_POD_INDEX, "0")) < int(role.get("replicas", 1))
    )
    if type == "DELETED" and wanted:
        recreate_pod(cqs, labels)  # lost, or replaced by a rollout
    elif status.get("readyReplicas", 0) > (before or 0) and rolling(cqs, pods):
        reconcile(cqs, logger, wait=False)  # a gang came up during a rollout: next gangs


def recreate_pod(cqs: Mapping[str, Any], labels: Mapping[str, str]) -> None:
    """Create a deleted pod again, from the template its Clique records now."""
    namespace = cqs["metadata"]["namespace"]
    gang = int(labels[LABEL_GANG])
    cname = clique_name(cqs["metadata"]["name"], gang, labels[LABEL_CLIQUE])
    try:
        clique = api.custom.get_namespaced_custom_object(
            GROUP, VERSION, namespace, "cliques", cname
        )
    except ApiException as exc:
        if exc.status == 404:
            return
        raise
    index = int(labels[LABEL_POD_INDEX])
    if clique["metadata"].get("deletionTimestamp") or index >= clique["spec"].get("replicas", 1):
        return
    _create(api.core.create_namespaced_pod, namespace, build_pod(cqs, clique, index))


def rolling(cqs: Mapping[str, Any], pods: Iterable[PodInfo]) -> bool:
    """Some wanted pod still runs an older template."""
    gangs = int(cqs["spec"].get("replicas", 1))
    hashes = {r["name"]: template_hash(r["template"]) for r in cqs["spec"]["template"]["cliques"]}
    return any(
        p.live and p.gang < gangs and p.clique in hashes and p.hash != hashes[p.clique]
        for p in list(pods)
    )
