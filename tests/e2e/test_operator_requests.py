"""What the operator sends, counted at its own client, on the real local control plane: a
replacing roll deletes each replaced pod once and draws no conflict, and an operator whose
sets are Available and whose statuses are written sends nothing at all."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from cliques.kube.client import KubeClient
from cliques.kube.kubeconfig import load
from tests.support.harness import Cluster, cliqueset, running_operator, wait_for

pytestmark = pytest.mark.cluster

GANGS = 4
#: a leader and one worker per gang
PODS = GANGS * 2
#: how long an idle operator is watched for a request
IDLE_WINDOW = 10.0


class CountingClient(KubeClient):
    """The operator's client, counting every answered request (watches apart) by verb,
    resource and status code."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.sent: Counter[tuple[str, str, int]] = Counter()

    def _observe(self, verb: str, plural: str, status: int, seconds: float) -> None:
        super()._observe(verb, plural, status, seconds)
        self.sent[(verb, plural, status)] += 1


async def settled(cluster: Cluster, image: str) -> bool:
    """Every pod Ready on `image`, and every status written that says so: the set's (its
    generation observed, every gang updated, ready and available, the roll complete) and
    each Clique's."""
    pods = [p for p in await cluster.pods() if p.metadata.deletion_timestamp is None]
    if len(pods) != PODS or not all(
        p.is_ready and p.spec.containers[0].image == image for p in pods
    ):
        return False
    cqs = await cluster.cliqueset("llama")
    st = cqs.status
    if st is None or st.observed_generation != cqs.metadata.generation:
        return False
    if not (st.updated_replicas == st.ready_replicas == st.available_replicas == GANGS):
        return False
    conditions = {c.type: c.status for c in st.conditions}
    if conditions.get("Available") != "True" or conditions.get("Progressing") != "False":
        return False
    cliques = await cluster.cliques()
    return len(cliques) == PODS and all(
        c.status is not None
        and c.status.ready_replicas == c.spec.replicas
        and c.status.updated_replicas == c.spec.replicas
        and c.status.observed_generation == c.metadata.generation
        for c in cliques
    )


async def test_a_replacing_roll_deletes_each_pod_once_and_an_idle_operator_sends_nothing(
    cluster: Cluster, crds: str
) -> None:
    client = CountingClient(await load(crds), qps=0)
    try:
        async with running_operator(crds, cluster.namespace, client=client):
            await cluster.apply(cliqueset(replicas=GANGS, workers=1, max_unavailable=1))
            await cluster.wait_available("llama")
            before = {p.metadata.name: p.metadata.uid for p in await cluster.pods()}
            client.sent.clear()
            await cluster.apply(
                cliqueset(replicas=GANGS, workers=1, max_unavailable=1, image="busybox:1.37")
            )
            await wait_for(
                lambda: settled(cluster, "busybox:1.37"), timeout=180, what="the roll settled"
            )
            rolled = client.sent.copy()
            client.sent.clear()
            await asyncio.sleep(IDLE_WINDOW)  # the window the idle operator is watched over
            idle = client.sent.copy()
        after = {p.metadata.name: p.metadata.uid for p in await cluster.pods()}
    finally:
        await client.close()

    assert set(after) == set(before) and all(after[n] != before[n] for n in before)
    deletes = {(r, code): n for (v, r, code), n in rolled.items() if v == "delete"}
    assert deletes.get(("pods", 200)) == PODS, f"one DELETE per replaced pod: {deletes}"
    assert sum(deletes.values()) <= PODS + GANGS, f"at most one more per gang: {deletes}"
    conflicts = {k: n for k, n in rolled.items() if k[2] == 409}
    assert conflicts == {}, f"the roll drew conflicts: {conflicts}"
    assert idle == Counter(), f"an idle operator sent requests in {IDLE_WINDOW:.0f} s: {idle}"
