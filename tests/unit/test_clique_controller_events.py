"""The Clique controller's pod event handler, with no cluster: which pod events wake a
reconcile and which only arm the status hold (the ADDED event of a pod it created itself,
while there is nothing but progress to publish)."""

from __future__ import annotations

from typing import Any

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.pod import Pod
from cliques.controllers.base.executor import Executor
from cliques.controllers.base.revision import Hasher
from cliques.controllers.clique.controller import CliqueController, gang_key
from cliques.kube import store
from cliques.kube.expectations import Expectations
from cliques.kube.informer import Informer
from cliques.kube.resources import CLIQUES, PODS

from .planner_fixtures import clique
from .planner_fixtures import pod as bare_pod

KEY = "ns/llama-0-worker"


def controller(c: Clique, *, hold: float = 10.0) -> CliqueController:
    client: Any = None  # the handlers under test send no request
    cliques: Informer[Clique] = Informer(
        client, CLIQUES, Clique, indexers={"controller": store.by_controller, "gang": gang_key}
    )
    pods: Informer[Pod] = Informer(client, PODS, Pod, indexers={"controller": store.by_controller})
    cliques.store.upsert(c)
    exp = Expectations("clique")
    ctl = CliqueController(
        cliques, pods, Executor(client, exp, None), exp, Hasher(), status_hold=hold
    )
    exp.expect_creates(c.metadata.uid, ["llama-0-worker-0"])
    return ctl


def pod(c: Clique, index: int, *, ready: bool) -> Pod:
    """A pod of Clique `c`, labelled with its CliqueSet like the operator's own pods."""
    p = bare_pod(c, index, ready=ready)
    p.metadata.labels[labels.LABEL_CLIQUESET] = "llama"
    return p


def woken(ctl: CliqueController) -> bool:
    return KEY in ctl.queue._timers or len(ctl.queue) > 0


def fresh() -> Clique:
    c = clique(0, "worker", ready=False)
    c.status = None
    return c


async def test_own_create_seen_arms_the_hold_instead_of_a_reconcile() -> None:
    c = fresh()
    ctl = controller(c)
    ctl._on_pod("ADDED", None, pod(c, 0, ready=False))
    assert not woken(ctl)
    assert KEY in ctl.held, "the held status still gets written when the hold is up"
    assert ctl.expectations.satisfied(c.metadata.uid)
    ctl.held.release(KEY)


async def test_pod_events_that_carry_news_wake_a_reconcile() -> None:
    c = fresh()
    # a pod it did not create (left by an earlier operator, or by someone else)
    ctl = controller(c)
    ctl._on_pod("ADDED", None, pod(c, 1, ready=False))
    assert woken(ctl)
    # a reconcile waited for this create to be seen: it must run again now
    ctl = controller(c)
    ctl._blocked.add(KEY)
    ctl._on_pod("ADDED", None, pod(c, 0, ready=False))
    assert woken(ctl) and KEY not in ctl.held
    # the pod is Ready already
    ctl = controller(c)
    ctl._on_pod("ADDED", None, pod(c, 0, ready=True))
    assert woken(ctl)
    # the Clique's published status says Ready: its pods being replaced is news
    ready = clique(0, "worker", ready=True)
    ctl = controller(ready)
    ctl._on_pod("ADDED", None, pod(ready, 0, ready=False))
    assert woken(ctl)
    # no hold configured
    ctl = controller(c, hold=0.0)
    ctl._on_pod("ADDED", None, pod(c, 0, ready=False))
    assert woken(ctl)


async def test_starting_clique_with_a_current_status_arms_the_hold() -> None:
    c = clique(0, "worker", ready=False)  # Started=True, Ready=False (Starting), current
    ctl = controller(c)
    ctl._on_pod("ADDED", None, pod(c, 0, ready=False))
    assert not woken(ctl) and KEY in ctl.held
    ctl.held.release(KEY)
    # ...but not when its status is for an older template
    stale = clique(0, "worker", ready=False, status_hash="h0")
    ctl = controller(stale)
    ctl._on_pod("ADDED", None, pod(stale, 0, ready=False))
    assert woken(ctl)


class RecordingExecutor:
    """Stands in for the executor: records what a reconcile would send, and plays the
    watch event of each pod it "creates" while the reconcile is still in flight."""

    def __init__(self, ctl: CliqueController, clique_obj: Clique) -> None:
        self.ctl = ctl
        self.clique = clique_obj
        self.created: list[str] = []
        self.statuses: list[Any] = []

    async def execute(self, plan: Any, ref: Any) -> None:
        names = [c.name for c in plan.creates]
        self.ctl.expectations.expect_creates(ref.uid, names)
        for name in names:
            self.created.append(name)
            index = int(name.rsplit("-", 1)[1])
            self.ctl._on_pod("ADDED", None, pod(self.clique, index, ready=False))

    async def write_status(self, *args: Any, **kw: Any) -> None:
        self.statuses.append(args)


async def test_a_reconcile_that_creates_keeps_the_hold_its_pods_armed() -> None:
    # A Starting Clique whose published status is current lost a pod: the reconcile
    # recreates it and has no status of its own to write; the new pod's ADDED event (seen
    # while the reconcile is in flight) armed the hold, which must survive the reconcile,
    # or a pod that never turns Ready would never be published.
    from cliques.controllers.clique import planner as clique_planner
    from cliques.controllers.clique.planner import CliqueSnapshot

    c = clique(0, "worker", replicas=2, ready=False)
    kept = pod(c, 0, ready=False)
    c.status = clique_planner.plan(
        CliqueSnapshot(clique=c, pods=[kept], template_hash="h1", now="2026-11-22T08:00:00Z")
    ).status
    ctl = controller(c)
    ctl.expectations.forget(c.metadata.uid)
    ctl.pods.store.upsert(kept)
    ctl.cliques.store.upsert(c)
    ex = RecordingExecutor(ctl, c)
    ctl.runner.executor = ex  # type: ignore[assignment]
    await ctl.reconcile(KEY)
    assert ex.created == ["llama-0-worker-1"] and ex.statuses == []
    assert KEY in ctl.held, "the hold armed by the new pod's event was dropped"
    ctl.held.release(KEY)


class Recording:
    """A client that records the patches it is sent."""

    def __init__(self) -> None:
        self.patches: list[tuple[str, Any]] = []

    async def patch(self, resource: Any, ns: str, name: str, patch: Any, *a: Any, **kw: Any) -> Any:
        self.patches.append((name, patch))
        return b"{}"


async def test_a_release_is_for_the_pod_and_clique_seen_never_another_of_the_name() -> None:
    """A pod going with its deleted Clique is queued for release with both UIDs; when the
    release runs, the cache holds another pod of that name (made by someone else since):
    it is not released. The pod seen is."""
    from cliques.controllers.clique.controller import RELEASE, parse_release_key
    from cliques.controllers.features import kueue

    c = clique(0, "worker", ready=False)
    client = Recording()
    ctl = controller(c)
    ctl.runner.executor = Executor(client, ctl.expectations, None)  # type: ignore[arg-type]
    ctl.cliques.store.remove(KEY)  # the Clique is gone: a cascading deletion

    def going(uid: str, owner: str) -> Pod:
        p = pod(c, 0, ready=False)
        p.metadata.uid = uid
        p.metadata.deletion_timestamp = "2026-11-22T08:00:00Z"
        p.metadata.finalizers = [kueue.FINALIZER]
        p.metadata.owner_references[0].uid = owner
        return p

    mine = going("pod-uid-0", c.metadata.uid)
    ctl.pods.store.upsert(mine)
    ctl._on_pod("MODIFIED", None, mine)
    key = await ctl.queue.get()
    assert key.startswith(RELEASE)
    assert parse_release_key(key.removeprefix(RELEASE)) == (
        "ns/llama-0-worker-0",
        "pod-uid-0",
        c.metadata.uid,
    )
    # someone else's pod of the same name, owned by an object of kind Clique of the name
    ctl.pods.store.upsert(going("someone-elses", "another-clique"))
    await ctl.reconcile(key)
    assert client.patches == []
    ctl.pods.store.upsert(mine)
    await ctl.reconcile(key)
    ((name, patch),) = client.patches
    assert name == "llama-0-worker-0"
    assert patch[0] == {"op": "test", "path": "/metadata/uid", "value": "pod-uid-0"}
