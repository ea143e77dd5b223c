"""Request deadlines against the real API server.

A watch request sent through `KubeClient.request` (which reads the whole body) is a request
the real kube-apiserver keeps open until its `timeoutSeconds`: the client's deadline must
end it first with a TimeoutError, and leave the task able to carry on. A cancellation from
elsewhere must stay a cancellation (the case of both at once: tests/unit/test_kube_deadlines.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from cliques.kube.client import KubeClient
from cliques.kube.resources import Resource

pytestmark = pytest.mark.cluster

CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
TIMEOUT = 1.0
HANGING = {"watch": "true", "timeoutSeconds": "30"}  # the server answers after 30 s


@pytest.fixture
async def client(kubeconfig: str) -> AsyncIterator[KubeClient]:
    kube = await KubeClient.connect(
        kubeconfig, qps=0, field_manager="cliques-tests", request_timeout=TIMEOUT
    )
    try:
        yield kube
    finally:
        await kube.close()


async def test_a_request_past_its_deadline_raises_timeout_and_the_task_goes_on(
    client: KubeClient, namespace: str
) -> None:
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="no answer within 1s"):
        await client.request("list", CONFIGMAPS, namespace=namespace, query=HANGING)
    took = time.monotonic() - started
    # Enforced by a check every TIMEOUT/4 s: never early, at most a tick late (+ slack).
    assert TIMEOUT <= took < TIMEOUT + 2.0, took
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0  # the cancellation was withdrawn
    # The same task goes on: a normal request, and a wait longer than the deadline that no
    # stray cancellation interrupts.
    await client.request("list", CONFIGMAPS, namespace=namespace)
    await asyncio.sleep(TIMEOUT * 1.5)
    assert client.deadlines._due == {} and client.deadlines._expired == set()


async def test_requests_within_their_deadline_are_not_touched(
    client: KubeClient, namespace: str
) -> None:
    """Many quick requests, together taking far longer than one deadline."""
    until = time.monotonic() + TIMEOUT * 2.5
    done = 0
    while time.monotonic() < until:
        await asyncio.gather(
            *(client.request("list", CONFIGMAPS, namespace=namespace) for _ in range(8))
        )
        done += 8
    assert done > 8
    assert client.deadlines._due == {}


async def test_a_cancellation_from_elsewhere_stays_a_cancellation(
    client: KubeClient, namespace: str
) -> None:
    task = asyncio.ensure_future(
        client.request("list", CONFIGMAPS, namespace=namespace, query=HANGING)
    )
    await asyncio.sleep(TIMEOUT / 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert client.deadlines._due == {} and client.deadlines._expired == set()
