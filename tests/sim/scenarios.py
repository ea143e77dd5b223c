"""Scenarios: a CliqueSet, a cluster and a timeline of world events and user edits.

A `Scenario` is plain data (its repr can be pasted back to replay it). `cliqueset_body`
gives the CliqueSet the user creates at t=0; `Event`s happen at given seconds:

    crash / evict / unready   a running pod (by name, or the n-th running pod by name)
                              exits Failed / is evicted / fails its readiness probe for
                              `value` seconds
    node-loss / node-add      a node (by index among the nodes, by name) goes away (its
                              Node deleted, its pods with it) / a node of capacity `value`
                              joins
    node-down / node-up       a node's kubelet stops reporting (a lost node: tainted
                              unreachable, its pods marked not Ready, nothing on it
                              changes, its deleted pods stay terminating) / reports again
    out-of-service            an administrator taints a node out-of-service (KEP-2268):
                              its pods are deleted, its terminating pods go at once
    cordon / drain            a node (as for node-loss) is cordoned / drained: cordoned,
                              and its pods evicted as the Eviction API lets them (a pod of
                              a set with its PodDisruptionBudget only when not Ready)
    fill / free               other workloads take / give back `value` pod slots of a node
    resize                    the user sets clique `target`'s replicas to `value`
    image                     the user changes the image of clique `target` ("*": all)
    gangs                     the user sets the gang count to `value`
    max-unavailable           the user sets updateStrategy.maxUnavailable to `value`
    max-surge                 the user sets updateStrategy.maxSurge to `value`
    partition                 the user sets updateStrategy.partition to `value`
    operator-restart          the operator restarts (everything in memory is lost)

The regression scenarios reproduce the cases found by hand and those the simulator found
(docs/simulator.md);
`scenarios()` is the hypothesis strategy of random ones with failurePolicy RecreateGang,
slow, pending and failing pods.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import strategies as st

#: World events aimed at a node (by index among the nodes, or by name).
NODE_EVENTS = frozenset(
    {"node-loss", "node-down", "node-up", "out-of-service", "fill", "free", "cordon", "drain"}
)
WORLD = NODE_EVENTS | {"crash", "evict", "unready", "node-add"}
USER = frozenset({"resize", "image", "gangs", "max-unavailable", "max-surge", "partition"})
KINDS = WORLD | USER | {"operator-restart"}
#: The scheduling.k8s.io versions a cluster may serve gang scheduling in (1.35, 1.36, 1.37).
GANG_APIS = ("v1alpha1", "v1alpha2", "v1beta1")


@dataclass(frozen=True)
class Latency:
    """Seconds from a pod's start (bound, start gate open) to Ready: `fixed` (low),
    `uniform` (low..high), or `pulls` (low, and `high` for one pod in `every`: a slow
    image pull)."""

    kind: str = "fixed"
    low: int = 10
    high: int = 10
    every: int = 4

    def draw(self, rng: random.Random) -> int:
        if self.kind == "uniform":
            return rng.randint(self.low, max(self.low, self.high))
        if self.kind == "pulls":
            return self.high if rng.randrange(max(1, self.every)) == 0 else self.low
        return self.low

    def __str__(self) -> str:
        if self.kind == "uniform":
            return f"{self.low}..{self.high}s"
        if self.kind == "pulls":
            return f"{self.low}s, 1 in {self.every} {self.high}s"
        return f"{self.low}s"


@dataclass(frozen=True)
class Policy:
    """`spec.failurePolicy`."""

    restart_policy: str = "RecreateGang"
    breach: int = 30
    max_restarts: int = 5
    initial: int = 10
    max_backoff: int = 300

    def body(self) -> dict[str, Any]:
        return {
            "restartPolicy": self.restart_policy,
            "minAvailableBreachedSeconds": self.breach,
            "maxGangRestarts": self.max_restarts,
            "restartBackoff": {"initialSeconds": self.initial, "maxSeconds": self.max_backoff},
        }


@dataclass(frozen=True)
class Event:
    at: int
    kind: str
    target: int | str = 0
    value: int = 0

    def __str__(self) -> str:
        args = {
            "crash": f"pod {self.target}",
            "evict": f"pod {self.target}",
            "unready": f"pod {self.target} for {self.value}s",
            "node-loss": f"node {self.target}",
            "node-down": f"node {self.target}",
            "node-up": f"node {self.target}",
            "out-of-service": f"node {self.target}",
            "cordon": f"node {self.target}",
            "drain": f"node {self.target}",
            "node-add": f"capacity {self.value}",
            "fill": f"node {self.target} by {self.value}",
            "free": f"node {self.target} by {self.value}",
            "resize": f"{self.target} to {self.value}",
            "image": f"of {self.target}",
            "gangs": f"to {self.value}",
            "max-unavailable": f"to {self.value}",
            "max-surge": f"to {self.value}",
            "partition": f"to {self.value}",
        }.get(self.kind, "")
        return f"t={self.at}s {self.kind} {args}".rstrip()


@dataclass(frozen=True)
class Scenario:
    gangs: int = 2
    roles: tuple[tuple[str, int], ...] = (("leader", 1), ("worker", 2))
    startup: str = "InOrder"
    strategy: str = "RollingUpdate"
    max_unavailable: int = 1
    #: updateStrategy.maxSurge (0: none, left out of the CliqueSet)
    max_surge: int = 0
    policy: Policy | None = field(default_factory=Policy)
    #: node capacities, in pods
    nodes: tuple[int, ...] = (8, 8)
    #: pod slots of each node other workloads use from the start
    used: tuple[int, ...] = ()
    latency: Latency = field(default_factory=Latency)
    #: seconds a running pod takes to terminate
    grace: int = 5
    #: the cluster serves the Workload API (gangs are scheduled whole, start gates)
    gang_scheduling: bool = False
    #: the scheduling.k8s.io version the cluster serves with gang scheduling: v1alpha1
    #: (1.35: a Workload's pod group replica per gang), v1alpha2 (1.36) or v1beta1 (1.37: a
    #: PodGroup per gang)
    gang_api: str = "v1alpha1"
    template_labels: tuple[tuple[str, str], ...] = ()
    template_annotations: tuple[tuple[str, str], ...] = ()
    events: tuple[Event, ...] = ()
    #: reconcile the queued keys of each round in a random order, and deliver watch events
    #: one round late (see `SimOperator`)
    interleave: bool = False
    lag: bool = False
    #: the operator moves gangs off drained nodes (it may list Nodes and budgets)
    drains: bool = False
    #: spec.nodeDrain.lostNodeSeconds (60, the default, is left out of the CliqueSet)
    lost_node_seconds: int = 60
    #: seconds simulated after the last event
    settle: int = 1500
    seed: int = 0

    @property
    def end(self) -> int:
        return max((e.at for e in self.events), default=0) + self.settle

    def describe(self) -> str:
        roles = " + ".join(f"{r} {n}" for r, n in self.roles)
        policy = (
            "failurePolicy None"
            if self.policy is None
            else f"{self.policy.restart_policy} breach {self.policy.breach}s, max "
            f"{self.policy.max_restarts} restarts, backoff {self.policy.initial}..."
            f"{self.policy.max_backoff}s"
        )
        lines = [
            f"{self.gangs} gang(s) of {roles}, {self.startup}, {self.strategy} maxUnavailable "
            f"{self.max_unavailable}"
            + (f" maxSurge {self.max_surge}" if self.max_surge else "")
            + f", {policy}",
            f"nodes {list(self.nodes)}"
            + (f" (used by others {list(self.used)})" if any(self.used) else "")
            + f", start latency {self.latency}, grace {self.grace}s, "
            f"gang scheduling {self.gang_api if self.gang_scheduling else 'off'}, "
            f"{'interleaved reconciles, ' if self.interleave else ''}"
            f"{'watch lag, ' if self.lag else ''}seed {self.seed}",
        ]
        if self.template_labels or self.template_annotations:
            lines.append(
                f"template labels {dict(self.template_labels)}, annotations "
                f"{dict(self.template_annotations)}"
            )
        lines += [f"  {e}" for e in self.events]
        return "\n".join(lines)


def pod_template(s: Scenario, image: str) -> dict[str, Any]:
    tmeta: dict[str, Any] = {"labels": {"app": "llama", **dict(s.template_labels)}}
    if s.template_annotations:
        tmeta["annotations"] = dict(s.template_annotations)
    return {"metadata": tmeta, "spec": {"containers": [{"name": "main", "image": image}]}}


def cliqueset_body(s: Scenario) -> dict[str, Any]:
    """The CliqueSet `llama` the user creates."""
    spec: dict[str, Any] = {
        "replicas": s.gangs,
        "startupType": s.startup,
        "updateStrategy": {"type": s.strategy, "maxUnavailable": s.max_unavailable},
        "gangScheduling": {"backend": "Auto"},
        "template": {
            "cliques": [
                {"name": role, "replicas": n, "template": pod_template(s, "vllm:1")}
                for role, n in s.roles
            ]
        },
    }
    if s.max_surge:
        spec["updateStrategy"]["maxSurge"] = s.max_surge
    if s.policy is not None:
        spec["failurePolicy"] = s.policy.body()
    if s.lost_node_seconds != 60:
        spec["nodeDrain"] = {"lostNodeSeconds": s.lost_node_seconds}
    return {
        "apiVersion": "cliques.dev/v1alpha1",
        "kind": "CliqueSet",
        "metadata": {"name": "llama", "namespace": "ns"},
        "spec": spec,
    }


# ---- the cases found by hand ----------------------------------------------------------------


def resize_with_nodes_full() -> Scenario:
    """3 gangs of leader 1 + worker 2 on nodes with room for exactly their 9 pods (a
    fourth node is full of other workloads); at t=600 worker goes to 3 (the 3 new pods
    cannot be scheduled); at t=1500 the fourth node is freed."""
    return Scenario(
        gangs=3,
        startup="AnyOrder",
        nodes=(3, 3, 3, 3),
        used=(0, 0, 0, 3),
        latency=Latency("fixed", 10),
        events=(Event(600, "resize", "worker", 3), Event(1500, "free", 3, 3)),
        settle=900,
    )


def one_crash_slow_start() -> Scenario:
    """One gang whose pods take 200 s to be Ready; at t=900 one worker crashes."""
    return Scenario(
        gangs=1,
        startup="AnyOrder",
        latency=Latency("fixed", 200),
        events=(Event(900, "crash", "llama-0-worker-1"),),
        settle=2400,
    )


def start_order_after_restart(*, gang_scheduling: bool = False) -> Scenario:
    """InOrder; the leader crashes and its replacement takes longer than the breach
    window and the backoff: the gang is restarted and must start leader first again."""
    return Scenario(
        gangs=1,
        startup="InOrder",
        policy=Policy(breach=10, initial=5, max_backoff=20),
        latency=Latency("fixed", 60),
        gang_scheduling=gang_scheduling,
        events=(Event(600, "crash", "llama-0-leader-0"),),
        settle=1200,
    )


def reserved_keys_in_template() -> Scenario:
    """A pod template carrying the operator's own keys (a CliqueSet stored before the
    CRD refused them)."""
    return Scenario(
        gangs=1,
        template_labels=(("cliques.dev/gang-index", "7"),),
        template_annotations=(
            ("cliques.dev/gang-restarts", "2"),
            ("cliques.dev/start-gate", "closed"),
        ),
        latency=Latency("fixed", 20),
        settle=900,
    )


# ---- found by the simulator ----------------------------------------------------------------


def crash_while_starting() -> Scenario:
    """InOrder, pods Ready 100 s after they start: the leader is Ready at t=100, the
    workers start then; the leader crashes at t=150, before the gang was ever available."""
    return Scenario(
        gangs=1,
        startup="InOrder",
        latency=Latency("fixed", 100),
        events=(Event(150, "crash", "llama-0-leader-0"),),
        settle=900,
    )


def roll_waiting_for_terminating_pods() -> Scenario:
    """InOrder, pods terminate in 30 s: the workers roll at t=300 (their old pods hold
    the names until t=330); the leader fails its readiness probe from t=310 to t=370."""
    return Scenario(
        gangs=1,
        startup="InOrder",
        policy=None,
        grace=30,
        latency=Latency("fixed", 10),
        events=(Event(300, "image", "worker"), Event(310, "unready", "llama-0-leader-0", 60)),
        settle=600,
    )


def roll_after_restart_on_full_nodes() -> Scenario:
    """2 gangs of leader 1 + worker 1 on a node for their 4 pods, maxUnavailable 1: at
    t=300 worker goes to 2 (both new pods wait for room: both gangs Resizing); at t=400
    gang 1's worker crashes and the gang is restarted (t=440); at t=450 a new image; at
    t=600 a node joins with room for 4 more pods."""
    return Scenario(
        gangs=2,
        roles=(("leader", 1), ("worker", 1)),
        startup="AnyOrder",
        nodes=(4,),
        latency=Latency("fixed", 100),
        events=(
            Event(300, "resize", "worker", 2),
            Event(400, "crash", "llama-1-worker-0"),
            Event(450, "image", "*"),
            Event(600, "node-add", value=4),
        ),
        settle=1500,
    )


def new_image_during_a_roll_and_a_resize() -> Scenario:
    """2 gangs of leader 1 + worker 1 on a node for their 4 pods, maxUnavailable 1, no
    failure policy, pods Ready 100 s after they start: a new image at t=300 rolls gang 0,
    then gang 1 (t=405); at t=450 leader goes to 2 (the new pods wait for room: gang 0 is
    Resizing, still serving); at t=460 another image, while gang 1 is still down; at t=700
    a node joins."""
    return Scenario(
        gangs=2,
        roles=(("leader", 1), ("worker", 1)),
        startup="AnyOrder",
        policy=None,
        nodes=(4,),
        latency=Latency("fixed", 100),
        events=(
            Event(300, "image", "*"),
            Event(450, "resize", "leader", 2),
            Event(460, "image", "*"),
            Event(700, "node-add", value=4),
        ),
        settle=1500,
    )


def dependency_lost_during_a_roll() -> Scenario:
    """Found by `python -m tests.sim --examples 5000 --seed 7`: 3 gangs of leader 1 +
    worker 2, InOrder, RecreateGang, maxUnavailable 0. At t=937 a new worker image rolls
    gang 0's workers; at t=938 the node of gang 0's leader (and of gang 1) is lost. The
    workers' new pods must wait for the leader made again, though the leader Clique's
    status still says Ready in that instant (its own reconcile has not written the loss)."""
    return Scenario(
        gangs=3,
        roles=(("leader", 1), ("worker", 2)),
        startup="InOrder",
        max_unavailable=0,
        policy=Policy(breach=0, max_restarts=1, initial=0, max_backoff=0),
        nodes=(5, 5, 1),
        latency=Latency("fixed", 1, 10, every=4),
        grace=30,
        events=(
            Event(1, "image", "leader"),
            Event(322, "node-loss", 2, 1),
            Event(323, "crash", 0, 5),
            Event(626, "node-loss", 5, 1),
            Event(937, "image", "worker"),
            Event(938, "node-loss", 0, 1),
            Event(939, "node-add", 0, 1),
            Event(940, "gangs", 0, 1),
        ),
        settle=1200,
    )


def gate_opened_as_its_dependency_crashes() -> Scenario:
    """Found by `python -m tests.sim --examples 5000 --seed 2026`: 1 gang of leader 1 +
    worker 1 with gang scheduling (start order kept by start gates), InOrder. At t=1 a new
    worker image rolls the worker; at t=2 the leader crashes. The worker's new pod, made
    behind a closed gate, must keep it closed until the leader is Ready again: a pod that
    waits at its gate has not started, so the Clique has not started for its template."""
    return Scenario(
        gangs=1,
        roles=(("leader", 1), ("worker", 1)),
        startup="InOrder",
        max_unavailable=0,
        policy=Policy(breach=0, max_restarts=1, initial=0, max_backoff=0),
        nodes=(1, 1, 1),
        latency=Latency("fixed", 1, 10, every=4),
        grace=1,
        gang_scheduling=True,
        events=(Event(1, "image", "worker"), Event(2, "crash", 0, 5)),
        settle=1200,
    )


def roll_with_surge(max_unavailable: int = 0, latency: int = 60) -> Scenario:
    """4 gangs of leader 1 + worker 1 on nodes with room for 10 pods (one gang more),
    maxSurge 1, pods Ready `latency` seconds after they start: a new image at t=300 rolls
    the set through surge gang 4."""
    return Scenario(
        gangs=4,
        roles=(("leader", 1), ("worker", 1)),
        startup="AnyOrder",
        max_unavailable=max_unavailable,
        max_surge=1,
        nodes=(2, 2, 2, 2, 2),
        latency=Latency("fixed", latency),
        events=(Event(300, "image", "*"),),
        settle=1500,
    )


def drain_a_node(
    max_unavailable: int = 1, max_surge: int = 0, latency: int = 60, drained: int = 2
) -> Scenario:
    """4 gangs of leader 1 + worker 1 on nodes with room for 3, 3, 3, 3 and 2 pods (the
    scheduler fills them in order, so node 0 holds gang 0 and the leader of gang 1), pods
    Ready `latency` seconds after they start, gang-aware drain on: node 0 is drained at
    t=300 (cordoned, its pods evicted as the set's PodDisruptionBudget lets them), and
    with `drained` 2 node 1 at t=900. Every gang with a pod there moves whole, within the
    budget: with maxUnavailable 1 gang 1 waits until gang 0 is whole again."""
    return Scenario(
        gangs=4,
        roles=(("leader", 1), ("worker", 1)),
        startup="AnyOrder",
        max_unavailable=max_unavailable,
        max_surge=max_surge,
        policy=None,
        nodes=(3, 3, 3, 3, 2),
        latency=Latency("fixed", latency),
        drains=True,
        events=tuple(Event(300 + 600 * i, "drain", i) for i in range(drained)),
        settle=1500,
    )


def lose_a_node(
    *,
    max_unavailable: int = 1,
    out_of_service: int | None = None,
    back: int | None = None,
    deleted: int | None = None,
    policy: Policy | None = None,
) -> Scenario:
    """4 gangs of leader 1 + worker 1 on nodes with room for 3, 3, 3, 3 and 2 pods (node 0
    holds gang 0 and the leader of gang 1), pods Ready 60 s after they start, gang-aware
    drain on, no failure policy unless `policy`: node 0's kubelet stops at t=300 (tainted
    unreachable, its pods marked not Ready). Once the taint is 60 s old the gangs with a pod
    there move whole, within the budget; their pods there stay terminating, holding their
    names, until the node is tainted out-of-service (at `out_of_service` seconds after the
    loss), comes back (`back`) or its Node is deleted (`deleted`); without any of them the
    taint manager deletes them at 600 s, and they stay terminating for good."""
    events = [Event(300, "node-down", 0)]
    for after, kind in (
        (out_of_service, "out-of-service"),
        (back, "node-up"),
        (deleted, "node-loss"),
    ):
        if after is not None:
            events.append(Event(300 + after, kind, "node-0"))
    return Scenario(
        gangs=4,
        roles=(("leader", 1), ("worker", 1)),
        startup="AnyOrder",
        max_unavailable=max_unavailable,
        policy=policy,
        nodes=(3, 3, 3, 3, 2),
        latency=Latency("fixed", 60),
        drains=True,
        events=tuple(events),
        settle=1200,
    )


def surge_gangs_broken_while_standing_in() -> Scenario:
    """Found by the random scenarios: 3 gangs of leader 1 + worker 3, maxUnavailable 1,
    maxSurge 2, on nodes with room for 13 pods. The new image at t=449 makes the two surge
    gangs, which come up and stand in while gangs 1 and 2 roll; the rolled gangs then find
    no room. At t=745 a node loss breaks both surge gangs: they stand in for nothing any
    more, so gangs 1 and 2 already take the whole budget, and the broken surge gang must
    wait for its restart (a restart is a disruption the operator causes)."""
    return Scenario(
        gangs=3,
        roles=(("leader", 1), ("worker", 3)),
        startup="InOrder",
        max_unavailable=1,
        max_surge=2,
        policy=Policy(breach=0, max_restarts=4, initial=0, max_backoff=0),
        nodes=(5, 5, 3),
        latency=Latency("fixed", 1),
        grace=0,
        gang_scheduling=True,
        events=(
            Event(181, "crash", 0, 299),
            Event(449, "image", "*"),
            Event(745, "node-loss", 0, 1),
            Event(903, "node-loss", 0, 4),
            Event(1205, "node-loss", 0, 1),
            Event(1509, "max-unavailable", value=0),
            Event(1510, "operator-restart"),
        ),
        settle=1200,
    )


def scale_down_of_a_starting_gang_under_watch_lag() -> Scenario:
    """Found by `python -m tests.sim --examples 5000 --seed 2026`: 3 gangs of leader 1 +
    worker 3, AnyOrder, RecreateGang, watch events one round late. Gang 0 has never been
    available (a worker crashed and is starting again) when its workers are resized to 1
    at t=6s: the scale-down deletes its Ready worker-2 and keeps worker-0, not Ready yet.
    The Clique must not report Ready from a cache that still shows the deleted pod (the
    CliqueSet would take the gang for available, then for broken, and restart it)."""
    return Scenario(
        gangs=3,
        roles=(("leader", 1), ("worker", 3)),
        startup="AnyOrder",
        max_unavailable=0,
        policy=Policy(breach=0, max_restarts=1, initial=0, max_backoff=0),
        nodes=(1,) * 10,
        latency=Latency("fixed", 3, 10, every=4),
        grace=0,
        lag=True,
        events=(
            Event(1, "node-loss", 1, 1),
            Event(2, "crash", 5, 5),
            Event(3, "crash", 1, 5),
            Event(4, "node-add", 0, 1),
            Event(5, "node-add", 0, 1),
            Event(6, "resize", "worker", 1),
            Event(7, "crash", 0, 5),
        ),
        settle=1200,
    )


# ---- hypothesis -----------------------------------------------------------------------------

_POD_EVENTS = st.sampled_from(["crash", "crash", "crash", "evict", "unready"])


@st.composite
def _event(draw: st.DrawFn, roles: tuple[str, ...]) -> Event:
    kind = draw(
        st.sampled_from(
            [
                "pod",
                "pod",
                "pod",
                "pod",
                "node-loss",
                "node-add",
                "fill",
                "free",
                "cordon",
                "drain",
                "node-down",
                "node-up",
                "out-of-service",
                "resize",
                "image",
                "image",
                "gangs",
                "max-unavailable",
                "max-surge",
                "partition",
                "operator-restart",
            ]
        )
    )
    if kind == "pod":
        kind = draw(_POD_EVENTS)
        return Event(0, kind, draw(st.integers(0, 30)), draw(st.integers(5, 300)))
    if kind in NODE_EVENTS:
        return Event(0, kind, draw(st.integers(0, 5)), draw(st.integers(1, 4)))
    if kind == "node-add":
        return Event(0, kind, value=draw(st.integers(1, 8)))
    if kind == "resize":
        return Event(0, kind, draw(st.sampled_from(roles)), draw(st.integers(1, 4)))
    if kind == "image":
        return Event(0, kind, draw(st.sampled_from([*roles, "*"])))
    if kind == "gangs":
        return Event(0, kind, value=draw(st.integers(1, 4)))
    if kind in ("max-unavailable", "max-surge"):
        return Event(0, kind, value=draw(st.integers(0, 2)))
    if kind == "partition":
        return Event(0, kind, value=draw(st.integers(0, 4)))
    return Event(0, kind)


LATENCIES = st.one_of(
    st.builds(Latency, st.just("fixed"), st.integers(1, 300)),
    st.builds(
        lambda lo, span: Latency("uniform", lo, lo + span),
        st.integers(1, 120),
        st.integers(0, 180),
    ),
    st.builds(
        lambda lo, hi, every: Latency("pulls", lo, hi, every),
        st.integers(1, 30),
        st.integers(60, 300),
        st.integers(2, 6),
    ),
)


@st.composite
def scenarios(draw: st.DrawFn, *, max_events: int = 8) -> Scenario:
    """Random scenarios with failurePolicy RecreateGang: 1-3 gangs of a leader and 1-3
    workers, maxSurge 0-2, nodes with room to spare, exactly enough or too little, start
    latencies of 1-300 s, crashes, evictions, readiness failures, node changes (lost nodes
    among them: down, back, out of service), user edits and operator restarts."""
    gangs = draw(st.integers(1, 3))
    workers = draw(st.integers(1, 3))
    roles = (("leader", 1), ("worker", workers))
    need = gangs * (1 + workers)
    room = draw(st.sampled_from(["spare", "spare", "exact", "short"]))
    total = {"spare": need + draw(st.integers(1, 6)), "exact": need, "short": max(1, need - 2)}[
        room
    ]
    per_node = draw(st.integers(1, 6))
    nodes = tuple(
        [per_node] * (total // per_node) + ([total % per_node] if total % per_node else [])
    )
    initial = draw(st.sampled_from([0, 1, 10, 20]))
    policy = Policy(
        breach=draw(st.sampled_from([0, 5, 10, 30, 60])),
        max_restarts=draw(st.integers(1, 4)),
        initial=initial,
        max_backoff=initial + draw(st.sampled_from([0, 10, 60, 120])),
    )
    at = draw(st.integers(1, 600))
    events: list[Event] = []
    for ev in draw(st.lists(_event(tuple(r for r, _ in roles)), max_size=max_events)):
        events.append(replace(ev, at=at))
        at += draw(st.integers(1, 400))
    return Scenario(
        gangs=gangs,
        roles=roles,
        startup=draw(st.sampled_from(["InOrder", "InOrder", "AnyOrder"])),
        strategy=draw(
            st.sampled_from(["RollingUpdate", "RollingUpdate", "RollingUpdate", "Recreate"])
        ),
        max_unavailable=draw(st.integers(0, 2)),
        max_surge=draw(st.sampled_from([0, 0, 1, 2])),
        policy=policy,
        nodes=nodes,
        latency=draw(LATENCIES),
        grace=draw(st.sampled_from([0, 1, 5, 30])),
        gang_scheduling=draw(st.sampled_from([False, False, False, True])),
        gang_api=draw(st.sampled_from(GANG_APIS)),
        drains=draw(st.booleans()),
        interleave=draw(st.booleans()),
        lag=draw(st.booleans()),
        events=tuple(events),
        settle=1200,
        seed=draw(st.integers(0, 2**16)),
    )
