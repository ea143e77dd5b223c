"""A CliqueSet the API server stores but whose Cliques would store more than 256 MiB of pod
templates, counted per instance of its scaling group (CEL cannot measure a template), is an
InvalidSpec of the running operator: Degraded with the numbers, a Warning Event, and not one
Clique, CliqueScalingGroup or Service made. The same set at the limit is planned
(tests/integration/test_counted_bounds.py). So is a group that `kubectl scale` takes past
the pods of a gang: no instance is made until it is scaled back."""

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


async def test_a_group_scaled_by_hand_past_the_gang_bound_makes_nothing_more(
    cluster: Cluster, crds: str
) -> None:
    """A gang of a 1-pod clique and a group of one instance of 50 pods; `kubectl scale` of
    its CliqueScalingGroup to 100 instances asks for 5,001 pods: the CRD of the group takes
    it, the operator makes no instance and says why, and a scale back resumes."""
    body = set_shapes.manifest(
        1,
        [set_shapes.clique("one", 1), set_shapes.clique("p", 50)],
        [set_shapes.group("g", ["p"], replicas=1)],
    )
    kubectl = Kubectl(crds)
    async with running_operator(crds, cluster.namespace):
        await cluster.apply(body)

        async def made() -> list[str]:
            names = sorted(c.metadata.name for c in await cluster.cliques())
            return names if names == ["big-0-one", "big-0-p-0"] else []

        await wait_for(made, timeout=60, what="the gang's 2 Cliques")

        async def group() -> bool:
            raw = await cluster.client.list_page(SCALING_GROUPS, cluster.namespace)
            return b'"name":"big-0-g"' in raw

        await wait_for(group, timeout=30, what="the CliqueScalingGroup")
        scale = ("scale", "-n", cluster.namespace, "cqsg/big-0-g")
        await asyncio.to_thread(kubectl.ok, *scale, "--replicas=100")

        async def invalid() -> Any:
            c = await cluster.condition("big", "Degraded")
            return c if c is not None and c.reason == "InvalidSpec" else None

        cond = await wait_for(invalid, timeout=30, what="Degraded/InvalidSpec")
        assert "gang 0 would have 5,001 pods, more than the 5,000" in cond.message, cond.message
        assert await made(), "an instance was made past the bound"
        await asyncio.to_thread(kubectl.ok, *scale, "--replicas=2")

        async def resumed() -> bool:
            names = {c.metadata.name for c in await cluster.cliques()}
            c = await cluster.condition("big", "Degraded")
            return "big-0-p-1" in names and c is not None and c.reason != "InvalidSpec"

        await wait_for(resumed, timeout=60, what="instance 1 made after the scale back")
