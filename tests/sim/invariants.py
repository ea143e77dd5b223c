"""The gang invariants, checked against the ground truth of the simulated cluster.

The checker is the cluster's `Observer`: it sees every write (who made it: the operator's
controllers, the user, the scheduler, the kubelets, the garbage collector, the world)
before it is committed, and keeps, per gang of the CliqueSet, what really happened to it:

    starting  created, rolled or restarted, not available since
    serving   available (every clique of the template has a live Clique with at least
              minAvailable Ready pods of its current template and restart count), and
              not broken since (a resize that adds pods leaves it serving)
    broken    was serving, lost a Ready pod through a world event (crash, eviction,
              node loss, readiness failure) and is not available; serving again once it is

and which gangs the operator took down (rolled while serving, or restarted) and that are
not back up: available, or every clique with as many Ready pods of its current template
and restart count as the minAvailable it had when the operator took the gang down, or, for
a gang serving while it grew, the lower one it was last available with (a gang that came
back at its size and is only growing serves, as a resize alone leaves a serving gang
serving). The invariants (docs/simulator.md):

I1  under RollingUpdate, gangs down by the operator's hand never number more than
    max(1, maxUnavailable) (checked when the operator takes one down);
I2  no Ready pod is deleted by the operator except for a roll (its template changed), a
    scale-down (index >= replicas, gang or clique removed) or the restart of a gang that
    really broke;
I3  a gang is restarted only when it is broken (never while starting or serving), so a
    single crash restarts a gang at most once, whatever the start latency; and never more
    than maxGangRestarts times (restarts forgiven after `gang_failures.reset_after`
    seconds of availability, where the planners have that notion, do not count);
I4  the first pods of a Clique with startsAfter after its creation, a roll or a restart
    (or the opening of their start gates) never start before every Clique it starts
    after has minAvailable Ready pods of its current template and restart count;
I5  the pods created at one (Clique, index) are at most 1 + the world events at that
    index + the rolls, restarts and resizes of that Clique;
I6  once the operator is quiet (nothing queued or due), the ControllerRevision that the
    set's `status.currentRevision` names exists, its number is higher than any other of
    the set's, and the set keeps at most `revisionHistoryLimit` others;
I7  no gang below `updateStrategy.partition` is rolled (the partition as it was over the
    last `PARTITION_LAG` seconds: a roll the operator decided just before the user raised
    it is not one it held);
I8  under RollingUpdate with maxSurge >= 1, whole gangs (available, any index: surge gangs
    count) never fall below replicas - maxUnavailable (replicas when maxUnavailable is 0)
    by the operator's hand: the gangs below replicas that are not available and that the
    operator did not take down (broken by the world, new) are excused. Checked whenever
    the operator rolls a serving gang and whenever it deletes a surge gang (one it made at
    an index at or above replicas) that is available;
I9  a gang is moved (its restart count raised with as many forgiven, and `cliques.dev/
    moved-at` unless it leaves lost nodes only) only while it
    has a pod on a cordoned node; a move is paid from the budget as a roll is (I1, and I8
    with surge); and once the operator is quiet no pod of its Clique's current restart
    count is left on a cordoned node;
I10 once a lost node's unreachable taint is `lostNodeSeconds` + `LOST_SLACK` old, no gang
    has a live pod of its Clique's current restart count there unless the budget holds
    its move back (checked at every step; a move off it is an I9 move, paid as one); no
    pod is ever bound to a lost or out-of-service node;
I11 with gang scheduling, every gang pod the operator makes, and once it is quiet every
    live one, names an existing group (a PodGroup from 1.36 on, a Workload's pod group
    replica on 1.35) of its own gang, not being deleted; the first live pod of a group
    finds it asking for the gang's size (`minCount`; the size as it was up to `SIZE_LAG`
    seconds ago also counts); no pod of a group is bound before the group has minCount
    live pods; and once the operator is quiet (requeues due later aside), on v1beta1
    every PodGroup a Clique or pod names asks for the gang's size, and no PodGroup of the
    set is kept that nothing names but one a gang may move to (one per gang below
    replicas, of its size): on v1alpha2 the group a gang left goes once unused; where
    gangs are composite trees, every group's parent exists (same set and gang) and every
    composite has at least `minGroupCount` children (`composites_consistent`).

In I1, the surge gangs that are available add to the budget: each stands in for a gang.

The view of the operator lags the world by a status write (a pod turns Ready, its Clique
says so a moment later): a gang that recovers, or a Clique that loses a pod or has its
minAvailable raised, at the very second the operator acts is judged as it was at the
start of that second.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import msgspec

from cliques.api import decode_cliqueset, labels
from cliques.api.cliqueset import CliqueSet
from cliques.controllers.features import gang_failures
from tests.sim import groups
from tests.sim.cluster import (
    Cluster,
    Obj,
    annotations_of,
    controller_uid,
    labels_of,
    meta,
    pod_index,
    pod_ready,
    pod_terminal,
    restarts,
    template_hash,
    terminating,
)

STARTING = "starting"
SERVING = "serving"
BROKEN = "broken"


class InvariantViolation(AssertionError):
    """An invariant does not hold; the message has the findings and the step history."""

    invariant = "invariant"


class GangsDown(InvariantViolation):
    invariant = "I1 gangs down by the operator <= max(1, maxUnavailable)"


class ReadyPodDeleted(InvariantViolation):
    invariant = "I2 no Ready pod deleted without a roll, scale-down or real breakage"


class BadRestart(InvariantViolation):
    invariant = "I3 restarts only of broken gangs, at most maxGangRestarts"


class StartOrder(InvariantViolation):
    invariant = "I4 start order kept after creation, roll and restart"


class Churn(InvariantViolation):
    invariant = "I5 no create/delete loop"


class History(InvariantViolation):
    invariant = "I6 once quiet, the current revision is recorded, numbered highest"


class PartitionRolled(InvariantViolation):
    invariant = "I7 no gang below the partition rolled"


class TooFewWhole(InvariantViolation):
    invariant = "I8 whole gangs >= replicas - maxUnavailable with maxSurge"


ALL = (
    GangsDown,
    ReadyPodDeleted,
    BadRestart,
    StartOrder,
    Churn,
    History,
    PartitionRolled,
    TooFewWhole,
)

#: Seconds a raised partition takes to hold in I7 (the operator may act on the lower one it
#: had read until then).
PARTITION_LAG = 5


class LeftOnDrainedNode(InvariantViolation):
    invariant = "I9 no gang left on a cordoned node once moved; moves only off drained nodes"


class GangGroups(InvariantViolation):
    invariant = "I11 gang pods name a group of their gang, of its size; bound only at minCount"


#: Seconds a changed gang size takes to hold in I11 (a Clique may still make a pod of the
#: size it read just before).
SIZE_LAG = 5


class LeftOnLostNode(InvariantViolation):
    invariant = "I10 no gang left on a lost node past lostNodeSeconds; none placed there"


#: Seconds after `lostNodeSeconds` within which the operator must have moved a gang off a
#: lost node (I10): the plan looks again when the taint comes due (rounded up to the
#: second), and a set waiting on its budget looks every `drain.WAIT_REQUEUE` (5) seconds.
LOST_SLACK = 5


@dataclass(frozen=True)
class Finding:
    kind: type[InvariantViolation]
    t: int
    message: str

    def __str__(self) -> str:
        return f"[{self.kind.invariant}] t={self.t}s: {self.message}"


@dataclass
class GangState:
    state: str = STARTING
    #: when it entered its state, and why (for messages)
    since: int = 0
    why: str = "created"
    #: why the operator took it down ("" if it did not, or it is back up)
    down: str = ""
    #: clique name -> its minAvailable when the operator took the gang down (or, lower, the
    #: one it last was available with: a gang resized since still serves at that size)
    floor: dict[str, int] = field(default_factory=dict)
    #: clique name -> its minAvailable when the gang was last available
    served: dict[str, int] = field(default_factory=dict)
    #: the highest restart count its Cliques record
    restarts: int = 0
    #: restarts in this incarnation, and those that count towards maxGangRestarts
    total: int = 0
    counted: int = 0
    breaks: int = 0
    #: restart number -> whether the gang had broken
    justified: dict[int, bool] = field(default_factory=dict)
    available_since: int | None = None
    #: when it last went from broken to serving
    recovered_at: int | None = None


class Checker:
    """The cluster's observer: keeps the gangs' ground truth and the findings."""

    def __init__(self, cluster: Cluster, cliqueset: str = "llama") -> None:
        self.cluster = cluster
        self.name = cliqueset
        #: the operator moves gangs off drained nodes (I9 applies)
        self.drains = False
        #: the gang API the operator schedules gangs through ("" for none: I11 is off)
        self.gang_api = ""
        #: the gang size (pods it needs at once): now, before its last change, and when
        self._size = (-1, -1, 0)
        self.gangs: dict[int, GangState] = {}
        self.findings: list[Finding] = []
        self.creates: Counter[tuple[str, int]] = Counter()
        self.justify: Counter[tuple[str, int]] = Counter()
        self.justify_all: Counter[str] = Counter()
        self._churned: set[tuple[str, int]] = set()
        #: (Clique uid, template hash, restart count) -> the operator round its pods started
        self._started: dict[tuple[str, str, int], int] = {}
        #: gangs a world event took a Ready pod from, judged once the event is applied
        self._hits: set[int] = set()
        #: pod uid -> the second a world event took its readiness
        self._lost_at: dict[str, int] = {}
        #: Clique uid -> (the second its minAvailable changed, what it was before)
        self._min_before: dict[str, tuple[int, int]] = {}
        self._decoded: tuple[str, CliqueSet] | None = None
        self.restarts = 0
        self.rolls: set[tuple[int, str]] = set()
        #: updateStrategy.partition: now, before its last change, and when that was
        self._partition = (0, 0, -PARTITION_LAG)
        #: gangs the operator made at an index at or above replicas (surge gangs, I8)
        self.surge_born: set[int] = set()

    # -- the truth ----------------------------------------------------------------------------

    def cliqueset(self) -> CliqueSet | None:
        obj = self.cluster.get("CliqueSet", self.name)
        if obj is None:
            return None
        rv = meta(obj)["resourceVersion"]
        if self._decoded is None or self._decoded[0] != rv:
            self._decoded = (rv, decode_cliqueset(msgspec.json.encode(obj)))
        return self._decoded[1]

    def held_below(self) -> int:
        """The gangs below this index are held by the partition (I7)."""
        cqs = self.cliqueset()
        now = self.cluster.now
        value = cqs.spec.update_strategy.partition if cqs is not None else 0
        current, before, since = self._partition
        if value != current:
            current, before, since = value, current, now
            self._partition = (current, before, since)
        return current if now - since >= PARTITION_LAG else min(current, before)

    def _note(self, text: str) -> None:
        self.cluster.history.add(self.cluster.now, "check", text)

    def _find(self, kind: type[InvariantViolation], message: str) -> None:
        self.findings.append(Finding(kind, self.cluster.now, message))
        self._note(f"VIOLATION {kind.__name__}: {message}")

    def quiet(self) -> None:
        """I6, I9 and I11, checked when the operator has nothing queued or due."""
        self.drained_node_left()
        self.groups_settled()
        cqs = self.cliqueset()
        if cqs is None or cqs.status is None or not cqs.status.current_revision:
            return
        uid = cqs.metadata.uid
        mine = {
            meta(r)["name"]: int(r.get("revision", 0))
            for r in self.cluster.objects_of("ControllerRevision")
            if any(ref.get("uid") == uid for ref in meta(r).get("ownerReferences") or ())
        }
        current = cqs.status.current_revision
        others = [n for name, n in mine.items() if name != current]
        if current not in mine:
            self._find(History, f"status.currentRevision {current} does not exist: {mine}")
        elif others and max(others) >= mine[current]:
            self._find(History, f"the current revision {current} is not the highest: {mine}")
        if len(others) > cqs.spec.revision_history_limit:
            self._find(History, f"{len(others)} old revisions kept: {mine}")

    def live_cliques(self) -> list[Obj]:
        return [
            c
            for c in self.cluster.objects_of("Clique")
            if not terminating(c) and labels_of(c).get(labels.LABEL_CLIQUESET) == self.name
        ]

    def _pods_by_owner(self) -> dict[str, list[Obj]]:
        out: dict[str, list[Obj]] = {}
        for pod in self.cluster.objects_of("Pod"):
            uid = controller_uid(pod)
            if uid is not None:
                out.setdefault(uid, []).append(pod)
        return out

    def current_ready(
        self, clique: Obj, pods: list[Obj] | None = None, *, lenient: bool = False
    ) -> int:
        """Ready pods of the Clique's current template and restart count (with `lenient`,
        also those a world event took at this very second)."""
        if pods is None:
            pods = self.cluster.pods_of(meta(clique)["uid"])
        want_hash = template_hash(clique)
        previous = {
            h
            for h in annotations_of(clique).get(labels.ANNOTATION_PREVIOUS_HASHES, "").split(",")
            if h
        }
        want_restarts = restarts(clique)
        replicas = int(clique["spec"].get("replicas", 1))
        n = 0
        for pod in pods:
            ready = pod_ready(pod) or (
                lenient and self._lost_at.get(meta(pod)["uid"]) == self.cluster.now
            )
            if (
                ready
                and (template_hash(pod) == want_hash or template_hash(pod) in previous)
                and restarts(pod) == want_restarts
                and pod_index(pod) < replicas
            ):
                n += 1
        return n

    @staticmethod
    def min_available(clique: Obj) -> int:
        spec = clique["spec"]
        value = spec.get("minAvailable")
        return int(spec.get("replicas", 1) if value is None else value)

    def available(self, gang: int, by_owner: dict[str, list[Obj]] | None = None) -> bool:
        cqs = self.cliqueset()
        if cqs is None:
            return False
        if by_owner is None:
            by_owner = self._pods_by_owner()
        for tmpl in cqs.spec.template.cliques:
            clique = self.cluster.get("Clique", labels.clique_name(self.name, gang, tmpl.name))
            if clique is None or terminating(clique):
                return False
            pods = by_owner.get(meta(clique)["uid"], [])
            if self.current_ready(clique, pods) < self.min_available(clique):
                return False
        return True

    def refresh(self) -> None:
        """Bring the gangs' states up to date: gangs gone, gangs available (again); note a
        change of the partition."""
        self.held_below()
        now = self.cluster.now
        live: dict[int, int] = {}
        sizes: dict[int, dict[str, int]] = {}
        for c in self.live_cliques():
            live[int(c["spec"]["gangIndex"])] = max(
                live.get(int(c["spec"]["gangIndex"]), 0), restarts(c)
            )
            role = str(c["spec"]["cliqueName"])
            sizes.setdefault(int(c["spec"]["gangIndex"]), {})[role] = self.min_available(c)
        for gang in list(self.gangs):
            if gang not in live:
                del self.gangs[gang]
                self.surge_born.discard(gang)
        by_owner = self._pods_by_owner()
        reset = _reset_after(self.cliqueset())
        for gang, count in live.items():
            st = self.gangs.setdefault(gang, GangState(since=now, restarts=count))
            if self.available(gang, by_owner):
                st.served = sizes.get(gang, {})
                if st.available_since is None:
                    st.available_since = now
                if st.state != SERVING:
                    if st.state == BROKEN:
                        st.recovered_at = now
                    if st.down:
                        self._note(f"gang {gang} available again (was down: {st.down})")
                    st.state, st.since, st.why, st.down = SERVING, now, "available", ""
                if reset is not None and st.counted and now - st.available_since >= reset:
                    st.counted = 0  # forgiven, as the planners forgive them
            else:
                st.available_since = None
                if st.down and self.back_up(gang, st.floor, by_owner):
                    self._note(f"gang {gang} back up at its size (was down: {st.down})")
                    st.down = ""

    def back_up(self, gang: int, floor: dict[str, int], by_owner: dict[str, list[Obj]]) -> bool:
        """Every clique of the gang has as many Ready pods of its epoch as the smaller of
        its minAvailable and the one it had when the operator took the gang down."""
        cqs = self.cliqueset()
        if cqs is None:
            return False
        for tmpl in cqs.spec.template.cliques:
            clique = self.cluster.get("Clique", labels.clique_name(self.name, gang, tmpl.name))
            if clique is None or terminating(clique):
                return False
            need = min(self.min_available(clique), floor.get(tmpl.name, 0) or 10**9)
            if self.current_ready(clique, by_owner.get(meta(clique)["uid"], [])) < need:
                return False
        return True

    # -- Observer -----------------------------------------------------------------------------

    @staticmethod
    def _operator(actor: str) -> bool:
        return actor.startswith("op:")

    def before_create(self, actor: str, kind: str, obj: Obj) -> None:
        self.refresh()
        if kind == "Pod" and obj["spec"].get("nodeName"):
            self._placed(obj, f"created by {actor} on")
        if not self._operator(actor):
            return
        if kind == "Clique":
            gang = int(obj["spec"]["gangIndex"])
            cqs = self.cliqueset()
            if cqs is not None and gang >= cqs.spec.replicas:
                self.surge_born.add(gang)
            st = self.gangs.get(gang)
            if st is None:
                self.gangs[gang] = GangState(since=self.cluster.now, restarts=restarts(obj))
            else:
                st.restarts = max(st.restarts, restarts(obj))
        elif kind == "Pod":
            self._pod_created(obj)

    def before_update(self, actor: str, kind: str, old: Obj, new: Obj) -> None:
        self.refresh()
        if kind == "Pod" and new["spec"].get("nodeName") != old["spec"].get("nodeName"):
            self._placed(new, f"bound by {actor} to")
            self._bound(new)
        if not self._operator(actor):
            return
        if kind == "Clique":
            self._clique_changed(old, new)
        elif kind == "Pod":
            was = annotations_of(old).get(labels.ANNOTATION_START_GATE)
            now = annotations_of(new).get(labels.ANNOTATION_START_GATE)
            if was == "closed" and now != "closed":
                clique = self._owner(new)
                if clique is not None:
                    self._start_order(new, clique, "opened the start gate of")

    def before_delete(self, actor: str, kind: str, obj: Obj) -> None:
        self.refresh()
        if not self._operator(actor):
            return
        if kind == "Pod" and pod_ready(obj):
            self._ready_pod_deleted(obj)
        elif kind == "Clique":
            cqs = self.cliqueset()
            gang, role = int(obj["spec"]["gangIndex"]), obj["spec"]["cliqueName"]
            surge = cqs is not None and gang >= cqs.spec.replicas and gang in self.surge_born
            if surge and self.available(gang):
                self._whole(f"deleting surge gang {gang}", without=gang)
            kept = cqs is not None and gang < cqs.spec.replicas and cqs.spec.clique(role)
            ready = [p for p in self.cluster.pods_of(meta(obj)["uid"]) if pod_ready(p)]
            if kept and ready:
                self._find(
                    ReadyPodDeleted,
                    f"deleted Clique {meta(obj)['name']} with {len(ready)} Ready pod(s), though "
                    f"gang {gang} and clique {role} are still wanted",
                )

    def pod_lost(self, cause: str, pod: Obj) -> None:
        self.refresh()
        owner = controller_uid(pod)
        if owner is None:
            return
        if cause != "unready":
            self.justify[(owner, pod_index(pod))] += 1
        if pod_ready(pod):
            self._lost_at[meta(pod)["uid"]] = self.cluster.now
            clique = self._owner(pod)
            if clique is not None:
                self._hits.add(int(clique["spec"]["gangIndex"]))

    def after_world(self) -> None:
        """A world event was applied: the gangs it hit that are no longer available broke."""
        self.refresh()
        for gang in sorted(self._hits):
            st = self.gangs.get(gang)
            if st is not None and st.state == SERVING and not self.available(gang):
                st.state, st.since, st.why = BROKEN, self.cluster.now, "lost a Ready pod"
                st.breaks += 1
                self._note(f"gang {gang} broken (lost a Ready pod)")
        self._hits.clear()

    # -- the checks ---------------------------------------------------------------------------

    def _owner(self, pod: Obj) -> Obj | None:
        uid = controller_uid(pod)
        for c in self.cluster.objects_of("Clique"):
            if meta(c)["uid"] == uid:
                return c
        return None

    def _take_down(self, gang: int, st: GangState, why: str) -> None:
        if st.down:
            return
        st.down = f"{why} at t={self.cluster.now}s"
        st.floor = {}
        serving = st.state == SERVING
        for c in self.live_cliques():
            if int(c["spec"]["gangIndex"]) == gang:
                role, need = str(c["spec"]["cliqueName"]), self.min_available(c)
                # a serving gang grown since it was last available serves at that size
                st.floor[role] = min(need, st.served.get(role, need)) if serving else need
        cqs = self.cliqueset()
        if cqs is None or cqs.spec.update_strategy.type != "RollingUpdate":
            return
        replicas = cqs.spec.replicas
        surge = sum(1 for g in self.gangs if g >= replicas and g != gang and self.available(g))
        budget = max(1, cqs.spec.update_strategy.max_unavailable) + surge
        down = {g: s.down for g, s in sorted(self.gangs.items()) if s.down and g < replicas}
        if len(down) > budget:
            listed = "; ".join(f"gang {g}: {d}" for g, d in down.items())
            self._find(
                GangsDown,
                f"{len(down)} gangs down by the operator, maxUnavailable "
                f"{cqs.spec.update_strategy.max_unavailable} ({listed})",
            )

    def _whole(self, act: str, *, without: int) -> None:
        """I8: the whole gangs (any index, but `without`) plus the gangs below replicas
        that are not available and that the operator did not take down, against
        replicas - maxUnavailable, under RollingUpdate with maxSurge >= 1."""
        cqs = self.cliqueset()
        if cqs is None or cqs.spec.update_strategy.type != "RollingUpdate":
            return
        strategy = cqs.spec.update_strategy
        if not isinstance(strategy.max_surge, int) or strategy.max_surge < 1:
            return
        replicas = cqs.spec.replicas
        by_owner = self._pods_by_owner()
        whole = [g for g in self.gangs if g != without and self.available(g, by_owner)]
        excused = [
            g
            for g in range(replicas)
            if g not in whole and g != without and not self.gangs.get(g, GangState()).down
        ]
        need = replicas - strategy.max_unavailable
        if len(whole) + len(excused) < need:
            self._find(
                TooFewWhole,
                f"{act} leaves {len(whole)} whole gang(s) {sorted(whole)} (excused: "
                f"{sorted(excused)}), replicas {replicas}, maxUnavailable "
                f"{strategy.max_unavailable}, maxSurge {strategy.max_surge}",
            )

    def _clique_changed(self, old: Obj, new: Obj) -> None:
        gang = int(new["spec"]["gangIndex"])
        uid = meta(new)["uid"]
        st = self.gangs.setdefault(gang, GangState(since=self.cluster.now))
        now = self.cluster.now
        if template_hash(old) != template_hash(new):
            if gang < self.held_below():
                self._find(
                    PartitionRolled,
                    f"gang {gang} rolled ({meta(new)['name']}) below partition {self.held_below()}",
                )
            self.justify_all[uid] += 1
            self.rolls.add((gang, template_hash(new)))
            if st.state == SERVING:
                self._take_down(gang, st, "rolled")
                self._whole(f"rolling gang {gang}", without=gang)
            st.state, st.since, st.why = STARTING, now, "rolled"
        if old["spec"].get("replicas") != new["spec"].get("replicas"):
            self.justify_all[uid] += 1
        if self.min_available(old) != self.min_available(new):
            when, _ = self._min_before.get(uid, (-1, 0))
            if when != now:
                self._min_before[uid] = (now, self.min_available(old))
        before, after = restarts(old), restarts(new)
        if after != before:
            self.justify_all[uid] += 1
        if after > st.restarts:
            # A move raises the restart count and forgives as many in the same write (a
            # failure restart forgives none), stamping `moved-at` unless the gang left
            # lost nodes only (whose new pods are not held back).
            stamp = self.cluster.stamp()
            new_ann, old_ann = annotations_of(new), annotations_of(old)
            moved = new_ann.get(labels.ANNOTATION_MOVED_AT) == stamp
            moved = moved and old_ann.get(labels.ANNOTATION_MOVED_AT) != stamp
            forgiven = labels.ANNOTATION_FORGIVEN_RESTARTS
            moved = moved or _number(new_ann.get(forgiven)) > _number(old_ann.get(forgiven))
            self._restarted(gang, st, after, moved=moved)

    def lost_node_seconds(self) -> int:
        cqs = self.cliqueset()
        return cqs.spec.node_drain.lost_node_seconds if cqs is not None else 60

    def lost_nodes(self, *, slack: int = 0) -> dict[str, int]:
        """The lost nodes whose unreachable taint is at least `lostNodeSeconds` + `slack`
        old: name -> since when."""
        due = self.lost_node_seconds() + slack
        return {
            n: node.lost_since
            for n, node in sorted(self.cluster.nodes.items())
            if node.lost_since is not None and self.cluster.now - node.lost_since >= due
        }

    def _on_cordoned(self, gang: int, count: int) -> bool:
        """Whether gang `gang` has a live pod of restart `count` on a drained node: cordoned,
        tainted out-of-service, or lost for `lostNodeSeconds`."""
        cordoned = {
            n for n, node in self.cluster.nodes.items() if node.unschedulable or node.out_of_service
        } | set(self.lost_nodes())
        for clique in self.live_cliques():
            if int(clique["spec"]["gangIndex"]) != gang:
                continue
            for pod in self.cluster.pods_of(meta(clique)["uid"]):
                on = pod["spec"].get("nodeName") in cordoned
                if on and not terminating(pod) and restarts(pod) == count:
                    return True
        return False

    def lost_node_left(self) -> None:
        """I10, at every step: once a lost node's taint is `lostNodeSeconds` + `LOST_SLACK`
        old, no gang has a live pod of its Clique's current restart count there, unless the
        budget holds its move back: the gangs the operator has down (or that are on their
        way up), this one aside, already take max(1, maxUnavailable) plus the available
        surge gangs (and for a gang that is available, the gangs down whoever took them
        down do). Under Recreate, or where the operator does not move gangs (`drains`),
        nothing is checked."""
        if not self.drains:
            return
        lost = self.lost_nodes(slack=LOST_SLACK)
        if not lost:
            return
        cqs = self.cliqueset()
        if cqs is None or cqs.spec.update_strategy.type != "RollingUpdate":
            return
        by_owner = self._pods_by_owner()
        left: dict[int, list[str]] = {}
        for clique in self.live_cliques():
            for pod in by_owner.get(meta(clique)["uid"], ()):
                on = pod["spec"].get("nodeName")
                if on in lost and not terminating(pod) and restarts(pod) == restarts(clique):
                    left.setdefault(int(clique["spec"]["gangIndex"]), []).append(
                        f"{meta(pod)['name']} on {on} (lost since t={lost[on]}s)"
                    )
        if not left:
            return
        replicas = cqs.spec.replicas
        available = {g for g in self.gangs if self.available(g, by_owner)}
        surge = sum(1 for g in available if g >= replicas)
        budget = max(1, cqs.spec.update_strategy.max_unavailable) + surge
        for gang, pods in sorted(left.items()):
            ours = {
                g
                for g, st in self.gangs.items()
                if g != gang and g not in available and (st.down or st.state == STARTING)
            }
            down = {g for g in self.gangs if g != gang and g not in available}
            held = len(ours) >= budget or (gang in available and len(down) >= budget)
            if not held:
                self._find(
                    LeftOnLostNode,
                    f"gang {gang} still has {', '.join(pods)} {self.lost_node_seconds()}s + "
                    f"{LOST_SLACK}s after the node was lost, though the budget ({budget}) "
                    f"holds no move back (down by the operator or starting: {sorted(ours)})",
                )

    def next_check(self) -> int | None:
        """The next second at which I10 comes due for a lost node (the run steps there)."""
        due = self.lost_node_seconds() + LOST_SLACK
        times = [
            node.lost_since + due
            for node in self.cluster.nodes.values()
            if node.lost_since is not None and node.lost_since + due > self.cluster.now
        ]
        return min(times) if times else None

    def _placed(self, pod: Obj, how: str) -> None:
        """I10: no pod is placed on a lost node or one tainted out-of-service."""
        node = self.cluster.nodes.get(pod["spec"].get("nodeName") or "")
        if node is not None and node.tainted:
            self._find(
                LeftOnLostNode,
                f"pod {meta(pod)['name']} {how} node {node.name}, which is "
                f"{'out of service' if node.out_of_service else 'lost'}",
            )

    # -- I11: the gangs' groups ----------------------------------------------------------------

    def gang_size(self) -> set[int]:
        """The pods a gang needs at once (the sum of its cliques' minAvailable), as it is
        and, for `SIZE_LAG` seconds after a change, as it was."""
        cqs = self.cliqueset()
        if cqs is None:
            return set()
        size = sum(c.effective_min_available for c in cqs.spec.template.cliques)
        now, before, since = self._size
        if size != now:
            self._size = (size, now, self.cluster.now)
            now, before, since = self._size
        return {now} if self.cluster.now - since >= SIZE_LAG or before < 0 else {now, before}

    def _group(self, pod: Obj) -> tuple[str, Obj | None, str]:
        """(group kind, the group object or None, its name) that a pod names."""
        key = groups.group_of(pod)
        if key is None:
            return "", None, ""
        kind, name = key
        obj = self.cluster.get(kind, name.partition("/")[0])
        return kind, obj, name

    def _named(self, kind: str, name: str, *, but: str = "") -> list[Obj]:
        """The live pods that name group `name` (but the pod of uid `but`)."""
        return [
            p
            for p in self.cluster.objects_of("Pod")
            if groups.group_of(p) == (kind, name)
            and not terminating(p)
            and not pod_terminal(p)
            and meta(p)["uid"] != but
        ]

    def _group_of_gang(self, pod: Obj, gang: int, act: str) -> tuple[str, Obj | None, str]:
        """I11: a pod names an existing group of its own gang (its kind as the API the
        operator speaks asks), not being deleted."""
        kind, group, name = self._group(pod)
        want = "PodGroup" if self.gang_api in groups.POD_GROUP_FIELDS else "Workload"
        pname = meta(pod)["name"]
        if kind != want:
            self._find(GangGroups, f"{act} pod {pname} names no {want} ({kind or 'none'})")
            return kind, None, name
        if group is None or terminating(group):
            gone = "does not exist" if group is None else "is being deleted"
            self._find(GangGroups, f"{act} pod {pname} names {kind} {name}, which {gone}")
            return kind, None, name
        if kind == "PodGroup":
            of = labels_of(group)
            theirs = (of.get(labels.LABEL_CLIQUESET), of.get(labels.LABEL_GANG_INDEX))
        else:
            theirs = (labels_of(group).get(labels.LABEL_CLIQUESET), name.partition("/")[2])
        if theirs != (self.name, str(gang)):
            self._find(
                GangGroups,
                f"{act} pod {pname} of gang {gang} names {kind} {name}, which is that of "
                f"set {theirs[0]} gang {theirs[1]}",
            )
        return kind, group, name

    def _gang_pod_created(self, pod: Obj, clique: Obj) -> None:
        """I11 when the operator makes a gang pod: it names a group of its gang; the first
        live pod of a group (a new gang, or one made whole again) finds it asking for the
        gang's size."""
        if not self.gang_api:
            return
        gang = int(clique["spec"]["gangIndex"])
        kind, group, name = self._group_of_gang(pod, gang, "created")
        if group is None or self._named(kind, name):
            return
        sizes = self.gang_size()
        have = groups.min_count(kind, group)
        if sizes and have not in sizes:
            self._find(
                GangGroups,
                f"created pod {meta(pod)['name']}, the first of gang {gang} in {kind} {name}, "
                f"whose minCount is {have}, though the gang needs {sorted(sizes)}",
            )

    def _bound(self, pod: Obj) -> None:
        """I11: a pod of a gang group is bound only once the group has minCount live
        pods."""
        kind, group, name = self._group(pod)
        if not kind or not self.gang_api:
            return
        have = len(self._named(kind, name, but=meta(pod)["uid"])) + 1
        need = groups.min_count(kind, group)
        if have < need:
            self._find(
                GangGroups,
                f"pod {meta(pod)['name']} bound while its {kind} {name} has {have} pods of "
                f"minCount {need if group is not None else '(missing)'}",
            )

    def groups_settled(self) -> None:
        """I11 once quiet: every live gang pod names an existing group of its gang; on
        v1beta1 every group a live Clique names asks for the gang's size; no PodGroup of
        the set is kept that nothing names but the one a gang may move to (asking for its
        size, at an index below replicas)."""
        if not self.gang_api:
            return
        for clique in self.live_cliques():
            gang = int(clique["spec"]["gangIndex"])
            for pod in self.cluster.pods_of(meta(clique)["uid"]):
                if not terminating(pod) and not pod_terminal(pod):
                    self._group_of_gang(pod, gang, "live")
        if self.gang_api not in groups.POD_GROUP_FIELDS:
            return
        self.composites_consistent()
        cqs = self.cliqueset()
        sizes = self.gang_size()
        named = {annotations_of(c).get(labels.ANNOTATION_POD_GROUP) for c in self.live_cliques()}
        for pod in self.cluster.objects_of("Pod"):
            key = groups.group_of(pod)
            if key is not None:
                named.add(key[1])
        unused: Counter[str] = Counter()
        for group in self.cluster.objects_of("PodGroup"):
            if terminating(group) or labels_of(group).get(labels.LABEL_CLIQUESET) != self.name:
                continue
            name, have = meta(group)["name"], groups.min_count("PodGroup", group)
            index = labels_of(group).get(labels.LABEL_GANG_INDEX, "")
            if name in named:
                policy = (group["spec"].get("schedulingPolicy") or {}).get("gang")
                if self.gang_api == "v1beta1" and policy and sizes and have not in sizes:
                    self._find(
                        GangGroups,
                        f"PodGroup {name} of gang {index} asks for minCount {have}, the gang "
                        f"needs {sorted(sizes)} (v1beta1 changes it in place)",
                    )
                continue
            unused[index] += 1
            wanted = cqs is not None and index.isdigit() and int(index) < cqs.spec.replicas
            if not wanted or (sizes and have not in sizes) or unused[index] > 1:
                self._find(GangGroups, f"PodGroup {name} of gang {index} is kept, unused")

    def composites_consistent(self) -> None:
        """I11 for gangs that are composite trees: every group of the set that names a
        parent names an existing CompositePodGroup of the same set and gang, not being
        deleted while the child lives (a composite has no finalizer: deleted first, its
        children's pods wait for good); every live composite of the set has at least
        `minGroupCount` live children."""
        kids: Counter[str] = Counter()
        for kind in ("PodGroup", "CompositePodGroup"):
            for child in self.cluster.objects_of(kind):
                mine = labels_of(child)
                if mine.get(labels.LABEL_CLIQUESET) != self.name or terminating(child):
                    continue
                parent_name = child["spec"].get("parentCompositePodGroupName")
                if not parent_name:
                    continue
                kids[parent_name] += 1
                parent = self.cluster.get("CompositePodGroup", parent_name)
                name = meta(child)["name"]
                if parent is None or terminating(parent):
                    gone = "does not exist" if parent is None else "is being deleted"
                    self._find(
                        GangGroups, f"{kind} {name} names parent {parent_name}, which {gone}"
                    )
                    continue
                theirs = labels_of(parent)
                key = (labels.LABEL_CLIQUESET, labels.LABEL_GANG_INDEX)
                if tuple(theirs.get(k) for k in key) != tuple(mine.get(k) for k in key):
                    self._find(
                        GangGroups,
                        f"{kind} {name} of gang {mine.get(labels.LABEL_GANG_INDEX)} names "
                        f"parent {parent_name} of gang {theirs.get(labels.LABEL_GANG_INDEX)}",
                    )
        for composite in self.cluster.objects_of("CompositePodGroup"):
            if terminating(composite) or labels_of(composite).get(labels.LABEL_CLIQUESET) != (
                self.name
            ):
                continue
            name = meta(composite)["name"]
            gang = (composite["spec"].get("schedulingPolicy") or {}).get("gang") or {}
            need = int(gang.get("minGroupCount", 0))
            if kids[name] < need:
                self._find(
                    GangGroups,
                    f"CompositePodGroup {name} needs {need} groups and has {kids[name]} children",
                )

    def drained_node_left(self) -> None:
        """I9, once quiet: no pod of its Clique's current restart count on a cordoned node
        (where the operator moves gangs at all: `drains`)."""
        cordoned = {n for n, node in self.cluster.nodes.items() if node.unschedulable}
        if not cordoned or not self.drains:
            return
        for clique in self.live_cliques():
            for pod in self.cluster.pods_of(meta(clique)["uid"]):
                left = pod["spec"].get("nodeName") in cordoned and not terminating(pod)
                if left and restarts(pod) == restarts(clique):
                    self._find(
                        LeftOnDrainedNode,
                        f"pod {meta(pod)['name']} of gang {clique['spec']['gangIndex']} is "
                        f"still on cordoned node {pod['spec']['nodeName']}",
                    )

    def _restarted(self, gang: int, st: GangState, count: int, *, moved: bool = False) -> None:
        now = self.cluster.now
        self.restarts += 1
        st.restarts = count
        st.total += 1
        if moved:
            # a move off a drained node: forgiven at once (counts towards no limit), and
            # paid from the budget like a roll (`_take_down` below)
            if not self._on_cordoned(gang, count - 1):
                self._find(
                    LeftOnDrainedNode,
                    f"gang {gang} moved (restart {count}) without a pod on a cordoned node",
                )
            st.justified[count] = True
            if st.state == SERVING:
                self._whole(f"moving gang {gang}", without=gang)
            self._take_down(gang, st, f"moved (restart {count})")
            st.state, st.since, st.why = STARTING, now, f"moved (restart {count})"
            return
        st.counted += 1
        broke = st.state == BROKEN or (st.state == SERVING and st.recovered_at == now)
        st.justified[count] = broke
        cqs = self.cliqueset()
        if not broke:
            what = (
                f"starting (not available since it was {st.why} at t={st.since}s)"
                if st.state == STARTING
                else f"serving (available since t={st.since}s; it lost no Ready pod to a "
                "world event since)"
            )
            self._find(
                BadRestart,
                f"gang {gang} restarted (restart {count}) while {what}; restarts in this "
                f"incarnation {st.total}, breaks {st.breaks}",
            )
        limit = cqs.spec.failure_policy.max_gang_restarts if cqs is not None else None
        if limit is not None and st.counted > limit:
            self._find(
                BadRestart,
                f"gang {gang} restarted {st.counted} times (counted), maxGangRestarts {limit}",
            )
        self._take_down(gang, st, f"restarted (restart {count})")
        st.state, st.since, st.why = STARTING, now, f"restarted (restart {count})"

    def _ready_pod_deleted(self, pod: Obj) -> None:
        name = meta(pod)["name"]
        clique = self._owner(pod)
        if clique is None:
            return
        index = pod_index(pod)
        previous = annotations_of(clique).get(labels.ANNOTATION_PREVIOUS_HASHES, "").split(",")
        if index >= int(clique["spec"].get("replicas", 1)):
            return  # scale-down
        if template_hash(pod) != template_hash(clique) and template_hash(pod) not in previous:
            return  # a roll
        gang = int(clique["spec"]["gangIndex"])
        have, want = restarts(pod), restarts(clique)
        if have != want:
            st = self.gangs.get(gang)
            if (
                st is not None
                and have < want
                and any(st.justified.get(n, False) for n in range(have + 1, want + 1))
            ):
                return  # the restart of a gang that broke
            self._find(
                ReadyPodDeleted,
                f"deleted Ready pod {name} of gang {gang} for a gang restart (pod records "
                f"restart {have}, its Clique {want}), though the gang did not break",
            )
            return
        self._find(
            ReadyPodDeleted,
            f"deleted Ready pod {name} of gang {gang}: same template, same restart count, "
            "index within replicas",
        )

    def _pod_created(self, pod: Obj) -> None:
        owner = controller_uid(pod)
        if owner is None:
            return
        key = (owner, pod_index(pod))
        self.creates[key] += 1
        allowed = 1 + self.justify[key] + self.justify_all[owner]
        if self.creates[key] > allowed and key not in self._churned:
            self._churned.add(key)
            self._find(
                Churn,
                f"pod {meta(pod)['name']} created {self.creates[key]} times; world events at "
                f"its index ({self.justify[key]}) and rolls, restarts and resizes of its "
                f"Clique ({self.justify_all[owner]}) justify at most {allowed}",
            )
        clique = self._owner(pod)
        if clique is not None:
            self._gang_pod_created(pod, clique)
        if clique is not None and annotations_of(pod).get(labels.ANNOTATION_START_GATE) != "closed":
            self._start_order(pod, clique, "created")

    def _start_order(self, pod: Obj, clique: Obj, act: str) -> None:
        deps: list[str] = list(clique["spec"].get("startsAfter") or ())
        if not deps:
            return
        phase = (meta(clique)["uid"], template_hash(clique), restarts(clique))
        first = self._started.setdefault(phase, self.cluster.round)
        if first != self.cluster.round:
            return  # not the first pods of this epoch: replacements start when they can
        for name in deps:
            dep = self.cluster.get("Clique", name)
            have = 0 if dep is None or terminating(dep) else self.current_ready(dep, lenient=True)
            need = 1 if dep is None else self._need(dep)
            if have < need:
                self._find(
                    StartOrder,
                    f"{act} pod {meta(pod)['name']} (template {phase[1]}, restart {phase[2]}) "
                    f"while {name} has {have}/{need} Ready pods of its current template and "
                    f"restart count ({restarts(dep) if dep is not None else '-'})",
                )

    def _need(self, dep: Obj) -> int:
        """A dependency's minAvailable, as it was at the start of this second."""
        need = self.min_available(dep)
        when, before = self._min_before.get(meta(dep)["uid"], (-1, need))
        return min(need, before) if when == self.cluster.now else need

    def describe(self) -> str:
        """The gangs' states, one line each."""
        return "\n".join(
            f"gang {g}: {s.state} since t={s.since}s ({s.why}); down by operator: "
            f"{s.down or 'no'}; restarts {s.total} (counted {s.counted}), breaks {s.breaks}"
            for g, s in sorted(self.gangs.items())
        )


def _reset_after(cqs: CliqueSet | None) -> float | None:
    """Seconds of availability after which the planners forgive a gang's restarts, if
    they have that notion (`gang_failures.reset_after`)."""
    fn: Any = getattr(gang_failures, "reset_after", None)
    if cqs is None or not callable(fn):
        return None
    return float(fn(cqs.spec.failure_policy))


def _number(value: str | None) -> int:
    """An annotation's count, 0 when absent or not a number."""
    try:
        return int(value or 0)
    except ValueError:
        return 0
