"""cliques.controllers.features.workload (the Workload body, pods' workloadRef, the backend
decision) and cliques.kube.gangapi (what discovery says the cluster serves)."""

import asyncio
import json
from typing import Any

import msgspec
import pytest

from cliques import api
from cliques.api import labels
from cliques.api.backends import GangBackend
from cliques.api.policies import GangScheduling
from cliques.controllers.features import gang_apis
from cliques.controllers.features import workload as wl
from cliques.kube import errors, gangapi


def cliqueset(*sizes: tuple[int, int | None], name: str = "llama") -> api.CliqueSet:
    pod = {"spec": {"containers": [{"name": "m"}]}}
    return msgspec.convert(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": "u-1"},
            "spec": {
                "replicas": 3,
                "template": {
                    "cliques": [
                        {"name": f"c{i}", "replicas": r, "minAvailable": m, "template": pod}
                        if m is not None
                        else {"name": f"c{i}", "replicas": r, "template": pod}
                        for i, (r, m) in enumerate(sizes)
                    ]
                },
            },
        },
        api.CliqueSet,
    )


@pytest.mark.parametrize(
    ("sizes", "policy"),
    [
        ([(1, None), (3, None)], {"gang": {"minCount": 4}}),
        ([(1, None), (4, 3)], {"gang": {"minCount": 4}}),
        ([(2, 0), (4, 1)], {"gang": {"minCount": 1}}),
        ([(2, 0), (4, 0)], {"basic": {}}),
        ([(0, None)], {"basic": {}}),
    ],
    ids=["all-pods", "min-available", "partial", "none-needed", "empty"],
)
def test_pod_groups(sizes: list[tuple[int, int | None]], policy: dict[str, Any]) -> None:
    assert wl.pod_groups(cliqueset(*sizes)) == [{"name": "gang", "policy": policy}]


def test_the_workload_is_owned_and_named_by_its_shape() -> None:
    cqs = cliqueset((1, None), (3, None))
    body = wl.build_workload(cqs, gang_apis.of("v1alpha1"))
    assert body["apiVersion"] == "scheduling.k8s.io/v1alpha1" and body["kind"] == "Workload"
    meta = body["metadata"]
    assert meta["namespace"] == "ns"
    assert meta["labels"] == {labels.LABEL_CLIQUESET: "llama"}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "cliques.dev/v1alpha1",
            "kind": "CliqueSet",
            "name": "llama",
            "uid": "u-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert body["spec"] == {
        "controllerRef": {"apiGroup": "cliques.dev", "kind": "CliqueSet", "name": "llama"},
        "podGroups": [{"name": "gang", "policy": {"gang": {"minCount": 4}}}],
    }
    name = meta["name"]
    assert name == wl.workload_name(cqs)
    assert name.startswith("llama-") and len(name) == len("llama-") + wl.HASH_LENGTH
    # Same shape, same name: the gang count and the pod templates do not enter it.
    other = cliqueset((2, 1), (3, None))
    other.spec.replicas = 7
    assert wl.workload_name(other) == name
    # Another minCount is another (immutable) object.
    assert wl.workload_name(cliqueset((1, None), (4, None))) != name
    # The longest CliqueSet name still gives a valid object name.
    long = wl.workload_name(cliqueset((1, None), name="n" * labels.MAX_CLIQUESET_NAME_LENGTH))
    assert len(long) <= labels.MAX_OBJECT_NAME_LENGTH


def test_the_shape_hash_ignores_key_order() -> None:
    groups = [{"name": "gang", "policy": {"gang": {"minCount": 4}}}]
    shuffled = [{"policy": {"gang": {"minCount": 4}}, "name": "gang"}]
    assert wl.shape_hash(groups) == wl.shape_hash(shuffled)


def test_build_refuses_a_cliqueset_without_uid() -> None:
    cqs = cliqueset((1, None))
    cqs.metadata.uid = ""
    with pytest.raises(ValueError, match="uid"):
        wl.build_workload(cqs, gang_apis.of("v1alpha1"))


def test_workload_ref() -> None:
    assert wl.workload_ref("llama-abc", 12) == {
        "name": "llama-abc",
        "podGroup": "gang",
        "podGroupReplicaKey": "12",
    }
    with pytest.raises(ValueError):
        wl.workload_ref("x", -1)


@pytest.mark.parametrize(
    ("requested", "served", "backend", "reason", "satisfiable"),
    [
        ("Auto", True, "Workload", wl.REASON_WORKLOAD, True),
        ("Auto", False, "None", wl.REASON_UNAVAILABLE, True),
        ("Workload", True, "Workload", wl.REASON_WORKLOAD, True),
        ("Workload", False, "None", wl.REASON_UNAVAILABLE, False),
        ("None", True, "None", wl.REASON_DISABLED, True),
        ("None", False, "None", wl.REASON_DISABLED, True),
    ],
)
def test_decide(requested: str, served: bool, backend: str, reason: str, satisfiable: bool) -> None:
    decision = wl.decide(
        requested,
        gang_apis.of("v1alpha1" if served else "", detail="no scheduling.k8s.io API group"),
    )
    assert (decision.backend, decision.reason, decision.satisfiable) == (
        backend,
        reason,
        satisfiable,
    )
    if not served and requested != "None":
        assert "no scheduling.k8s.io API group" in decision.message
    assert type(decision.backend) is GangBackend


def test_the_backends_are_the_values_the_spec_allows() -> None:
    spec = msgspec.convert({"backend": "Workload"}, GangScheduling)
    assert spec.backend is GangBackend.WORKLOAD
    with pytest.raises(ValueError):
        wl.decide("Volcano", gang_apis.of("v1alpha1"))


# ---- Discovery -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("versions", "resources", "chosen"),
    [
        ([], {}, ""),
        (["v1"], {}, ""),
        (["v1", "v1alpha1"], {"v1alpha1": ["workloads"]}, "v1alpha1"),
        (["v1", "v1alpha1"], {"v1alpha1": ["priorityclasses"]}, ""),
        (["v1", "v1alpha2"], {"v1alpha2": ["podgroups", "workloads"]}, "v1alpha2"),
        # a version without both of its resources is not used
        (["v1", "v1alpha2"], {"v1alpha2": ["workloads"]}, ""),
        (
            ["v1", "v1alpha1", "v1alpha2"],
            {"v1alpha1": ["workloads"], "v1alpha2": ["podgroups"]},
            "v1alpha1",
        ),
        # the newest served wins
        (
            ["v1", "v1alpha3", "v1beta1"],
            {"v1beta1": ["priorityclasses", "podgroups", "workloads"], "v1alpha3": ["x"]},
            "v1beta1",
        ),
        (
            ["v1alpha1", "v1alpha2", "v1beta1"],
            {
                "v1alpha1": ["workloads"],
                "v1alpha2": ["podgroups", "workloads"],
                "v1beta1": ["podgroups", "workloads"],
            },
            "v1beta1",
        ),
    ],
)
def test_interpret(versions: list[str], resources: dict[str, list[str]], chosen: str) -> None:
    found = gangapi.interpret(versions, resources)
    assert found.version == chosen
    assert found.served is bool(chosen)
    assert found.podgroups is (chosen in ("v1alpha2", "v1beta1"))
    assert found.describe()
    if chosen:
        assert f"scheduling.k8s.io/{chosen}" in found.describe()


class FakeDiscovery:
    def __init__(self, paths: dict[str, Any]) -> None:
        self.paths = paths
        self.asked: list[str] = []

    async def get_path(self, path: str) -> bytes:
        self.asked.append(path)
        if path not in self.paths:
            raise errors.NotFound(404, "NotFound", "not found", verb="get", path=path)
        return json.dumps(self.paths[path]).encode()


def group(*versions: str) -> dict[str, Any]:
    return {
        "kind": "APIGroup",
        "name": "scheduling.k8s.io",
        "versions": [{"groupVersion": f"scheduling.k8s.io/{v}", "version": v} for v in versions],
    }


def resource_list(*names: str) -> dict[str, Any]:
    return {"kind": "APIResourceList", "resources": [{"name": n, "kind": "X"} for n in names]}


def test_detect_finds_workloads() -> None:
    fake = FakeDiscovery(
        {
            "/apis/scheduling.k8s.io": group("v1", "v1alpha1"),
            "/apis/scheduling.k8s.io/v1alpha1": resource_list("workloads"),
        }
    )
    found = asyncio.run(gangapi.detect(fake))
    assert found.version == "v1alpha1" and found.versions == ("v1", "v1alpha1")
    assert not found.podgroups
    assert "/apis/scheduling.k8s.io/v1" not in fake.asked  # only the gang versions are read


def test_detect_prefers_v1beta1_podgroups() -> None:
    fake = FakeDiscovery(
        {
            "/apis/scheduling.k8s.io": group("v1", "v1beta1", "v1alpha3"),
            "/apis/scheduling.k8s.io/v1beta1": resource_list(
                "priorityclasses", "podgroups", "workloads"
            ),
        }
    )
    found = asyncio.run(gangapi.detect(fake))
    assert found.version == "v1beta1" and found.podgroups
    assert found.podgroup_resource.path("ns", "pg") == (
        "/apis/scheduling.k8s.io/v1beta1/namespaces/ns/podgroups/pg"
    )
    assert "/apis/scheduling.k8s.io/v1" not in fake.asked  # only the gang versions are read
    # v1alpha3 is listed, so read, but serves no compositepodgroups here
    assert "/apis/scheduling.k8s.io/v1alpha3" in fake.asked
    assert not found.composite and "composite off" in found.describe()
    assert "a PodGroup per gang" in found.describe()


def test_detect_finds_composite_pod_groups_in_v1alpha3() -> None:
    """1.37 with the CompositePodGroup gate: Workloads and PodGroups in v1beta1, the
    composites in v1alpha3 only."""
    fake = FakeDiscovery(
        {
            "/apis/scheduling.k8s.io": group("v1", "v1beta1", "v1alpha3"),
            "/apis/scheduling.k8s.io/v1beta1": resource_list(
                "priorityclasses", "podgroups", "workloads"
            ),
            "/apis/scheduling.k8s.io/v1alpha3": resource_list(
                "compositepodgroups", "podgroups", "workloads"
            ),
        }
    )
    found = asyncio.run(gangapi.detect(fake))
    assert found.version == "v1beta1" and found.podgroups
    assert found.composite and found.features == {gangapi.COMPOSITE}
    assert found.composite_version == "v1alpha3"
    assert found.composite_resource.path("ns", "g") == (
        "/apis/scheduling.k8s.io/v1alpha3/namespaces/ns/compositepodgroups/g"
    )
    assert found.composite_resource.kind == "CompositePodGroup"
    assert "composite on in scheduling.k8s.io/v1alpha3" in found.describe()
    # the log says the beta was looked for and what was taken instead
    assert "(v1beta1 serves none: the alpha)" in found.describe()


def test_detect_finds_composite_pod_groups_in_v1beta1() -> None:
    """1.38 (CompositePodGroup beta): Workloads, PodGroups and composites all in v1beta1;
    v1alpha3, where turned on too, serves the same composites and is not taken."""
    fake = FakeDiscovery(
        {
            "/apis/scheduling.k8s.io": group("v1", "v1beta1", "v1alpha3"),
            "/apis/scheduling.k8s.io/v1beta1": resource_list(
                "compositepodgroups", "podgroups", "workloads"
            ),
            "/apis/scheduling.k8s.io/v1alpha3": resource_list(
                "compositepodgroups", "podgroups", "workloads"
            ),
        }
    )
    found = asyncio.run(gangapi.detect(fake))
    assert found.version == "v1beta1" and found.composite
    assert found.composite_version == "v1beta1"
    assert found.composite_resource.path("ns", "g") == (
        "/apis/scheduling.k8s.io/v1beta1/namespaces/ns/compositepodgroups/g"
    )
    assert found.describe().endswith("composite on in scheduling.k8s.io/v1beta1)")


@pytest.mark.parametrize(
    ("versions", "resources", "composite"),
    [
        # v1alpha3 served without the gate: no compositepodgroups
        (
            ["v1beta1", "v1alpha3"],
            {"v1beta1": ["podgroups", "workloads"], "v1alpha3": ["podgroups", "workloads"]},
            "",
        ),
        # served in v1beta1 only (1.38 with only v1beta1 turned on): the beta
        (
            ["v1beta1"],
            {"v1beta1": ["compositepodgroups", "podgroups", "workloads"]},
            "v1beta1",
        ),
        # 1.38 with v1alpha3 turned on too: the beta is preferred
        (
            ["v1beta1", "v1alpha3"],
            {
                "v1beta1": ["compositepodgroups", "podgroups", "workloads"],
                "v1alpha3": ["compositepodgroups", "podgroups", "workloads"],
            },
            "v1beta1",
        ),
        # 1.37: the alpha only
        (
            ["v1beta1", "v1alpha3"],
            {"v1beta1": ["podgroups", "workloads"], "v1alpha3": ["compositepodgroups"]},
            "v1alpha3",
        ),
        # v1alpha2 PodGroups cannot name a parent
        (
            ["v1alpha2", "v1alpha3"],
            {"v1alpha2": ["podgroups", "workloads"], "v1alpha3": ["compositepodgroups"]},
            "",
        ),
        # compositepodgroups without PodGroups to be their children
        (["v1alpha3"], {"v1alpha3": ["compositepodgroups"]}, ""),
    ],
)
def test_interpret_composite(
    versions: list[str], resources: dict[str, list[str]], composite: str
) -> None:
    found = gangapi.interpret(versions, resources)
    assert found.composite_version == composite
    assert found.composite is bool(composite)
    assert (gangapi.COMPOSITE in found.features) is bool(composite)


def test_probe_keeps_composite() -> None:
    found = gangapi.GangAPI(
        "v1beta1",
        ("v1beta1", "v1alpha3"),
        frozenset({gangapi.COMPOSITE}),
        composite_version="v1alpha3",
    )
    probed = asyncio.run(gangapi.probe(FakeCreator({"topology"}), found, "ns"))
    assert probed.features == {"topology", gangapi.COMPOSITE}
    assert probed.composite and probed.composite_version == "v1alpha3"


def test_detect_finds_v1alpha2_podgroups() -> None:
    fake = FakeDiscovery(
        {
            "/apis/scheduling.k8s.io": group("v1", "v1alpha2"),
            "/apis/scheduling.k8s.io/v1alpha2": resource_list("podgroups", "workloads"),
        }
    )
    found = asyncio.run(gangapi.detect(fake))
    assert found.version == "v1alpha2" and found.podgroups


def test_detect_without_the_group() -> None:
    found = asyncio.run(gangapi.detect(FakeDiscovery({})))
    assert found == gangapi.GangAPI()
    assert found.describe() == "no scheduling.k8s.io API group"


class FakeCreator:
    """Answers dry-run PodGroup creates as an API server whose gates `on` are enabled:
    fields of other gates are dropped (or refused, with `refuse`)."""

    def __init__(self, on: set[str], refuse: bool = False, status: int = 0) -> None:
        self.on, self.refuse, self.status = on, refuse, status
        self.queries: list[dict[str, str]] = []

    async def request(self, verb: str, resource: Any, **kw: Any) -> bytes:
        assert verb == "create" and resource.plural == "podgroups"
        self.queries.append(dict(kw["query"]))
        if self.status:
            raise errors.ApiError(self.status, "X", "x", verb="create", path="/")
        body = json.loads(kw["body"])
        for name, (_, _fragment, field_name) in gangapi.FEATURES.items():
            if name not in self.on and field_name in body["spec"]:
                if self.refuse:
                    raise errors.ApiError(422, "Invalid", f"{field_name}: Forbidden")
                del body["spec"][field_name]
        return json.dumps(body).encode()


@pytest.mark.parametrize("refuse", [False, True])
def test_probe_finds_the_gated_fields_the_server_keeps(refuse: bool) -> None:
    found = gangapi.GangAPI("v1beta1", ("v1beta1",))
    fake = FakeCreator({"topology"}, refuse=refuse)
    probed = asyncio.run(gangapi.probe(fake, found, "ns"))
    assert probed.features == {"topology"}
    assert probed.version == "v1beta1"
    assert all(q == {"dryRun": "All"} for q in fake.queries)  # nothing is stored
    assert "topology on" in probed.describe() and "preemption-policy off" in probed.describe()


def test_probe_without_podgroups_or_without_rbac() -> None:
    alpha1 = gangapi.GangAPI("v1alpha1", ("v1alpha1",))
    assert asyncio.run(gangapi.probe(FakeCreator(set()), alpha1, "ns")) == alpha1
    beta = gangapi.GangAPI("v1beta1", ("v1beta1",))
    assert asyncio.run(gangapi.probe(FakeCreator(set(), status=403), beta, "ns")).features == set()
    with pytest.raises(errors.ApiError):
        asyncio.run(gangapi.probe(FakeCreator(set(), status=503), beta, "ns"))
