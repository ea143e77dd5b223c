"""The simulated cluster: an API server, nodes, a scheduler and kubelets, on a clock of
whole seconds.

The API server holds every object as the JSON the real one would store and answers as it
would (errors are `cliques.kube.errors`, so the operator's executor handles them as in
production):

- create: 409 AlreadyExists if the name is taken, a terminating pod included; the server
  fills in uid, resourceVersion, generation 1, creationTimestamp; a pod starts Pending;
- delete: a UID precondition (409 on a successor); a bound, running pod terminates
  gracefully (deletionTimestamp, gone `grace` seconds later), an unbound or finished pod
  and every other object go at once; dependents are garbage-collected (background);
- patch: JSON merge patch (RFC 7386) or JSON patch (RFC 6902, `test` ops; a failing op is
  a 422); a resourceVersion in the patched object is a precondition (409); on the main
  resource the status is left as it was, on the `status` subresource only the status
  changes; `generation` moves with the spec; a patch that changes nothing writes nothing;
- every write gets a new resourceVersion and goes to a watch log the informers read.

The scheduling.k8s.io kinds (Workloads, PodGroups, CompositePodGroups) are validated as the
real API server validates them in the version the cluster serves (`groups`): a write it
refuses is a 422; a PodGroup a pod still names stays terminating when deleted
(podgroup-protection).

The world around it: nodes hold `capacity` pods (less what other workloads use); the
scheduler binds Pending pods in creation order where there is room (with gang scheduling,
a gang's pods all at once or none, once its group, the PodGroup or Workload replica its pods
name, has `minCount` pods) and marks the others Unschedulable; a bound pod runs at
once and turns Ready `latency()` seconds later (after its start gate opens, if it has
one). World events: a pod crashes (Failed), is evicted (deleted), stops being ready for a
while, a node goes away (its pods vanish), nodes are added, filled or freed, cordoned or
drained; a node is lost (its kubelet stops: tainted unreachable, its pods not Ready and
frozen, deleted pods terminating until it is back, tainted out-of-service or deleted).

Every write and world event is told to an `Observer` (the invariant checker) before it is
committed, and recorded in the `History`.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from cliques.api import labels
from cliques.api.meta import format_time
from cliques.controllers.features import start_gate
from cliques.kube import errors
from tests.sim import groups

#: Where the simulated clock starts (far from the wall clock, so that a planner handed the
#: wall clock instead of the simulated one is noticed).
EPOCH = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
NAMESPACE = "ns"
KINDS = (
    "CliqueSet",
    "Clique",
    "Pod",
    "Service",
    "Workload",
    "PodGroup",
    "CompositePodGroup",
    "ControllerRevision",
    "Node",
    "PodDisruptionBudget",
)
#: The node lifecycle controller's taint on a node whose kubelet stopped reporting.
UNREACHABLE = "node.kubernetes.io/unreachable"
#: The taint an administrator puts on a node known to be down (KEP-2268).
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
#: The `tolerationSeconds` of the unreachable toleration every pod gets from the
#: DefaultTolerationSeconds admission plugin: the taint manager deletes it that long after.
TOLERATION_SECONDS = 300
#: Kinds with a status subresource (their main resource never writes the status).
WITH_STATUS = frozenset({"CliqueSet", "Clique", "Pod", "PodGroup", "CompositePodGroup"})
#: The scheduling.k8s.io kinds, validated as the real API server does (`groups`).
SCHEDULING = frozenset({"Workload", "PodGroup", "CompositePodGroup"})

Obj = dict[str, Any]


def stamp(t: int) -> str:
    """The simulated time `t` (seconds since EPOCH) as Kubernetes writes a time."""
    return format_time(EPOCH + datetime.timedelta(seconds=t))


def seconds_of(value: str) -> int | None:
    """The simulated second of an RFC 3339 time written by `stamp`, None if unreadable."""
    try:
        when = datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    except ValueError:
        return None
    return int((when - EPOCH).total_seconds())


# ---- reading objects ------------------------------------------------------------------------


def meta(obj: Obj) -> dict[str, Any]:
    m: dict[str, Any] = obj["metadata"]
    return m


def annotations_of(obj: Obj) -> dict[str, str]:
    return meta(obj).get("annotations") or {}


def labels_of(obj: Obj) -> dict[str, str]:
    return meta(obj).get("labels") or {}


def controller_uid(obj: Obj) -> str | None:
    for ref in meta(obj).get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref["uid"])
    return None


def restarts(obj: Obj) -> int:
    """The gang restart count an object (Clique or pod) records, 0 when none."""
    try:
        return int(annotations_of(obj).get(labels.ANNOTATION_GANG_RESTARTS) or 0)
    except ValueError:
        return 0


def template_hash(obj: Obj) -> str:
    return labels_of(obj).get(labels.LABEL_TEMPLATE_HASH, "")


def pod_index(pod: Obj) -> int:
    raw = labels_of(pod).get(labels.LABEL_POD_INDEX)
    if raw is None:
        raw = meta(pod)["name"].rpartition("-")[2]
    return int(raw)


def terminating(obj: Obj) -> bool:
    return meta(obj).get("deletionTimestamp") is not None


def condition(obj: Obj, type_: str) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == type_:
            return dict(cond)
    return None


def pod_ready(pod: Obj) -> bool:
    """Ready as `Pod.is_ready` says: condition Ready=True and not being deleted."""
    cond = condition(pod, "Ready")
    return not terminating(pod) and cond is not None and cond.get("status") == "True"


def pod_phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase", ""))


def pod_terminal(pod: Obj) -> bool:
    return pod_phase(pod) in ("Succeeded", "Failed")


def gate_closed(pod: Obj) -> bool:
    return annotations_of(pod).get(labels.ANNOTATION_START_GATE) == start_gate.CLOSED


# ---- patches --------------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class PatchFailed(Exception):
    """A JSON patch operation that cannot be applied (the API server answers 422)."""


def _tokens(path: str) -> list[str]:
    if not path.startswith("/"):
        raise PatchFailed(f"bad path {path!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in path.split("/")[1:]]


def _parent(doc: Any, tokens: list[str]) -> tuple[Any, str]:
    node = doc
    for tok in tokens[:-1]:
        if isinstance(node, dict) and tok in node:
            node = node[tok]
        elif isinstance(node, list) and tok.isdigit() and int(tok) < len(node):
            node = node[int(tok)]
        else:
            raise PatchFailed(f"missing path element {tok!r}")
    return node, tokens[-1]


def json_patch(doc: Any, ops: list[dict[str, Any]]) -> Any:
    """RFC 6902 JSON patch (add, remove, replace, test) on a copy of `doc`."""
    doc = copy.deepcopy(doc)
    for op in ops:
        kind, tokens = op["op"], _tokens(op["path"])
        if not tokens:
            raise PatchFailed("whole-document operations are not supported")
        parent, last = _parent(doc, tokens)
        if kind == "test":
            if isinstance(parent, dict):
                here = parent.get(last, _MISSING)
            elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
                here = parent[int(last)]
            else:
                here = _MISSING
            if here != op["value"]:
                raise PatchFailed(f"test of {op['path']} failed")
        elif kind in ("add", "replace"):
            value = copy.deepcopy(op["value"])
            if isinstance(parent, dict):
                if kind == "replace" and last not in parent:
                    raise PatchFailed(f"replace of missing {op['path']}")
                parent[last] = value
            elif isinstance(parent, list):
                if last == "-" and kind == "add":
                    parent.append(value)
                elif last.isdigit() and int(last) <= len(parent):
                    if kind == "add":
                        parent.insert(int(last), value)
                    elif int(last) < len(parent):
                        parent[int(last)] = value
                    else:
                        raise PatchFailed(f"replace of missing {op['path']}")
                else:
                    raise PatchFailed(f"bad index in {op['path']}")
            else:
                raise PatchFailed(f"cannot {kind} under a scalar at {op['path']}")
        elif kind == "remove":
            if isinstance(parent, dict) and last in parent:
                del parent[last]
            elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
                del parent[int(last)]
            else:
                raise PatchFailed(f"remove of missing {op['path']}")
        else:
            raise PatchFailed(f"unsupported op {kind!r}")
    return doc


_MISSING = object()


# ---- history --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Entry:
    t: int
    actor: str
    text: str

    def __str__(self) -> str:
        return f"t={self.t:>6}s  {self.actor:<10} {self.text}"


@dataclass
class History:
    """Everything that happened, in order: world events, user edits, the operator's
    writes with their reasons, the checker's notes."""

    entries: list[Entry] = field(default_factory=list)

    def add(self, t: int, actor: str, text: str) -> None:
        self.entries.append(Entry(t, actor, text))

    def tail(self, n: int = 80) -> str:
        shown = self.entries[-n:]
        skipped = len(self.entries) - len(shown)
        head = [f"... {skipped} earlier entries" if skipped else ""]
        return "\n".join([h for h in head if h] + [str(e) for e in shown])

    def grep(self, *words: str) -> list[Entry]:
        return [e for e in self.entries if all(w in e.text for w in words)]


# ---- observer -------------------------------------------------------------------------------


class Observer(Protocol):
    """Told of every change before it is committed (the invariant checker)."""

    def before_create(self, actor: str, kind: str, obj: Obj) -> None: ...

    def before_update(self, actor: str, kind: str, old: Obj, new: Obj) -> None: ...

    def before_delete(self, actor: str, kind: str, obj: Obj) -> None: ...

    def pod_lost(self, cause: str, pod: Obj) -> None: ...

    def after_world(self) -> None: ...


class _NoObserver:
    def before_create(self, actor: str, kind: str, obj: Obj) -> None:
        pass

    def before_update(self, actor: str, kind: str, old: Obj, new: Obj) -> None:
        pass

    def before_delete(self, actor: str, kind: str, obj: Obj) -> None:
        pass

    def pod_lost(self, cause: str, pod: Obj) -> None:
        pass

    def after_world(self) -> None:
        pass


# ---- the cluster ----------------------------------------------------------------------------


@dataclass
class Node:
    name: str
    capacity: int
    #: pod slots other workloads use
    foreign: int = 0
    #: cordoned: the scheduler binds nothing more to it
    unschedulable: bool = False
    #: being drained: the drainer evicts its pods through the Eviction API's rules
    draining: bool = False
    #: lost: its kubelet stopped reporting at this second (tainted unreachable since then)
    lost_since: int | None = None
    #: tainted `node.kubernetes.io/out-of-service` by an administrator (KEP-2268)
    out_of_service: bool = False

    @property
    def tainted(self) -> bool:
        """Whether it carries a taint no pod of the sim tolerates (the scheduler avoids it)."""
        return self.lost_since is not None or self.out_of_service


@dataclass
class PodRuntime:
    """What the kubelet knows of one pod (by UID), beyond its API object."""

    #: when it turns Ready (None: not started yet, e.g. its start gate is closed)
    ready_at: int | None = None
    #: when a terminating pod is gone
    vanish_at: int | None = None
    #: a readiness failure lasts until then
    unready_until: int | None = None
    #: creation order (the scheduler's queue order)
    seq: int = 0


@dataclass(frozen=True, slots=True)
class WatchEvent:
    kind: str
    type: str  # ADDED, MODIFIED, DELETED
    raw: bytes


class Cluster:
    """The API server and the world around it."""

    def __init__(
        self,
        *,
        grace: int = 5,
        latency: Callable[[], int] = lambda: 10,
        history: History | None = None,
        observer: Observer | None = None,
        gang_api: str = "v1alpha1",
        gates: frozenset[str] = groups.DEFAULT_GATES,
    ) -> None:
        self.now = 0
        #: the scheduling.k8s.io version its Workloads and PodGroups are served in, and the
        #: feature gates it runs with (`groups`)
        self.gang_api = gang_api
        self.gates = gates
        self.grace = grace
        self.latency = latency
        self.history = history if history is not None else History()
        self.observer: Observer = observer if observer is not None else _NoObserver()
        self.objects: dict[str, dict[str, Obj]] = {k: {} for k in KINDS}
        self.nodes: dict[str, Node] = {}
        self.runtime: dict[str, PodRuntime] = {}
        self.watch_log: list[WatchEvent] = []
        self._rv = 100
        self._uid = 0
        self._node_seq = 0
        #: the reasons the operator gave for its next writes: (verb, kind, name) -> reason
        self.reasons: dict[tuple[str, str, str], str] = {}
        #: counts by kind of what happened (for summaries)
        self.counts: dict[str, int] = {}
        #: the operator's current round of reconciles (rounds count up over the run)
        self.round = 0

    # -- helpers ------------------------------------------------------------------------------

    def stamp(self) -> str:
        return stamp(self.now)

    def count(self, what: str, n: int = 1) -> None:
        self.counts[what] = self.counts.get(what, 0) + n

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def _emit(self, kind: str, type_: str, obj: Obj) -> None:
        self.watch_log.append(WatchEvent(kind, type_, msgspec.json.encode(obj)))

    def get(self, kind: str, name: str) -> Obj | None:
        return self.objects[kind].get(name)

    def objects_of(self, kind: str) -> list[Obj]:
        return list(self.objects[kind].values())

    def pods_of(self, owner_uid: str) -> list[Obj]:
        return [p for p in self.objects["Pod"].values() if controller_uid(p) == owner_uid]

    def _reason(self, verb: str, kind: str, name: str) -> str:
        why = self.reasons.pop((verb, kind, name), "")
        return f" ({why})" if why else ""

    # -- API verbs ----------------------------------------------------------------------------

    def create(self, actor: str, kind: str, body: Obj) -> Obj:
        obj = copy.deepcopy(body)
        m = obj.setdefault("metadata", {})
        name = m.get("name", "")
        m.setdefault("namespace", NAMESPACE)
        if not name:
            raise errors.Invalid(422, "Invalid", f"{kind}: metadata.name is required")
        if name in self.objects[kind]:
            raise errors.AlreadyExists(
                409, "AlreadyExists", f'{kind.lower()}s "{name}" already exists', verb="create"
            )
        if kind in SCHEDULING:
            obj = groups.validate_create(self.gang_api, self.gates, kind, obj)
            m = obj["metadata"]
        self._uid += 1
        m["uid"] = f"{kind.lower()}-{self._uid}"
        m["resourceVersion"] = self._next_rv()
        m["generation"] = 1
        m["creationTimestamp"] = self.stamp()
        m.pop("deletionTimestamp", None)
        if kind == "Pod":
            obj["status"] = {"phase": "Pending"}
            obj.setdefault("spec", {}).pop("nodeName", None)
        elif kind in WITH_STATUS:
            obj.pop("status", None)
        self.observer.before_create(actor, kind, obj)
        self.objects[kind][name] = obj
        if kind == "Pod":
            self.runtime[m["uid"]] = PodRuntime(seq=self._uid)
        self._emit(kind, "ADDED", obj)
        self.count(f"create {kind}")
        self.history.add(
            self.now, actor, f"create {kind} {name}{self._reason('create', kind, name)}"
        )
        return obj

    def delete(self, actor: str, kind: str, name: str, *, uid: str | None = None) -> None:
        obj = self.objects[kind].get(name)
        if obj is None:
            raise errors.NotFound(404, "NotFound", f'{kind.lower()}s "{name}" not found')
        if uid is not None and meta(obj)["uid"] != uid:
            raise errors.Conflict(
                409, "Conflict", f"precondition failed: UID in precondition: {uid}", verb="delete"
            )
        if terminating(obj):
            return  # already on its way out
        why = self._reason("delete", kind, name)
        if meta(obj).get("finalizers"):
            self.observer.before_delete(actor, kind, obj)
            self.history.add(self.now, actor, f"delete {kind} {name}{why} (finalizers wait)")
            self.count(f"delete {kind}")
            new = copy.deepcopy(obj)
            meta(new)["deletionTimestamp"] = self.stamp()
            meta(new)["resourceVersion"] = self._next_rv()
            self.objects[kind][name] = new
            self._emit(kind, "MODIFIED", new)
            self.podgroup_protection()
            return
        self.observer.before_delete(actor, kind, obj)
        ready = " Ready" if kind == "Pod" and pod_ready(obj) else ""
        self.history.add(self.now, actor, f"delete {kind} {name}{ready}{why}")
        self.count(f"delete {kind}")
        graceful = (
            kind == "Pod"
            and self.grace > 0
            and obj["spec"].get("nodeName")
            and not pod_terminal(obj)
        )
        if graceful:
            new = copy.deepcopy(obj)
            meta(new)["deletionTimestamp"] = self.stamp()
            meta(new)["resourceVersion"] = self._next_rv()
            self.objects[kind][name] = new
            self.runtime[meta(new)["uid"]].vanish_at = self.now + self.grace
            self._emit(kind, "MODIFIED", new)
        else:
            self._remove(kind, name)

    def _remove(self, kind: str, name: str) -> None:
        obj = self.objects[kind].pop(name)
        uid = meta(obj)["uid"]
        self.runtime.pop(uid, None)
        self._emit(kind, "DELETED", obj)
        # Background garbage collection of the dependents.
        for dep_kind in KINDS:
            for dep in list(self.objects[dep_kind].values()):
                refs = meta(dep).get("ownerReferences") or ()
                if any(r.get("uid") == uid for r in refs) and not terminating(dep):
                    self.delete("gc", dep_kind, meta(dep)["name"])

    def patch(
        self,
        actor: str,
        kind: str,
        name: str,
        patch: Any,
        *,
        patch_type: str = "merge",
        sub: str = "",
    ) -> Obj:
        old = self.objects[kind].get(name)
        if old is None:
            raise errors.NotFound(404, "NotFound", f'{kind.lower()}s "{name}" not found')
        if patch_type == "json":
            try:
                new = json_patch(old, patch)
            except PatchFailed as exc:
                raise errors.Invalid(422, "Invalid", f"the JSON patch failed: {exc}") from exc
        else:
            new = merge_patch(old, patch)
        rv = meta(old)["resourceVersion"]
        if meta(new).get("resourceVersion", rv) != rv:
            raise errors.Conflict(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {kind.lower()}s "{name}": the object has '
                "been modified; please apply your changes to the latest version and try again",
            )
        if sub == "status":
            updated = copy.deepcopy(old)
            if "status" in new:
                updated["status"] = new["status"]
            else:
                updated.pop("status", None)
            new = updated
        else:
            for key in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp"):
                if key in meta(old):
                    meta(new)[key] = meta(old)[key]
                else:
                    meta(new).pop(key, None)
            if kind in WITH_STATUS:
                if "status" in old:
                    new["status"] = copy.deepcopy(old["status"])
                else:
                    new.pop("status", None)
            if kind == "Pod" and new.get("spec") != old.get("spec"):
                raise errors.Invalid(422, "Invalid", "pod updates may not change the spec")
            if kind in SCHEDULING:
                groups.validate_update(self.gang_api, kind, old, new)
        meta(new)["resourceVersion"] = rv
        meta(new)["generation"] = meta(old).get("generation", 1)
        if new == old:
            return old  # a no-op patch writes nothing
        if {k: v for k, v in new.items() if k not in ("metadata", "status")} != {
            k: v for k, v in old.items() if k not in ("metadata", "status")
        }:
            meta(new)["generation"] = meta(old).get("generation", 1) + 1
        self.observer.before_update(actor, kind, old, new)
        meta(new)["resourceVersion"] = self._next_rv()
        self.objects[kind][name] = new
        self._emit(kind, "MODIFIED", new)
        what = "status" if sub == "status" else "patch"
        self.count(f"{what} {kind}")
        if actor not in {"kubelet", "scheduler"}:
            detail = self._reason(what, kind, name) + _describe(old, new, sub)
            self.history.add(self.now, actor, f"{what} {kind} {name}{detail}")
        result: Obj = new
        return result

    # -- the world ----------------------------------------------------------------------------

    def _kubelet_write(self, actor: str, pod: Obj, change: Callable[[Obj], None]) -> Obj:
        new = copy.deepcopy(pod)
        change(new)
        if new == pod:
            return pod
        self.observer.before_update(actor, "Pod", pod, new)
        meta(new)["resourceVersion"] = self._next_rv()
        self.objects["Pod"][meta(new)["name"]] = new
        self._emit("Pod", "MODIFIED", new)
        return new

    def add_node(self, capacity: int) -> str:
        name = f"node-{self._node_seq}"
        self._node_seq += 1
        self.nodes[name] = Node(name, capacity)
        self.create("world", "Node", {"metadata": {"name": name}, "spec": {}})
        return name

    def _node_write(self, name: str, change: Callable[[Obj], None]) -> None:
        """A change of the Node object's spec (by the world: kubectl, the node lifecycle)."""
        obj = self.objects["Node"].get(name)
        if obj is None:
            return
        new = copy.deepcopy(obj)
        change(new["spec"])
        if new == obj:
            return
        meta(new)["resourceVersion"] = self._next_rv()
        self.objects["Node"][name] = new
        self._emit("Node", "MODIFIED", new)

    def cordon(self, name: str, *, drain: bool = False) -> None:
        """`kubectl cordon` (and with `drain`, `kubectl drain`: then `drainer` evicts the
        node's pods as the Eviction API lets it, every second)."""
        node = self.nodes[name]
        node.unschedulable = True
        node.draining = node.draining or drain

        def cordoned(spec: Obj) -> None:
            spec["unschedulable"] = True

        self._node_write(name, cordoned)
        self.history.add(
            self.now, "world", f"node {name} cordoned{' and drained' if drain else ''}"
        )

    def node_down(self, name: str) -> None:
        """The node's kubelet stops reporting (a lost node): the node lifecycle controller
        taints it `unreachable` (NoExecute with `timeAdded` now, and NoSchedule) and marks
        its pods not Ready; from then on nothing changes on it (no pod turns Ready or
        finishes terminating) until it is back, tainted out-of-service or deleted."""
        node = self.nodes[name]
        if node.lost_since is not None:
            return
        node.lost_since = self.now
        added = self.stamp()

        def taint(spec: Obj) -> None:
            spec["taints"] = [
                *(t for t in spec.get("taints") or () if t.get("key") != UNREACHABLE),
                {"key": UNREACHABLE, "effect": "NoSchedule"},
                {"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": added},
            ]

        self._node_write(name, taint)
        self.history.add(self.now, "world", f"node {name} lost (tainted {UNREACHABLE})")
        for pod in self.pods_on(name):
            if terminating(pod) or pod_terminal(pod):
                continue
            if pod_ready(pod):
                self.observer.pod_lost("node-down", pod)
            self._kubelet_write("nodelifecycle", pod, lambda p: _set_cond(p, "Ready", "False"))

    def node_up(self, name: str) -> None:
        """The lost node's kubelet reports again: the lifecycle taints go; it finishes the
        deletions of its terminating pods and reports its pods' readiness again."""
        node = self.nodes[name]
        if node.lost_since is None:
            return
        node.lost_since = None

        def untaint(spec: Obj) -> None:
            taints = [t for t in spec.get("taints") or () if t.get("key") != UNREACHABLE]
            if taints:
                spec["taints"] = taints
            else:
                spec.pop("taints", None)

        self._node_write(name, untaint)
        self.history.add(self.now, "world", f"node {name} is back")

    def taint_out_of_service(self, name: str) -> None:
        """An administrator taints the node `node.kubernetes.io/out-of-service` (NoExecute):
        the taint manager deletes its pods (none tolerates it) and the pod garbage
        collector deletes its terminating pods at once (`pod_gc`)."""
        node = self.nodes[name]
        if node.out_of_service:
            return
        node.out_of_service = True
        added = self.stamp()

        def taint(spec: Obj) -> None:
            spec["taints"] = [
                *(spec.get("taints") or ()),
                {
                    "key": OUT_OF_SERVICE,
                    "value": "nodeshutdown",
                    "effect": "NoExecute",
                    "timeAdded": added,
                },
            ]

        self._node_write(name, taint)
        self.history.add(self.now, "world", f"node {name} tainted {OUT_OF_SERVICE}")
        for pod in self.pods_on(name):
            if not terminating(pod) and not pod_terminal(pod):
                self.observer.pod_lost("evict", pod)
                self.history.add(self.now, "taint", f"delete pod {meta(pod)['name']}")
                self.delete("taint-manager", "Pod", meta(pod)["name"], uid=meta(pod)["uid"])
        self.pod_gc()

    def pod_gc(self) -> None:
        """The pod garbage collector: the terminating pods of out-of-service nodes go."""
        for name, node in self.nodes.items():
            if not node.out_of_service:
                continue
            for pod in self.pods_on(name):
                if terminating(pod) or pod_terminal(pod):
                    self.history.add(self.now, "podgc", f"pod {meta(pod)['name']} deleted")
                    self._remove("Pod", meta(pod)["name"])

    def taint_manager(self) -> None:
        """Pods on a node tainted unreachable for `TOLERATION_SECONDS` (the toleration the
        DefaultTolerationSeconds admission plugin gives every pod) are deleted; on a lost
        node they then stay terminating."""
        for name, node in sorted(self.nodes.items()):
            if node.lost_since is None or self.now < node.lost_since + TOLERATION_SECONDS:
                continue
            for pod in self.pods_on(name):
                if terminating(pod) or pod_terminal(pod):
                    continue
                self.observer.pod_lost("evict", pod)
                self.history.add(self.now, "taint", f"delete pod {meta(pod)['name']}")
                self.delete("taint-manager", "Pod", meta(pod)["name"], uid=meta(pod)["uid"])
                self.observer.after_world()

    def podgroup_protection(self) -> None:
        """The podgroup-protection controller: a PodGroup being deleted goes once no pod
        names it (its finalizer removed)."""
        named = {groups.group_of(p) for p in self.objects["Pod"].values()}
        for group in list(self.objects["PodGroup"].values()):
            name = meta(group)["name"]
            if terminating(group) and ("PodGroup", name) not in named:
                self.history.add(self.now, "protect", f"PodGroup {name} released")
                self._remove("PodGroup", name)

    def pods_on(self, node: str) -> list[Obj]:
        return [p for p in self.objects["Pod"].values() if p["spec"].get("nodeName") == node]

    def kubelet_down(self, pod: Obj) -> bool:
        """Whether the pod's node is lost (its kubelet changes nothing)."""
        node = self.nodes.get(pod["spec"].get("nodeName") or "")
        return node is not None and node.lost_since is not None

    def drainer(self) -> None:
        """The evictions of `kubectl drain` on the draining nodes: a pod of a CliqueSet with
        a PodDisruptionBudget (maxUnavailable 0) is evicted only when it is not Ready
        (`unhealthyPodEvictionPolicy: AlwaysAllow`) or being deleted; any other pod at
        once."""
        budgets = {
            labels_of(b).get(labels.LABEL_CLIQUESET)
            for b in self.objects["PodDisruptionBudget"].values()
            if not terminating(b)
        }
        for name in sorted(n for n, node in self.nodes.items() if node.draining):
            for pod in list(self.objects["Pod"].values()):
                if pod["spec"].get("nodeName") != name or terminating(pod) or pod_terminal(pod):
                    continue
                held = labels_of(pod).get(labels.LABEL_CLIQUESET) in budgets
                if held and pod_ready(pod):
                    continue
                self.history.add(self.now, "drain", f"evict pod {meta(pod)['name']}")
                self.evict(pod)
                self.observer.after_world()

    def used(self, node: str) -> int:
        return sum(
            1
            for p in self.objects["Pod"].values()
            if p["spec"].get("nodeName") == node and not pod_terminal(p)
        )

    def free(self, node: str) -> int:
        n = self.nodes[node]
        if n.unschedulable or n.tainted:
            return 0
        return max(0, n.capacity - n.foreign - self.used(node))

    def tick(self) -> None:
        """What happens without anybody asking at `now`: terminated pods vanish, started
        pods turn Ready, readiness failures end, the scheduler binds what fits (and the
        pods it binds start)."""
        for pod in list(self.objects["Pod"].values()):
            rt = self.runtime[meta(pod)["uid"]]
            if rt.vanish_at is not None and rt.vanish_at <= self.now and not self.kubelet_down(pod):
                self.history.add(self.now, "kubelet", f"pod {meta(pod)['name']} is gone")
                self._remove("Pod", meta(pod)["name"])
        self.taint_manager()
        self.pod_gc()
        self.podgroup_protection()
        self.drainer()
        self.schedule()
        self.kubelet()

    def kubelet(self) -> None:
        for pod in list(self.objects["Pod"].values()):
            if not pod["spec"].get("nodeName") or terminating(pod) or pod_terminal(pod):
                continue
            if self.kubelet_down(pod):
                continue
            rt = self.runtime[meta(pod)["uid"]]
            if rt.ready_at is None and not gate_closed(pod):
                rt.ready_at = self.now + max(1, self.latency())
            if rt.unready_until is not None and rt.unready_until <= self.now:
                rt.unready_until = None
            ready = rt.ready_at is not None and rt.ready_at <= self.now and rt.unready_until is None
            if ready != pod_ready(pod):
                status = "True" if ready else "False"

                def flip(p: Obj, status: str = status) -> None:
                    _set_cond(p, "Ready", status)

                self._kubelet_write("kubelet", pod, flip)
                if ready:
                    self.history.add(self.now, "kubelet", f"pod {meta(pod)['name']} Ready")

    def _gang_key(self, pod: Obj) -> tuple[str, str] | None:
        return groups.group_of(pod)

    def min_count(self, key: tuple[str, str]) -> int:
        """The pods the group `key` (`groups.group_of`) needs bound at once (a missing
        group: more than any gang has, so its pods do not schedule)."""
        kind, name = key
        return groups.min_count(kind, self.objects[kind].get(name.partition("/")[0]))

    def schedule(self) -> None:
        """Bind Pending pods in creation order where there is room; with gang scheduling
        all the pending pods of a gang at once, once the gang has `minCount` pods."""
        pending = sorted(
            (
                p
                for p in self.objects["Pod"].values()
                if not p["spec"].get("nodeName") and not terminating(p) and not pod_terminal(p)
            ),
            key=lambda p: self.runtime[meta(p)["uid"]].seq,
        )
        if not pending:
            return
        gangs: dict[tuple[str, str], list[Obj]] = {}
        singles: list[Obj] = []
        for pod in pending:
            key = self._gang_key(pod)
            if key is None:
                singles.append(pod)
            else:
                gangs.setdefault(key, []).append(pod)
        for pod in singles:
            if not self._bind_all([pod]):
                self._unschedulable(pod)
        for key, pods in gangs.items():
            have = [
                p
                for p in self.objects["Pod"].values()
                if self._gang_key(p) == key
                and p["spec"].get("nodeName")
                and not pod_terminal(p)
                and not terminating(p)
            ]
            if len(have) + len(pods) < self.min_count(key) or not self._bind_all(pods):
                for pod in pods:
                    self._unschedulable(pod)

    def _bind_all(self, pods: list[Obj]) -> bool:
        """Bind every pod of `pods` (first fit, nodes by name) or none of them."""
        room = {n: self.free(n) for n in sorted(self.nodes)}
        if sum(room.values()) < len(pods):
            return False
        for pod in pods:
            node = next(n for n, free in room.items() if free > 0)
            room[node] -= 1

            def bind(p: Obj, node: str = node) -> None:
                p["spec"]["nodeName"] = node
                p["status"]["phase"] = "Running"
                _set_cond(p, "PodScheduled", "True")
                _set_cond(p, "Ready", "False")

            self._kubelet_write("scheduler", pod, bind)
            self.history.add(self.now, "scheduler", f"bind pod {meta(pod)['name']} to {node}")
        return True

    def _unschedulable(self, pod: Obj) -> None:
        cond = condition(pod, "PodScheduled")
        if cond is not None and cond.get("reason") == "Unschedulable":
            return
        self._kubelet_write(
            "scheduler", pod, lambda p: _set_cond(p, "PodScheduled", "False", "Unschedulable")
        )
        self.history.add(self.now, "scheduler", f"pod {meta(pod)['name']} Unschedulable")

    # -- world events -------------------------------------------------------------------------

    def running_pods(self) -> list[Obj]:
        """Bound pods that are neither finished nor being deleted, by name."""
        return sorted(
            (
                p
                for p in self.objects["Pod"].values()
                if p["spec"].get("nodeName")
                and not terminating(p)
                and not pod_terminal(p)
                and not self.kubelet_down(p)
            ),
            key=lambda p: meta(p)["name"],
        )

    def crash(self, pod: Obj) -> None:
        """The pod's containers exit for good: phase Failed."""
        self.observer.pod_lost("crash", pod)
        self.runtime[meta(pod)["uid"]].ready_at = None

        def fail(p: Obj) -> None:
            p["status"]["phase"] = "Failed"
            _set_cond(p, "Ready", "False")

        self._kubelet_write("world", pod, fail)

    def evict(self, pod: Obj) -> None:
        self.observer.pod_lost("evict", pod)
        self.delete("world", "Pod", meta(pod)["name"], uid=meta(pod)["uid"])

    def unready(self, pod: Obj, seconds: int) -> None:
        """The pod fails its readiness probe for `seconds`."""
        self.observer.pod_lost("unready", pod)
        self.runtime[meta(pod)["uid"]].unready_until = self.now + max(1, seconds)
        self._kubelet_write("world", pod, lambda p: _set_cond(p, "Ready", "False"))

    def lose_node(self, name: str) -> None:
        """The node is gone; the pod garbage collector deletes its pods at once."""
        self.nodes.pop(name)
        if name in self.objects["Node"]:
            self._remove("Node", name)
        for pod in list(self.objects["Pod"].values()):
            if pod["spec"].get("nodeName") == name:
                if not terminating(pod) and not pod_terminal(pod):
                    self.observer.pod_lost("node-loss", pod)
                self.history.add(self.now, "podgc", f"pod {meta(pod)['name']} gone with {name}")
                self._remove("Pod", meta(pod)["name"])

    # -- timers -------------------------------------------------------------------------------

    def next_timer(self) -> int | None:
        """The next second at which the kubelets have something to do."""
        times: list[int] = []
        for rt in self.runtime.values():
            for t in (rt.ready_at, rt.vanish_at, rt.unready_until):
                if t is not None and t > self.now:
                    times.append(t)
        for node in self.nodes.values():
            if node.lost_since is not None and node.lost_since + TOLERATION_SECONDS > self.now:
                times.append(node.lost_since + TOLERATION_SECONDS)
        return min(times) if times else None

    def events_since(self, pos: int) -> Iterator[tuple[int, WatchEvent]]:
        for i in range(pos, len(self.watch_log)):
            yield i + 1, self.watch_log[i]


def _set_cond(pod: Obj, type_: str, status: str, reason: str = "") -> None:
    conds = [c for c in pod["status"].get("conditions") or () if c.get("type") != type_]
    cond = {"type": type_, "status": status}
    if reason:
        cond["reason"] = reason
    pod["status"]["conditions"] = [*conds, cond]


def _describe(old: Obj, new: Obj, sub: str) -> str:
    """A short account of a change for the history."""
    if sub == "status":
        conds = {c["type"]: c for c in (new.get("status") or {}).get("conditions") or ()}
        said = [
            f"{t}={c['status']}" + (f"/{c['reason']}" if c.get("status") != "True" else "")
            for t, c in conds.items()
            if t in ("Ready", "Started", "Available", "GangFailed", "GangRestarting")
        ]
        return f" [{', '.join(said)}]" if said else ""
    parts: list[str] = []
    oa, na = annotations_of(old), annotations_of(new)
    for key in sorted(set(oa) | set(na)):
        if oa.get(key) != na.get(key) and key.startswith(labels.GROUP):
            parts.append(f"{key.removeprefix(labels.GROUP + '/')}={na.get(key)}")
    if template_hash(old) != template_hash(new):
        parts.append(f"template-hash={template_hash(new)}")
    if old.get("spec") != new.get("spec"):
        changed = sorted(
            k
            for k in set(old.get("spec", {})) | set(new.get("spec", {}))
            if old.get("spec", {}).get(k) != new.get("spec", {}).get(k)
        )
        parts.append("spec." + ",".join(changed))
    return f" [{'; '.join(parts)}]" if parts else ""
