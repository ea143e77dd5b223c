"""Gang-aware drain (pure): gangs with a pod on a drained node move whole, and piecemeal
evictions wait for them (docs/gangs.md#nodedrain-gangs-move-whole-off-drained-nodes).

- **A drained node** is one cordoned (`spec.unschedulable`) or tainted `NoExecute`. A pod
  on a cordoned node is drained; on a node tainted `NoExecute`, a pod is drained by a taint
  it does not tolerate (a toleration with `tolerationSeconds` only delays the taint
  manager's eviction: it counts as not tolerating). The node lifecycle's own taints
  (`node.kubernetes.io/not-ready`, `unreachable`) are a lost node, not a drain.
- **A lost node** carries one of those `NoExecute` taints: its kubelet stopped reporting.
  Once the taint is older than `nodeDrain.lostNodeSeconds` (its `timeAdded`; default 60 s,
  against the 300 s after which the taint manager evicts pods one by one), a pod there
  that does not tolerate it for good counts as drained (`lost`), and the plan looks again
  when the first such taint comes due (`Stuck.next_due`). The pod there cannot be
  confirmed gone: deleted, it stays terminating, holding its name, until the node comes
  back, an administrator taints it `node.kubernetes.io/out-of-service` (the pod garbage
  collector then deletes such pods at once, KEP-2268) or deletes the Node; the gang's
  other Cliques make their pods again meanwhile (that pod's Clique waits for the delete to
  show, at most its expectations' limit), and the condition says what to do.
  The controller keeps the nodes that are cordoned or carry a `NoExecute`
  taint (`Informers.marked`, from the Node informer, which decodes only names, cordons
  and taints, `api.node`), and looks up the pods on them by the pod informer's `node`
  index, so a plan costs nothing while no node is drained.
- **A stuck gang** (`stuck`) has a live pod on a drained node that belongs to its Clique's
  current gang restart (a pod of another restart count is already being replaced by its
  Clique). The gang moves by being made again whole: its Cliques' `cliques.dev/gang-restarts`
  goes up by one, as in a gang restart (`gang_failures`), so every pod of the gang is
  deleted and made again at the same index, and the scheduler places the new pods off the
  cordoned or tainted node, no sooner than `MOVE_HOLD` seconds after the move (`hold`: a
  drain that evicts by name finds the name free meanwhile). The move also raises
  `cliques.dev/forgiven-restarts` by one: a move is no failure, and counts neither
  towards `maxGangRestarts` nor the backoff (`status.gangRestarts` counts it, as a pod's
  restartCount counts every restart).
- **Paced** (`pick`): a move makes the gang the operator's, so the gangs it has down (starting:
  made, rolled, restarted or moved, not available since), the restarts of the same plan
  and this one may not exceed the budget, as for a restart; a gang that is available may
  move only if, besides, every gang down, whoever took it down (`rollout.down`), and this
  one do not exceed it either. The surge gangs
  `maxSurge` allows are made first (the planner keeps them while gangs are stuck,
  `surge.kept`), and add to the budget once available. A gang that is also outdated
  moves first and rolls later.
- **Evictions held** (`budget_plan`): with `nodeDrain.holdEvictions: PodDisruptionBudget`
  the set owns one policy/v1 PodDisruptionBudget, `<set>-gangs`, selecting its pods with
  `maxUnavailable: 0` and `unhealthyPodEvictionPolicy: AlwaysAllow`: the Eviction API
  answers 429 for every ready pod of the set, so `kubectl drain` keeps retrying until the
  operator has deleted the gang's pods (plain deletes are not subject to budgets), and
  a pod that is not ready may still be evicted.
- **Said** (`condition`, `events`): the condition `Moving` names the drained nodes and the
  gangs stuck on them (True while any is), and each move is a Normal Event `MovingGang`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.meta import Condition, ConditionStatus, find_condition, parse_time
from cliques.api.node import NO_EXECUTE, Node, Taint
from cliques.api.pdb import API_VERSION, KIND, PodDisruptionBudget
from cliques.api.pod import Pod, Toleration
from cliques.api.policies import DrainPolicy, EvictionHold
from cliques.controllers.base import builders, conditions
from cliques.controllers.base.actions import Create, Delete, Event, Patch
from cliques.controllers.features import same_nodes
from cliques.kube import store
from cliques.kube.gangapi import GangAPI
from cliques.kube.informer import EventKind, Informer
from cliques.kube.resources import NODES, PDBS, PODS, Resource
from cliques.kube.watches import Watch

CONDITION_MOVING: Final = "Moving"
REASON_NODE_DRAIN: Final = "NodeDrain"
#: Gangs move because EvictionRequests ask (`eviction_requests`), none is on a drained node.
REASON_EVICTION_REQUEST: Final = "EvictionRequest"
REASON_MOVED: Final = "NoGangOnDrainedNode"
REASON_OFF: Final = "DrainPolicyNone"
EVENT_MOVING: Final = "MovingGang"
#: Taints of the node lifecycle controller: a node lost, not drained (left to that rule).
LIFECYCLE_TAINTS: Final = frozenset(
    {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
)
#: How `lost` begins its reason, and what the condition then tells an administrator.
LOST_STATES: Final = ("not-ready since", "unreachable since")
LOST_HINT: Final = (
    "pods on a lost node stay terminating until it is back, tainted "
    "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute, or its Node is deleted"
)
#: The suffix of the set's PodDisruptionBudget's name.
BUDGET_SUFFIX: Final = "-gangs"
#: Seconds before a plan looks again while stuck gangs wait for the budget (the gangs they
#: wait for also wake the set when they turn available).
WAIT_REQUEUE: Final = 5.0
#: Seconds a moved gang's new pods are held back after the move (`hold`): more than the
#: longest `kubectl drain` waits between two evictions of a pod (5 s after a plain 429, 10 s
#: where the API server's 429 says Retry-After: 10, which client-go waits out itself).
MOVE_HOLD: Final = 15.0
#: At most this many nodes and gangs are named in the condition's message.
MAX_NAMED: Final = 20


def _nodes(api: GangAPI) -> Resource | None:
    return NODES if api.drain else None


def _budgets(api: GangAPI) -> Resource | None:
    return PDBS if api.drain else None


def by_node(pod: Pod) -> Iterable[str]:
    """Index function: the node a pod is bound to."""
    return (pod.spec.node_name,) if pod.spec.node_name else ()


#: What the drain watches: every Node (cluster-wide, slim), the pods of the process's
#: buckets by node (the Clique controller's pod informer, shared), and the sets'
#: PodDisruptionBudgets; the Nodes and budgets only where the operator may list them.
WATCHES: Final[tuple[Watch, ...]] = (
    Watch("nodes", Node, _nodes, owned=False),
    Watch("pods", Pod, PODS, indexers={"node": by_node}),
    Watch("pod_disruption_budgets", PodDisruptionBudget, _budgets, indexers=store.BY_CONTROLLER),
)


def marked(node: Node) -> bool:
    """Whether `node` may drain some pod: cordoned, or with a NoExecute taint (a drain's,
    or the node lifecycle's: a node that may be lost)."""
    return node.spec.unschedulable or any(t.effect == NO_EXECUTE for t in node.spec.taints)


def _drains(taint: Taint) -> bool:
    return taint.effect == NO_EXECUTE and taint.key not in LIFECYCLE_TAINTS


def _tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Whether `toleration` tolerates `taint` for good (as the scheduler matches them; one
    with `tolerationSeconds` tolerates it only for a while)."""
    if toleration.toleration_seconds is not None:
        return False
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.operator == "Exists":
        return not toleration.key or toleration.key == taint.key
    return toleration.key == taint.key and toleration.value == taint.value


def why_drained(node: Node, tolerations: Sequence[Toleration]) -> str:
    """Why a pod with `tolerations` is drained off `node` ("" if it is not)."""
    if node.spec.unschedulable:
        return "cordoned"
    for taint in node.spec.taints:
        if _drains(taint) and not any(_tolerates(t, taint) for t in tolerations):
            value = f"={taint.value}" if taint.value else ""
            return f"tainted {taint.key}{value}:{NO_EXECUTE}"
    return ""


def lost(node: Node, tolerations: Sequence[Toleration]) -> tuple[str, str]:
    """(why, since) for a pod with `tolerations` on `node` when the node lifecycle's
    NoExecute taint is on it and the pod does not tolerate it for good; ("", "") if not."""
    for taint in node.spec.taints:
        if (
            taint.effect == NO_EXECUTE
            and taint.key in LIFECYCLE_TAINTS
            and not any(_tolerates(t, taint) for t in tolerations)
        ):
            state = taint.key.rsplit("/", 1)[-1]
            return f"{state} since {taint.time_added or '?'}", taint.time_added
    return "", ""


@dataclass(frozen=True)
class Drained:
    """A live pod of the set on a drained node, or on a node that may be lost."""

    pod: str
    node: str
    why: str
    #: the UID of its Clique (its controller), "" if it has none
    clique_uid: str
    #: the gang restart count it was made in
    restarts: str
    #: on a node that may be lost: since when (the lifecycle taint's `timeAdded`; it counts
    #: as drained once that is `lostNodeSeconds` old, `stuck`), else ""
    lost_since: str = ""


@dataclass(frozen=True)
class View:
    """What the CliqueSet planner reads for drains: whether they are handled here (the
    operator may list Nodes and budgets), the set's pods on drained nodes, and the
    PodDisruptionBudgets the set owns."""

    served: bool = False
    pods: tuple[Drained, ...] = ()
    budgets: list[PodDisruptionBudget] = field(default_factory=list)


class Informers:
    """The informers of `WATCHES`, and the nodes that may drain a pod (`marked`), kept
    from the Node informer's events."""

    def __init__(
        self,
        nodes: Informer[Node] | None = None,
        pods: Informer[Pod] | None = None,
        budgets: Informer[PodDisruptionBudget] | None = None,
    ) -> None:
        self.nodes = nodes
        self.pods = pods
        self.budgets = budgets
        #: node name -> the node, for the nodes `marked` drains some pod
        self.marked: dict[str, Node] = {}
        if nodes is not None:
            nodes.add_handler(self._on_node)

    @classmethod
    def of(cls, informers: Mapping[str, Any]) -> Informers:
        """From the informers by watch name."""
        return cls(*(informers.get(w.name) for w in WATCHES))

    @property
    def served(self) -> bool:
        return self.nodes is not None and self.pods is not None and self.budgets is not None

    def owned(self) -> tuple[Informer[Any], ...]:
        """The informers of objects a CliqueSet owns (a change wakes it)."""
        return (self.budgets,) if self.budgets is not None else ()

    def _on_node(self, kind: EventKind, old: Any, new: Node) -> None:
        name = new.metadata.name
        if kind != "DELETED" and marked(new):
            self.marked[name] = new
        else:
            self.marked.pop(name, None)

    def pods_on(self, node: str) -> list[Pod]:
        """The pods of the process's buckets bound to `node`."""
        return self.pods.store.by_index("node", node) if self.pods is not None else []

    def view(self, cqs: CliqueSet, owner: str) -> View:
        """What the planner reads of drains for `cqs` (controller index key `owner`)."""
        if not self.served:
            return View()
        assert self.budgets is not None
        meta = cqs.metadata
        out: list[Drained] = []
        for node_name, node in sorted(self.marked.items()):
            for pod in self.pods_on(node_name):
                pm = pod.metadata
                if (
                    pm.namespace != meta.namespace
                    or pm.labels.get(labels.LABEL_CLIQUESET) != meta.name
                    or pm.deletion_timestamp is not None
                ):
                    continue
                why = why_drained(node, pod.spec.tolerations)
                since = ""
                if not why:
                    why, since = lost(node, pod.spec.tolerations)
                if why:
                    restarts = pm.annotations.get(labels.ANNOTATION_GANG_RESTARTS) or "0"
                    uid = next((r.uid for r in pm.owner_references if r.controller), "")
                    out.append(Drained(pm.name, node_name, why, uid, restarts, since))
        return View(
            served=True,
            pods=tuple(out),
            budgets=self.budgets.store.by_index("controller", owner),
        )


def sets_on(pods: Iterable[Pod]) -> set[str]:
    """The CliqueSet keys (`namespace/name`) of `pods`."""
    out = set()
    for pod in pods:
        parent = pod.metadata.labels.get(labels.LABEL_CLIQUESET)
        if parent:
            out.add(f"{pod.metadata.namespace}/{parent}")
    return out


def changed(old: Node | None, new: Node) -> bool:
    """Whether a node's change may start or end a drain (its cordon or taints)."""
    return old is None or old.spec != new.spec


def moves(cqs: CliqueSet) -> bool:
    """Whether the set moves its gangs off drained nodes."""
    return cqs.spec.node_drain.policy == DrainPolicy.MOVE_GANGS


@dataclass(frozen=True)
class Stuck:
    """The gangs with a pod of their current restart on a drained node: gang -> the nodes,
    and why each node drains them."""

    gangs: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    why: Mapping[str, str] = field(default_factory=dict)
    #: seconds until a pod on a node that may be lost counts as drained (0: none waits)
    next_due: float = 0.0
    #: the gangs EvictionRequests ask to move or are moving, each with the requests that
    #: ask (`eviction_requests.merged`; one to move is in `gangs` too, with no node if it
    #: is on no drained node; one under way is said only)
    requested: Mapping[int, tuple[str, ...]] = field(default_factory=dict)


def _restarts(clique: Clique) -> str:
    return clique.metadata.annotations.get(labels.ANNOTATION_GANG_RESTARTS) or "0"


def _lost_for(since: str, now: str) -> float | None:
    """Seconds since `since` at `now`; None when either cannot be read."""
    at, then = parse_time(now), parse_time(since)
    if at is None or then is None:
        return None
    return (at - then).total_seconds()


def stuck(view: View, cqs: CliqueSet, cliques: Sequence[Clique], now: str = "") -> Stuck:
    """The set's stuck gangs (module docstring) at `now`: none where drains are not
    handled or the set's `nodeDrain.policy` is None. A pod on a node that may be lost
    counts once its node's lifecycle taint is `lostNodeSeconds` old; until then, the time
    left is `next_due`."""
    if not view.served or not view.pods or not moves(cqs):
        return Stuck()
    bound = cqs.spec.node_drain.lost_node_seconds
    by_uid = {c.metadata.uid: c for c in cliques if c.metadata.deletion_timestamp is None}
    gangs: dict[int, set[str]] = {}
    why: dict[str, str] = {}
    due: list[float] = []
    for pod in view.pods:
        clique = by_uid.get(pod.clique_uid)
        if clique is None or _restarts(clique) != pod.restarts:
            continue  # its Clique is gone, or it is being replaced already
        if pod.lost_since:
            lasted = _lost_for(pod.lost_since, now)
            if lasted is None:
                continue  # no time to judge by: left to the taint manager
            if lasted < bound:
                due.append(bound - lasted)
                continue
        gangs.setdefault(clique.spec.gang_index, set()).add(pod.node)
        why.setdefault(pod.node, pod.why)
    return Stuck(
        {g: tuple(sorted(n)) for g, n in sorted(gangs.items())},
        why,
        next_due=min(due) if due else 0.0,
    )


def pick(
    stuck_gangs: Iterable[int],
    allowed: int,
    *,
    down: Iterable[int] = (),
    ours: Iterable[int] = (),
    spent: Iterable[int] = (),
    exclude: Iterable[int] = (),
) -> tuple[list[int], list[int]]:
    """The stuck gangs to move now, and those that wait for the budget, lowest index first.
    `allowed`: the gangs the operator may have down at once (`surge.Surge.allowance`);
    `down`: every gang that is down, whoever took it down (`rollout.down`); `ours`: those
    the operator took down and that are not back (starting, as `rollout.restart_budget`
    counts them); `spent`: the gangs the same plan restarts. A move makes the gang the
    operator's: the gangs it has down, this one included, may not exceed `allowed` (as for
    a restart); a gang that is serving may move only if, besides, the gangs down whoever
    took them down, this one included, do not either, so that the whole gangs never fall
    below `replicas - maxUnavailable`. `exclude`: gangs another rule of the same plan
    makes again (left for the next plan)."""
    skip, down_all = set(exclude), set(down)
    taken_all = down_all | set(spent)
    taken_ours = set(ours) | set(spent)
    now: list[int] = []
    waiting: list[int] = []
    for gang in sorted(stuck_gangs):
        if gang in skip:
            continue
        fits = len(taken_ours | {gang}) <= allowed
        if gang not in down_all:
            fits = fits and len(taken_all | {gang}) <= allowed
        if fits:
            now.append(gang)
            taken_ours.add(gang)
            taken_all.add(gang)
        else:
            waiting.append(gang)
    return now, waiting


def _count(value: str) -> int:
    try:
        return max(0, int(value))
    except ValueError:
        return 0


def only_lost(nodes: Sequence[str], why: Mapping[str, str]) -> bool:
    """Whether every node of `nodes` is a lost one (its reason a `LOST_STATES`): a gang
    moved off those alone needs no `hold`, since no drain evicts its pods by name there."""
    return bool(nodes) and all(why.get(n, "").startswith(LOST_STATES) for n in nodes)


def move_annotations(
    members: Mapping[str, Clique], now: str, group: str = "", *, held: bool = True
) -> dict[str, tuple[dict[str, str | None], str]]:
    """Clique name -> (the annotations that move the gang, the restart count they give it):
    its restart count raised by one on every Clique, as many forgiven (a move is no
    failure), its breach mark cleared, the time of the move (`now`, which holds the new
    pods back, `hold`; with `held` False, a move off lost nodes only, none is written and
    an earlier one goes), and `group` (the PodGroup the set asks for the gang, "" for none)
    named where it differs: all its pods are made again. When its Cliques
    disagree on the count (a move or a restart that reached only some), only the lagging
    ones are brought to the highest: that finishes the move under way."""
    counts = {name: _count(_restarts(c)) for name, c in members.items()}
    if not counts:
        return {}
    top = max(counts.values())
    if len(set(counts.values())) > 1:
        level: dict[str, str | None] = {labels.ANNOTATION_GANG_RESTARTS: str(top)}
        return {
            c.metadata.name: (dict(level), str(top))
            for name, c in sorted(members.items())
            if counts[name] != top
        }
    forgiven = max(
        _count(c.metadata.annotations.get(labels.ANNOTATION_FORGIVEN_RESTARTS, "0"))
        for c in members.values()
    )
    marks: dict[str, str | None] = {
        labels.ANNOTATION_GANG_RESTARTS: str(top + 1),
        labels.ANNOTATION_FORGIVEN_RESTARTS: str(forgiven + 1),
        labels.ANNOTATION_MOVED_AT: now if held else None,
        # its pods do not go back to the nodes they leave (`same_nodes`)
        labels.ANNOTATION_RESTART_NODES: same_nodes.closed(str(top + 1)),
    }
    if any(labels.ANNOTATION_BREACH_SINCE in c.metadata.annotations for c in members.values()):
        marks[labels.ANNOTATION_BREACH_SINCE] = None
    out: dict[str, tuple[dict[str, str | None], str]] = {}
    for _, clique in sorted(members.items()):
        annotate = dict(marks)
        if group and clique.metadata.annotations.get(labels.ANNOTATION_POD_GROUP) != group:
            annotate[labels.ANNOTATION_POD_GROUP] = group
        out[clique.metadata.name] = (annotate, str(top + 1))
    return out


def hold(clique: Clique, now: str) -> float:
    """Seconds the Clique of a gang moved at `cliques.dev/moved-at` still holds its new pods
    back (0: none). `kubectl drain` evicts pods by name and tries again every 5 or 10 s; a pod made
    again at once under the same name, Ready elsewhere, would be the one each try meets,
    refused by the set's budget for good. For `MOVE_HOLD` seconds after the move the name
    is free (the old pod goes at once, or is terminating, which an eviction lets through),
    so the next try finds no pod, and the drain goes on."""
    moved = clique.metadata.annotations.get(labels.ANNOTATION_MOVED_AT)
    if not moved:
        return 0.0
    since, at = parse_time(moved), parse_time(now)
    if since is None or at is None:
        return 0.0
    left = MOVE_HOLD - (at - since).total_seconds()
    return left if 0 < left <= MOVE_HOLD else 0.0


def move_event(
    gang: int, stuck_on: Sequence[str], why: Mapping[str, str], requests: Sequence[str] = ()
) -> Event:
    """The Event of one move (off drained nodes, or asked by EvictionRequests)."""
    reasons = []
    if stuck_on:
        where = ", ".join(f"{n} ({why.get(n, 'drained')})" for n in stuck_on)
        reasons.append(f"has pods on drained node(s) {where}")
    if requests:
        reasons.append(f"is asked to go by {_requests(requests)}")
    return Event(
        "Normal",
        EVENT_MOVING,
        f"gang {gang} {' and '.join(reasons)}: recreating all its pods elsewhere",
    )


def _requests(names: Sequence[str]) -> str:
    return f"EvictionRequest {_named(list(names))}"


def _named(items: Sequence[Any]) -> str:
    shown = ", ".join(str(i) for i in items[:MAX_NAMED])
    more = len(items) - MAX_NAMED
    return shown + (f" and {more} more" if more > 0 else "")


def condition(
    setter: conditions.Setter,
    old: Sequence[Condition],
    found: Stuck,
    moved: Sequence[int],
    waiting: Sequence[int],
) -> Condition | None:
    """The `Moving` condition: True while gangs are stuck on drained nodes (naming the
    nodes, the gangs moved now and those waiting for the budget); False once none is,
    for a set that said True before; absent for a set that never had a gang to move."""
    if found.gangs or found.requested:
        nodes = sorted({n for ns in found.gangs.values() for n in ns})
        parts = []
        if nodes:
            where = _named([f"{n} ({found.why.get(n, 'drained')})" for n in nodes])
            on_nodes = sorted(g for g, ns in found.gangs.items() if ns)
            parts.append(f"gangs on drained node(s) {where}: {_named(on_nodes)}")
        if found.requested:
            asking = sorted({r for rs in found.requested.values() for r in rs})
            parts.append(
                f"gangs asked to go by {_requests(asking)}: {_named(sorted(found.requested))}"
            )
        reason = REASON_NODE_DRAIN if nodes else REASON_EVICTION_REQUEST
        if moved:
            parts.append(f"moving {_named(sorted(moved))} now")
        if waiting:
            parts.append(f"{_named(sorted(waiting))} wait for maxUnavailable")
        if any(found.why.get(n, "").startswith(LOST_STATES) for n in nodes):
            parts.append(LOST_HINT)
        status: ConditionStatus = "True"
        return setter.set(CONDITION_MOVING, status, reason, "; ".join(parts))
    if find_condition(list(old), CONDITION_MOVING) is None:
        return None
    return setter.set(
        CONDITION_MOVING,
        "False",
        REASON_MOVED,
        "no gang is left on a drained node or asked to go by an EvictionRequest",
    )


def budget_name(cliqueset: str) -> str:
    """The name of the set's PodDisruptionBudget."""
    return f"{cliqueset}{BUDGET_SUFFIX}"


def budget_spec(cqs: CliqueSet) -> dict[str, Any]:
    """The spec of the set's PodDisruptionBudget: no ready pod of the set may be evicted."""
    return {
        "maxUnavailable": 0,
        "selector": {"matchLabels": {labels.LABEL_CLIQUESET: cqs.metadata.name}},
        "unhealthyPodEvictionPolicy": "AlwaysAllow",
    }


def _same(budget: PodDisruptionBudget, want: Mapping[str, Any]) -> bool:
    spec = budget.spec
    selector = spec.selector.match_labels if spec.selector is not None else {}
    return (
        spec.max_unavailable == want["maxUnavailable"]
        and spec.min_available is None
        and selector == want["selector"]["matchLabels"]
        and spec.unhealthy_pod_eviction_policy == want["unhealthyPodEvictionPolicy"]
    )


@dataclass
class BudgetPlan:
    creates: list[Create] = field(default_factory=list)
    patches: list[Patch] = field(default_factory=list)
    deletes: list[Delete] = field(default_factory=list)


def wants_budget(cqs: CliqueSet) -> bool:
    drain = cqs.spec.node_drain
    return (
        drain.policy == DrainPolicy.MOVE_GANGS
        and drain.hold_evictions == EvictionHold.POD_DISRUPTION_BUDGET
    )


def budget_plan(cqs: CliqueSet, view: View, bucket: str) -> BudgetPlan:
    """The set's PodDisruptionBudget made, its spec kept, or deleted when the set no longer
    asks for it (nothing where drains are not handled)."""
    out = BudgetPlan()
    if not view.served:
        return out
    meta = cqs.metadata
    name = budget_name(meta.name)
    have = {b.metadata.name: b for b in view.budgets}
    want = wants_budget(cqs)
    spec = budget_spec(cqs)
    for other, budget in sorted(have.items()):
        if budget.metadata.deletion_timestamp is not None:
            continue
        if other != name or not want:
            out.deletes.append(Delete(PDBS, other, budget.metadata.uid, meta.uid, "Unused"))
        elif not _same(budget, spec):
            patch: dict[str, Any] = {
                "metadata": {"resourceVersion": budget.metadata.resource_version},
                "spec": spec,
            }
            out.patches.append(Patch(PDBS, name, patch, reason="DisruptionBudget"))
    if want and name not in have:
        body: dict[str, Any] = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {
                "name": name,
                "namespace": meta.namespace,
                "labels": {labels.LABEL_CLIQUESET: meta.name, labels.LABEL_BUCKET: bucket},
                "ownerReferences": [builders.owner_reference(cqs)],
            },
            "spec": spec,
        }
        out.creates.append(Create(PDBS, name, body, meta.uid))
    return out
