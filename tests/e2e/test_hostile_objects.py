"""A CliqueSet the operator cannot read (a pod template nested 1,200 levels deep, which the
API server stores) neither stops nor starves the operator: it is skipped by the list and
the watch, reported on the object itself (a Warning Event and Degraded/InvalidSpec), and a
valid CliqueSet beside it, created before and after, still becomes Available."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cliques.kube.resources import CLIQUESETS, EVENTS
from tests.support.harness import Cluster, cliqueset, running_operator, wait_for

pytestmark = pytest.mark.cluster

DEPTH = 1200


PLACEHOLDER = "@@nested@@"


def too_deep(name: str, ns: str) -> bytes:
    """The manifest as JSON text: no JSON encoder goes this deep either."""
    body = cliqueset(name=name, replicas=1, workers=1)
    body["metadata"]["namespace"] = ns
    tmpl = body["spec"]["template"]["cliques"][0]["template"]["spec"]
    tmpl["affinity"] = {"nodeAffinity": PLACEHOLDER}
    nested = '{"n":' * DEPTH + '{"key":"zone","operator":"Exists"}' + "}" * DEPTH
    return json.dumps(body).replace(f'"{PLACEHOLDER}"', nested).encode()


async def apply_raw(cluster: Cluster, name: str, body: bytes) -> None:
    # the raw request: the answer is as deep as the object, no decoder reads it
    await cluster.client.request(
        "patch",
        CLIQUESETS,
        namespace=cluster.namespace,
        name=name,
        body=body,
        content_type="application/apply-patch+yaml",
        encoded_query="fieldManager=test&force=true",
    )


async def test_an_object_too_deep_to_read_is_skipped_and_reported(
    cluster: Cluster, crds: str
) -> None:
    ns = cluster.namespace
    await apply_raw(cluster, "deep-before", too_deep("deep-before", ns))  # in the first list
    await cluster.apply(cliqueset(name="fine-before", replicas=1, workers=1))
    async with running_operator(crds, ns) as manager:
        await cluster.wait_available("fine-before")
        await apply_raw(cluster, "deep-after", too_deep("deep-after", ns))  # through the watch
        await cluster.apply(cliqueset(name="fine-after", replicas=1, workers=1))
        await cluster.wait_available("fine-after")

        async def reported(name: str) -> dict[str, Any] | None:
            raw = await cluster.client.list_page(CLIQUESETS, ns, label_selector="", limit=100)
            text = raw.decode()
            # the list holds a deep object: read its conditions without a JSON decoder
            start = text.find(f'"name":"{name}"')
            status = text.find('"status":{', start)
            if start < 0 or status < 0:
                return None
            conds = text.find('"conditions":[', status)
            end = text.find("]", conds)
            if conds < 0 or end < 0:
                return None
            for c in json.loads(text[conds + len('"conditions":') : end + 1]):
                if c["type"] == "Degraded" and c["status"] == "True":
                    return c  # type: ignore[no-any-return]
            return None

        for name in ("deep-before", "deep-after"):
            cond = await wait_for(lambda n=name: reported(n), timeout=30, what=f"{name} Degraded")
            assert cond["reason"] == "InvalidSpec"
            assert "nested too deeply" in cond["message"]
        events = await cluster.client.list_page(EVENTS, ns, limit=500)
        assert events.count(b'"reason":"InvalidSpec"') >= 2
        assert manager.ready()  # its informers are alive and synced
        pods = await cluster.pods()
        assert {p.metadata.labels["cliques.dev/cliqueset"] for p in pods} == {
            "fine-before",
            "fine-after",
        }
