"""A ControllerRevision's `data` against the real API server: later patches of the object
keep working.

The API server refuses any update that changes `data` by a byte, and a strategic merge
patch (the garbage collector orphaning a revision, `kubectl label`) rebuilds those bytes
in Go's `json.Marshal` form. The operator writes that form (`cliques.kube.gojson`), so the
patches pass for a template with shell operators, HTML characters and non-ASCII text; the
same data sent in insertion order is refused, the failure this guards against (a set
deleted with `--cascade=orphan` waiting forever for the garbage collector).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest

from cliques.api.cliqueset import CliqueSet
from cliques.api.controllerrevision import ControllerRevisionData
from cliques.controllers.features import revisions
from cliques.kube import errors
from cliques.kube.client import KubeClient
from cliques.kube.resources import CONTROLLER_REVISIONS

pytestmark = pytest.mark.cluster

SET: dict[str, Any] = {
    "apiVersion": "cliques.dev/v1alpha1",
    "kind": "CliqueSet",
    "metadata": {"name": "shell", "namespace": "ns", "uid": "u-1"},
    "spec": {
        "replicas": 1,
        "template": {
            "cliques": [
                {
                    "name": "lead",
                    "replicas": 2,
                    "minAvailable": 1,
                    "template": {
                        "metadata": {"labels": {"role": "lead", "app": "shell"}},
                        "spec": {
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "vllm:1",
                                    "command": ["sh", "-c", "serve > /tmp/log 2>&1 && echo <ok>"],
                                    "env": [{"name": "GREETING", "value": "grüß\u2028dich\ttab"}],
                                }
                            ]
                        },
                    },
                }
            ]
        },
    },
}


@pytest.fixture
async def client(kubeconfig: str) -> AsyncIterator[KubeClient]:
    kube = await KubeClient.connect(kubeconfig, qps=0, field_manager="cliques-tests")
    try:
        yield kube
    finally:
        await kube.close()


def revision_body(namespace: str, name: str, data: Any) -> dict[str, Any]:
    cqs = msgspec.convert(SET, CliqueSet)
    body = revisions.body(cqs, name, 1, "7")
    body["metadata"]["namespace"] = namespace
    del body["metadata"]["ownerReferences"]  # no owner here: the collector would take it
    if data is not None:
        body["data"] = data
    return body


async def test_the_operators_revision_takes_strategic_and_merge_patches(
    client: KubeClient, namespace: str
) -> None:
    body = revision_body(namespace, "shell-1", None)
    sent = bytes(body["data"])
    await client.create(CONTROLLER_REVISIONS, namespace, body, dict)
    # As the garbage collector orphans it, and as `kubectl label` does:
    await client.patch(
        CONTROLLER_REVISIONS,
        namespace,
        "shell-1",
        {"metadata": {"labels": {"team": "a"}, "ownerReferences": None}},
        dict,
        patch_type="strategic",
    )
    # As the operator renumbers it:
    await client.patch(CONTROLLER_REVISIONS, namespace, "shell-1", {"revision": 3}, dict)
    back = await client.get(CONTROLLER_REVISIONS, namespace, "shell-1", ControllerRevisionData)
    assert back.revision == 3 and back.metadata.labels["team"] == "a"
    assert back.data == msgspec.json.decode(sent)
    cmd = back.data["spec"]["template"]["cliques"][0]["template"]["spec"]["containers"][0]
    assert cmd["command"][2] == "serve > /tmp/log 2>&1 && echo <ok>"
    assert cmd["env"][0]["value"] == "grüß\u2028dich\ttab"


async def test_data_in_another_byte_form_is_refused_on_the_first_strategic_patch(
    client: KubeClient, namespace: str
) -> None:
    """What Kubernetes does with bytes not in Go's form: the reason for `gojson`."""
    data = msgspec.Raw(msgspec.json.encode(revisions.data(msgspec.convert(SET, CliqueSet))))
    await client.create(
        CONTROLLER_REVISIONS, namespace, revision_body(namespace, "raw-1", data), dict
    )
    with pytest.raises(errors.ApiError) as err:
        await client.patch(
            CONTROLLER_REVISIONS,
            namespace,
            "raw-1",
            {"metadata": {"labels": {"team": "a"}}},
            dict,
            patch_type="strategic",
        )
    assert err.value.status == 422 and "field is immutable" in str(err.value)
