"""The Clique controller wakes the Cliques that start after a Clique when one of its pods
turns Ready, stops being Ready or goes: they judge it by its pods as well as by its status
(`clique_planner.waiting_for`), and its status may read the same before and after. With
no cluster: events handed to the controller's handlers directly."""

from __future__ import annotations

from typing import Any

import msgspec

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.pod import Pod
from cliques.controllers.base.revision import Hasher
from cliques.controllers.clique.controller import CliqueController, gang_key
from cliques.kube import store
from cliques.kube.expectations import Expectations
from cliques.kube.informer import Informer
from cliques.kube.resources import CLIQUES, PODS

from .planner_fixtures import clique
from .planner_fixtures import pod as bare_pod
from .test_controller_forget import Quiet

LEADER, WORKER = "ns/llama-0-leader", "ns/llama-0-worker"


def controller(*cliques: Clique) -> CliqueController:
    client: Any = None
    informer: Informer[Clique] = Informer(
        client, CLIQUES, Clique, indexers={"controller": store.by_controller, "gang": gang_key}
    )
    pods: Informer[Pod] = Informer(client, PODS, Pod, indexers={"controller": store.by_controller})
    for c in cliques:
        informer.store.upsert(c)
    exp = Expectations("clique")
    ctl = CliqueController(informer, pods, Quiet(client, exp, None), exp, Hasher())
    ctl.pod_debounce = 0.0
    return ctl


def pod(c: Clique, index: int, **kw: Any) -> Pod:
    """A pod of `c` as the operator labels it (its CliqueSet's label: one of its buckets)."""
    made = bare_pod(c, index, **kw)
    tags = {**made.metadata.labels, labels.LABEL_CLIQUESET: "llama"}
    return msgspec.structs.replace(
        made, metadata=msgspec.structs.replace(made.metadata, labels=tags)
    )


async def queued(ctl: CliqueController) -> set[str]:
    keys = set()
    while len(ctl.queue):
        key = await ctl.queue.get()
        keys.add(key)
        ctl.queue.done(key)
    return keys


async def test_a_dependencys_pod_lost_or_back_wakes_its_dependents() -> None:
    leader = clique(0, "leader")
    worker = clique(0, "worker", replicas=2, starts_after=["llama-0-leader"])
    ctl = controller(leader, worker)
    ready = pod(leader, 0)
    ctl._on_pod("DELETED", ready, ready)
    assert WORKER in await queued(ctl)
    starting = pod(leader, 0, ready=False)
    ctl._on_pod("MODIFIED", starting, ready)
    assert WORKER in await queued(ctl)
    # a change that leaves its readiness as it was wakes only its own Clique
    ctl._on_pod("MODIFIED", ready, pod(leader, 0, hash_="h2"))
    assert WORKER not in await queued(ctl)


async def test_a_pod_of_a_clique_nothing_starts_after_wakes_no_other() -> None:
    leader = clique(0, "leader")
    worker = clique(0, "worker", replicas=2, starts_after=["llama-0-leader"])
    ctl = controller(leader, worker)
    gone = pod(worker, 0)
    ctl._on_pod("DELETED", gone, gone)
    assert LEADER not in await queued(ctl)
