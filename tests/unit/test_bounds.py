"""What one CliqueSet may ask of the operator: the operator's label and annotation keys never
reach its Cliques or pods from a tenant's template, and a set whose Cliques would store too
many bytes of templates is an InvalidSpec (`controllers.bounds`). The CRD's side of both
is in tests/integration/test_crd_validation.py."""

from __future__ import annotations

from copy import deepcopy
from typing import Any

import msgspec
import pytest

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet
from cliques.api.cliqueset_status import REASON_INVALID_SPEC
from cliques.api.meta import ObjectMeta, find_condition
from cliques.api.pod import Pod, PodCondition, PodStatus
from cliques.api.service import Service
from cliques.controllers.base import bounds
from cliques.controllers.base.executor import Executor
from cliques.controllers.base.revision import Hasher
from cliques.controllers.clique import bodies as pod_bodies
from cliques.controllers.clique import planner as clique_planner
from cliques.controllers.cliqueset import bodies as set_bodies
from cliques.controllers.cliqueset.controller import CliqueSetController, SetInformers
from cliques.controllers.features import placement
from cliques.kube import store
from cliques.kube.expectations import Expectations
from cliques.kube.informer import Informer
from cliques.kube.resources import CLIQUES, CLIQUESETS, SERVICES
from tests.support import bodies as support_bodies

from .planner_fixtures import NOW, cliqueset

#: A tenant's template metadata that copies the operator's keys.
FORGED_LABELS = {
    "app": "x",
    labels.LABEL_TEMPLATE_HASH: "forged",
    "x.cliques.dev/role": "mine",
}
FORGED_ANNOTATIONS = {
    "note": "kept",
    labels.ANNOTATION_GANG_RESTARTS: "7",
    labels.LABEL_TEMPLATE_HASH: "forged",
}


def forged_set(replicas: int = 1) -> CliqueSet:
    """A CliqueSet stored before the CRD refused the operator's keys: its worker template
    carries some."""
    cqs = cliqueset(replicas=replicas)
    worker = cqs.spec.template.cliques[1]
    worker.template["metadata"] = {
        "labels": dict(FORGED_LABELS),
        "annotations": dict(FORGED_ANNOTATIONS),
    }
    return cqs


def stored_clique(body: dict[str, Any]) -> Clique:
    """A Clique body as the API server would store it (a uid, a generation)."""
    clique = msgspec.convert(body, Clique)
    clique.metadata.uid = f"uid-{clique.metadata.name}"
    clique.metadata.generation = 1
    clique.metadata.resource_version = "1"
    return clique


def running(body: dict[str, Any]) -> Pod:
    """A pod body as the API server would store it, Running and Ready."""
    pod = msgspec.convert(body, Pod)
    pod.metadata.uid = f"uid-{pod.metadata.name}"
    pod.metadata.resource_version = "1"
    pod.status = PodStatus(phase="Running", conditions=[PodCondition(type="Ready", status="True")])
    return pod


def worker_clique(cqs: CliqueSet, **annotations: str) -> Clique:
    tmpl = cqs.spec.template.cliques[1]
    body = support_bodies.clique_body(cqs, 0, tmpl, template_hash="h1", algorithm=1, bucket="7")
    body["metadata"]["annotations"].update(annotations)
    return stored_clique(body)


# ---- The operator's keys ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "reserved"),
    [
        ("cliques.dev/gang-restarts", True),
        ("cliques.dev/anything-new", True),
        ("x.cliques.dev/y", True),
        ("a.b.cliques.dev/c", True),
        ("cliques.dev", False),  # a name without a prefix
        ("notcliques.dev/x", False),
        ("cliques.dev.example.com/x", False),
        ("example.com/cliques.dev", False),
        ("app", False),
    ],
)
def test_reserved_keys_are_the_prefix_and_its_subdomains(key: str, reserved: bool) -> None:
    assert labels.is_reserved(key) is reserved


def test_a_clique_gets_the_template_without_the_operators_keys() -> None:
    cqs = forged_set()
    before = deepcopy(cqs.spec.template.cliques[1].template)
    body = support_bodies.clique_body(
        cqs,
        0,
        cqs.spec.template.cliques[1],
        template_hash="h1",
        algorithm=1,
        bucket="7",
    )
    meta = body["spec"]["template"]["metadata"]
    assert meta == {"labels": {"app": "x"}, "annotations": {"note": "kept"}}
    assert body["spec"]["template"]["spec"] == before["spec"]
    # The CliqueSet's own template is left as it was (it is the cache's object).
    assert cqs.spec.template.cliques[1].template == before
    # The Clique's marks are the operator's.
    assert body["metadata"]["labels"][labels.LABEL_TEMPLATE_HASH] == "h1"
    assert labels.ANNOTATION_GANG_RESTARTS not in body["metadata"]["annotations"]


def test_a_template_without_them_is_used_as_it_is() -> None:
    cqs = cliqueset()
    tmpl = cqs.spec.template.cliques[0]
    assert bounds.tenant_template(tmpl.template) is tmpl.template
    assert set_bodies.gang_template(cqs, 0, tmpl) is tmpl.template


@pytest.mark.parametrize("restarts", [None, "2"])
def test_pods_of_a_template_with_the_operators_keys_carry_the_operators_marks(
    restarts: str | None,
) -> None:
    """A Clique stored before the rule holds the tenant's `gang-restarts: "7"` and
    `template-hash` in its template. Its pods carry the Clique's restart count (none, or
    2) and the desired hash, so the Clique planner keeps them: before, the pod said 7,
    the Clique another count, and the pod was deleted and recreated as it was, forever."""
    cqs = forged_set()
    clique = worker_clique(cqs, **({labels.ANNOTATION_GANG_RESTARTS: restarts} if restarts else {}))
    clique.spec.template = deepcopy(cqs.spec.template.cliques[1].template)  # stored before
    assert clique.spec.template["metadata"]["annotations"][labels.ANNOTATION_GANG_RESTARTS] == "7"
    pods = [pod_bodies.pod_body(clique, i, "h1", 1) for i in range(clique.spec.replicas)]
    for pod in pods:
        meta = pod["metadata"]
        assert meta["annotations"].get(labels.ANNOTATION_GANG_RESTARTS) == restarts
        assert meta["annotations"]["note"] == "kept"
        assert labels.LABEL_TEMPLATE_HASH not in meta["annotations"]
        assert meta["labels"][labels.LABEL_TEMPLATE_HASH] == "h1"
        assert meta["labels"]["app"] == "x"
        assert not [k for k in {**meta["labels"], **meta["annotations"]} if k.startswith("x.")]
    plan = clique_planner.plan(
        clique_planner.CliqueSnapshot(
            clique=clique, pods=[running(p) for p in pods], template_hash="h1", now=NOW
        )
    )
    assert plan.deletes == [] and plan.creates == []


def test_placement_judges_pods_by_the_labels_they_will_carry() -> None:
    """A required pod-affinity term that only a reserved label of the template would meet
    is met by no pod: the operator leaves that label out."""
    cqs = msgspec.convert(
        {
            "metadata": {"name": "s", "namespace": "ns"},
            "spec": {
                "placement": {"pack": {"topologyKey": "rack"}},
                "template": {"cliques": [{"name": "a", "template": {}}]},
            },
        },
        CliqueSet,
    )
    term = {"labelSelector": {"matchLabels": {"x.cliques.dev/y": "1"}}, "topologyKey": "rack"}
    template = {
        "metadata": {"labels": {"x.cliques.dev/y": "1"}},
        "spec": {
            "containers": [{"name": "m"}],
            "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
        },
    }
    assert placement.unplaceable_cliques([("a", template)], cqs.spec.placement, "s", "ns") == ["a"]


def test_reserved_keys_are_listed_for_an_event() -> None:
    assert bounds.reserved_keys(cliqueset()) == []
    assert bounds.reserved_keys_message(cliqueset()) == ""
    cqs = forged_set()
    found = bounds.reserved_keys(cqs)
    assert [str(k) for k in found] == [
        "worker: label cliques.dev/template-hash",
        "worker: label x.cliques.dev/role",
        "worker: annotation cliques.dev/gang-restarts",
        "worker: annotation cliques.dev/template-hash",
    ]
    message = bounds.reserved_keys_message(cqs)
    assert message.endswith(
        "worker: label cliques.dev/template-hash; worker: label x.cliques.dev/role; "
        "worker: annotation cliques.dev/gang-restarts; "
        "worker: annotation cliques.dev/template-hash"
    )
    assert "left out of the Cliques and pods" in message


def test_the_event_message_names_a_few_keys_and_counts_the_rest() -> None:
    cqs = cliqueset()
    cqs.spec.template.cliques[0].template["metadata"] = {
        "annotations": {f"cliques.dev/k{i}": "" for i in range(100)}
    }
    message = bounds.reserved_keys_message(cqs)
    assert f"leader: annotation cliques.dev/k{bounds.MESSAGE_KEYS - 1};" in message
    assert f"cliques.dev/k{bounds.MESSAGE_KEYS}" not in message
    assert message.endswith(f"; and {100 - bounds.MESSAGE_KEYS} more")


# ---- Bytes of templates -----------------------------------------------------------------


def sized_set(replicas: int, cliques: int, pad: int) -> CliqueSet:
    """A CliqueSet of `replicas` gangs of `cliques` cliques, each template `pad` bytes of
    annotation value larger than a minimal one."""
    return msgspec.convert(
        {
            "metadata": {"name": "big", "namespace": "ns", "uid": "u", "generation": 1},
            "spec": {
                "replicas": replicas,
                "template": {
                    "cliques": [
                        {
                            "name": f"c{i}",
                            "replicas": 0,
                            "template": {
                                "metadata": {"annotations": {"pad": "x" * pad}},
                                "spec": {"containers": [{"name": "m", "image": "i"}]},
                            },
                        }
                        for i in range(cliques)
                    ]
                },
            },
        },
        CliqueSet,
    )


def test_template_bytes_are_gangs_times_the_templates_json() -> None:
    cqs = sized_set(3, 2, 100)
    one = len(msgspec.json.encode(cqs.spec.template.cliques[0].template))
    assert one > 100
    assert bounds.template_bytes(cqs) == (2 * one, 3 * 2 * one)
    assert bounds.template_bytes_invalid(cqs, limit=3 * 2 * one) == ""
    message = bounds.template_bytes_invalid(cqs, limit=3 * 2 * one - 1)
    assert message.startswith(f"the Cliques of this CliqueSet would store {6 * one:,} bytes")
    assert f"(3 gangs x {2 * one:,} bytes per gang," in message
    assert f"more than the {6 * one - 1:,} bytes" in message


def test_the_default_bound_passes_a_large_set_of_small_templates() -> None:
    # 10,000 gangs (the most the CRD allows) of 16 cliques of ~1 KB: ~170 MB.
    assert bounds.template_bytes_invalid(sized_set(10_000, 16, 1_000)) == ""
    # The same gangs with ~85 KB templates (a 1.4 MB CliqueSet): ~14 GB.
    message = bounds.template_bytes_invalid(sized_set(10_000, 16, 85_000))
    assert f"more than the {bounds.MAX_TEMPLATE_BYTES:,} bytes" in message
    assert "10,000 gangs x 1,36" in message


def controller() -> CliqueSetController:
    """A CliqueSet controller with empty caches and no client (plans send nothing)."""
    client: Any = None
    by_controller: dict[str, Any] = {"controller": store.by_controller}
    sets: Informer[CliqueSet] = Informer(client, CLIQUESETS, CliqueSet)
    cliques: Informer[Clique] = Informer(client, CLIQUES, Clique, indexers=by_controller)
    svcs: Informer[Service] = Informer(client, SERVICES, Service, indexers=by_controller)
    exp = Expectations("cliqueset")
    informers = SetInformers(sets, cliques, svcs)
    return CliqueSetController(informers, Executor(client, exp, None), exp, Hasher())


def test_too_many_template_bytes_is_an_invalid_spec_that_creates_nothing() -> None:
    ctl = controller()
    cqs = sized_set(625, 16, 30_000)  # 625 gangs (10,000 Cliques) x ~480 KB per gang: ~300 MB
    snap = ctl.snapshot(cqs)
    assert snap.invalid == bounds.template_bytes_invalid(cqs) != ""
    plan = ctl._plan(cqs)
    assert plan.writes == 0
    degraded = find_condition(plan.status.conditions, "Degraded")
    assert degraded is not None and degraded.reason == REASON_INVALID_SPEC
    assert degraded.message == snap.invalid
    assert [e.reason for e in plan.events] == [REASON_INVALID_SPEC]
    # Fewer gangs of the same templates: valid, and planned.
    fewer = sized_set(100, 16, 5_000)
    assert ctl.snapshot(fewer).invalid == ""
    assert ctl._plan(fewer).writes > 0


def test_object_meta_of_a_set_is_not_counted() -> None:
    """Only the pod templates count: the CliqueSet's own labels do not."""
    cqs = sized_set(2, 1, 10)
    bigger = msgspec.structs.replace(
        cqs, metadata=ObjectMeta(name="big", namespace="ns", labels={"a": "b" * 1000})
    )
    assert bounds.template_bytes(bigger) == bounds.template_bytes(cqs)
