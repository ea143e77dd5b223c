"""A CliqueSet the API server stores but whose Cliques would store more than 256 MiB of pod
templates, counted per instance of its scaling group (CEL cannot measure a template), is an
InvalidSpec of the running operator: Degraded with the numbers, a Warning Event, and not one
Clique, CliqueScalingGroup or Service made. The same set at the limit is planned
(tests/integration/test_counted_bounds.py)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from cliques.api import labels
from cliques.kube.resources import EVENTS, SCALING_GROUPS, SERVICES
from tests.support import set_shapes
from tests.support.harness import Cluster, cliqueset, running_operator, wait_for
from tests.support.kubectl import Kubectl

pytestmark = pytest.mark.cluster


async def test_a_set_one_byte_a_gang_past_the_template_bound_makes_nothing(
    cluster: Cluster, crds: str
) -> None:
    body = set_shapes.template_bytes(past=True)  # 2 gangs x (2**27 + 1) bytes
    kubectl = Kubectl(crds)
    async with running_operator(crds, cluster.namespace):
        # through kubectl (1.35 MB: the operator's client would send it in one piece), off
        # the event loop the operator runs in
        await asyncio.to_thread(
            kubectl.ok, "create", "-n", cluster.namespace, "-f", "-", stdin=json.dumps(body)
        )

        async def invalid() -> Any:
            c = await cluster.condition("big", "Degraded")
            return c if c is not None and c.reason == "InvalidSpec" else None

        cond = await wait_for(invalid, timeout=30, what="Degraded/InvalidSpec")
        assert cond.message.startswith(
            "the Cliques of this CliqueSet would store 268,435,458 bytes of pod templates "
            "(2 gangs x 134,217,729 bytes per gang"
        ), cond.message

        async def event() -> bool:
            raw = await cluster.client.list_page(EVENTS, cluster.namespace)
            return b'"reason":"InvalidSpec"' in raw

        await wait_for(event, timeout=30, what="an InvalidSpec Event")
        # the operator serves another set meanwhile; by then the big one had its chances
        await cluster.apply(cliqueset(name="fine", replicas=1))
        await cluster.wait_available("fine")
        owned = [
            c
            for c in await cluster.cliques()
            if c.metadata.labels.get(labels.LABEL_CLIQUESET) == "big"
        ]
        assert owned == []
        groups = await cluster.client.list_page(SCALING_GROUPS, cluster.namespace)
        assert b'"name":"big-' not in groups
        services = await cluster.client.list_page(SERVICES, cluster.namespace)
        assert b'"name":"big"' not in services
