"""The CRDs in deploy/crds, checked offline: they are what `make crds` generates from the
msgspec Structs of cliques.api (cliques.api.crdgen), their schemas are structural, their
bounds are the API's constants, and the Structs read them as the API server does (field
names, defaults, enums). How the generator maps a type is tested in test_crdgen.py; the API
server's own verdict on the CRDs is in tests/integration/test_crd_validation.py."""

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from cliques import api
from cliques.api import crdgen, labels, scalinggroup, shapes, sizes
from cliques.api.backends import GangBackend

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "deploy" / "crds"
# Every directory that holds a copy of the generated CRDs (`make crds` writes them all).
COPIES = [
    ROOT / "deploy" / "crds",
    ROOT / "deploy" / "helm" / "cliques" / "crds",
    ROOT / "python" / "cliques" / "data" / "crds",
]
Schema = dict[str, Any]


def load(name: str) -> dict[str, Any]:
    crd = yaml.safe_load((CRDS / name).read_text())
    assert isinstance(crd, dict)
    return crd


CLIQUESET = load("cliquesets.cliques.dev.yaml")
CLIQUE = load("cliques.cliques.dev.yaml")
SCALING_GROUP = load("cliquescalinggroups.cliques.dev.yaml")
ALL = pytest.mark.parametrize(
    "crd", [CLIQUESET, CLIQUE, SCALING_GROUP], ids=["CliqueSet", "Clique", "CliqueScalingGroup"]
)


def version(crd: dict[str, Any]) -> dict[str, Any]:
    (only,) = crd["spec"]["versions"]
    assert isinstance(only, dict)
    return only


def root(crd: dict[str, Any]) -> Schema:
    schema = version(crd)["schema"]["openAPIV3Schema"]
    assert isinstance(schema, dict)
    return schema


def walk(schema: Schema, path: str = "") -> Iterator[tuple[str, Schema]]:
    """Every schema node with its path (`.spec.template.cliques[]`)."""
    yield path, schema
    for name, child in schema.get("properties", {}).items():
        yield from walk(child, f"{path}.{name}")
    if "items" in schema:
        yield from walk(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from walk(schema["additionalProperties"], f"{path}{{}}")


def node(crd: dict[str, Any], path: str) -> Schema:
    for at, schema in walk(root(crd)):
        if at == path:
            return schema
    raise KeyError(path)


def test_the_directory_holds_exactly_the_three_crds() -> None:
    assert sorted(p.name for p in CRDS.glob("*.yaml")) == [
        "cliques.cliques.dev.yaml",
        "cliquescalinggroups.cliques.dev.yaml",
        "cliquesets.cliques.dev.yaml",
    ]


@pytest.mark.parametrize("directory", COPIES, ids=[str(d.relative_to(ROOT)) for d in COPIES])
def test_the_committed_crds_are_the_generated_ones(directory: Path) -> None:
    generated = crdgen.generate()
    committed = {p.name: p.read_text(encoding="utf-8") for p in directory.glob("*.yaml")}
    assert sorted(committed) == sorted(generated)
    stale = [name for name, text in generated.items() if committed[name] != text]
    assert stale == [], (
        f"{directory.relative_to(ROOT)}: {stale} differ from what the API types in "
        "python/cliques/api generate: run `make crds` (edit the types, not the YAML)"
    )


@pytest.mark.parametrize(
    ("crd", "kind", "plural", "short"),
    [
        (CLIQUESET, "CliqueSet", "cliquesets", "cqs"),
        (CLIQUE, "Clique", "cliques", "cq"),
        (SCALING_GROUP, scalinggroup.KIND, "cliquescalinggroups", "cqsg"),
    ],
)
def test_names_scope_and_subresources(
    crd: dict[str, Any], kind: str, plural: str, short: str
) -> None:
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["metadata"]["name"] == f"{plural}.{labels.GROUP}"
    spec = crd["spec"]
    assert spec["group"] == labels.GROUP
    assert spec["scope"] == "Namespaced"
    names = spec["names"]
    assert (names["kind"], names["listKind"], names["plural"]) == (kind, f"{kind}List", plural)
    assert names["singular"] == kind.lower()
    assert names["shortNames"] == [short]
    assert names["categories"] == ["cliques"]
    v = version(crd)
    assert (v["name"], v["served"], v["storage"]) == (labels.VERSION, True, True)
    assert v["subresources"] == {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    }


@ALL
def test_every_node_is_structural(crd: dict[str, Any]) -> None:
    for path, schema in walk(root(crd)):
        if schema.get("x-kubernetes-int-or-string"):
            # (an IntOrString has no type, and exactly this anyOf: structural schema rules)
            assert "type" not in schema, path
            assert schema["anyOf"] == [{"type": "integer"}, {"type": "string"}], path
            continue
        assert schema.get("type") in {"object", "array", "string", "integer", "boolean"}, path
        if schema["type"] == "array":
            assert "items" in schema, path
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            assert schema["type"] == "object", path
        for name in schema.get("required", []):
            assert name in schema.get("properties", {}), f"{path}: required {name} undeclared"
        # Defaults must satisfy the node they sit on (the API server checks this too).
        if "default" in schema and schema["type"] == "integer":
            assert schema["default"] >= schema.get("minimum", schema["default"]), path
        if "enum" in schema and "default" in schema:
            assert schema["default"] in schema["enum"], path
    assert root(crd)["properties"]["metadata"] == {"type": "object"}


@pytest.mark.parametrize(
    ("crd", "maps"),
    [(CLIQUESET, 5), (CLIQUE, 2), (SCALING_GROUP, 0)],
    ids=["CliqueSet", "Clique", "CliqueScalingGroup"],
)
def test_map_lists_are_keyed_by_required_fields(crd: dict[str, Any], maps: int) -> None:
    found = 0
    for path, schema in walk(root(crd)):
        if schema.get("x-kubernetes-list-type") == "map":
            found += 1
            items = schema["items"]
            assert items["type"] == "object", path
            for key in schema["x-kubernetes-list-map-keys"]:
                assert key in items.get("required", []) or "default" in items["properties"][key]
        elif "x-kubernetes-list-map-keys" in schema:
            pytest.fail(f"{path}: list-map-keys without listType map")
    # CliqueSet: cliques, containers, resourceClaims, scalingGroups, conditions; Clique:
    # containers, conditions.
    assert found == maps


@ALL
def test_cel_rules_are_well_formed_and_bounded(crd: dict[str, Any]) -> None:
    rules = 0
    for path, schema in walk(root(crd)):
        for rule in schema.get("x-kubernetes-validations", []):
            rules += 1
            assert set(rule) <= {"rule", "message", "messageExpression", "fieldPath", "reason"}
            assert rule["message"], path
            assert "\n" not in rule["message"], path
            if "fieldPath" in rule:
                # The field must exist below the node the rule is on.
                assert re.fullmatch(r"(\.[A-Za-z]+)+", rule["fieldPath"]), path
                node(crd, path + rule["fieldPath"])
            assert rule.get("reason", "FieldValueInvalid") == "FieldValueInvalid", path
    assert rules >= 2
    # The CEL cost estimator needs bounds on every list and string the rules walk.
    for path in (
        ".spec.template.cliques",
        ".spec.template.cliques[].startsAfter",
        ".spec.template.scalingGroups",
        ".spec.template.scalingGroups[].cliques",
        ".spec.startsAfter",
    ):
        try:
            schema = node(crd, path)
        except KeyError:
            continue
        assert "maxItems" in schema, path
        if schema["items"]["type"] == "string":
            assert "maxLength" in schema["items"], path


def test_cliqueset_bounds() -> None:
    cliques = node(CLIQUESET, ".spec.template.cliques")
    assert (cliques["minItems"], cliques["maxItems"]) == (1, 16)
    assert cliques["x-kubernetes-list-map-keys"] == ["name"]
    name = cliques["items"]["properties"]["name"]
    assert name["maxLength"] == labels.MAX_CLIQUE_NAME_LENGTH
    assert (
        node(CLIQUESET, ".spec.template.cliques[].startsAfter")["x-kubernetes-list-type"] == "set"
    )
    rules = " ".join(r["rule"] for r in root(CLIQUESET)["x-kubernetes-validations"])
    assert f"<= {labels.MAX_CLIQUESET_NAME_LENGTH}" in rules
    for path in (
        ".spec.replicas",
        ".spec.template.cliques[].replicas",
        ".spec.template.cliques[].minAvailable",
    ):
        assert node(CLIQUESET, path)["minimum"] == 0, path
        assert node(CLIQUESET, path)["format"] == "int32", path
    containers = node(CLIQUESET, ".spec.template.cliques[].template.spec.containers")
    assert containers["minItems"] == 1
    restart = node(CLIQUESET, ".spec.template.cliques[].template.spec.restartPolicy")
    assert restart["enum"] == ["Always"]


def test_sizes_are_bounded_as_the_api_says() -> None:
    assert node(CLIQUESET, ".spec.replicas")["maximum"] == api.cliqueset.MAX_GANGS
    for crd, path in (
        (CLIQUESET, ".spec.template.cliques[].replicas"),
        (CLIQUE, ".spec.replicas"),
    ):
        assert node(crd, path)["maximum"] == api.cliquetemplate.MAX_CLIQUE_PODS, path
    rules = [r["rule"] for r in node(CLIQUESET, ".spec.template")["x-kubernetes-validations"]]
    # the pods of a gang, each clique once per instance of its group (`api.sizes`)
    gang_pods = f"{sizes.cel_gang_pods('self')} <= {api.cliqueset.MAX_GANG_PODS}"
    assert gang_pods in rules, rules
    assert node(CLIQUE, ".spec.template.spec.restartPolicy")["enum"] == ["Always"]
    assert node(CLIQUESET, ".spec.template.cliques[].template.spec")["required"] == ["containers"]


def test_a_cliqueset_is_bounded_as_a_whole() -> None:
    """Cliques (gangs x cliques) and pods (gangs x pods per gang) of a whole set, on `spec`
    so that a scale through the subresource is checked too, naming the numbers. A gang's
    Cliques and pods are counted as `api.sizes` counts them: scaling groups' instances and
    autoscaling maxima included."""
    rules = node(CLIQUESET, ".spec")["x-kubernetes-validations"]
    gangs = "(has(self.replicas) ? self.replicas : 1)"
    cliques = [
        r
        for r in rules
        if r["rule"]
        == f"{gangs} * {sizes.cel_gang_cliques('self.template')} <= {api.cliqueset.MAX_SET_CLIQUES}"
    ]
    pods = [
        r
        for r in rules
        if r["rule"]
        == f"{gangs} * {sizes.cel_gang_pods('self.template')} <= {api.cliqueset.MAX_SET_PODS}"
    ]
    assert len(cliques) == len(pods) == 1, rules
    for rule in (*cliques, *pods):
        assert rule["fieldPath"] == ".replicas"
        assert "%d x %d = %d" in rule["messageExpression"]
        # string(int) in a concatenation has no size bound for the cost estimator; format
        # has one.
        assert "string(" not in rule["messageExpression"]


def autoscaling_shape(schema: Schema) -> Schema:
    """An autoscaling schema without its descriptions and the bound on maxReplicas."""
    out = copy.deepcopy(schema)
    for _, below in walk(out):
        below.pop("description", None)
    del out["properties"]["maxReplicas"]["maximum"]
    return out


def test_scaling_groups_are_bounded_as_the_api_says() -> None:
    groups = node(CLIQUESET, ".spec.template.scalingGroups")
    assert groups["maxItems"] == api.scalinggroup.MAX_SCALING_GROUPS
    assert groups["x-kubernetes-list-type"] == "map"
    assert groups["x-kubernetes-list-map-keys"] == ["name"]
    assert "default" not in groups  # absent and empty read the same; no default to store
    clique_name = node(CLIQUESET, ".spec.template.cliques[].name")
    for crd, path in (
        (CLIQUESET, ".spec.template.scalingGroups[].name"),
        (SCALING_GROUP, ".spec.groupName"),
    ):
        name = node(crd, path)
        assert name["maxLength"] == labels.MAX_CLIQUE_NAME_LENGTH, path
        assert (name["minLength"], name["pattern"]) == (1, clique_name["pattern"]), path
    members = node(CLIQUESET, ".spec.template.scalingGroups[].cliques")
    cliques = node(CLIQUESET, ".spec.template.cliques")
    assert (members["minItems"], members["maxItems"]) == (1, cliques["maxItems"])
    assert members["x-kubernetes-list-type"] == "set"
    assert members["items"]["maxLength"] == labels.MAX_CLIQUE_NAME_LENGTH
    for crd, path in (
        (CLIQUESET, ".spec.template.scalingGroups[].replicas"),
        (SCALING_GROUP, ".spec.replicas"),
    ):
        schema = node(crd, path)
        assert (schema["minimum"], schema["maximum"]) == (0, api.scalinggroup.MAX_GROUP_INSTANCES)
        assert (schema["format"], schema["default"]) == ("int32", 1), path
    for crd, path in (
        (CLIQUESET, ".spec.template.scalingGroups[].minAvailable"),
        (SCALING_GROUP, ".spec.minAvailable"),
        (SCALING_GROUP, ".spec.gangIndex"),
    ):
        assert (node(crd, path)["minimum"], node(crd, path)["format"]) == (0, "int32"), path


@pytest.mark.parametrize(
    ("path", "most"),
    [
        (".spec.template.cliques[].autoscaling", api.cliquetemplate.MAX_CLIQUE_PODS),
        (".spec.template.scalingGroups[].autoscaling", api.scalinggroup.MAX_GROUP_INSTANCES),
    ],
)
def test_autoscaling_is_bounded_as_the_api_says(path: str, most: int) -> None:
    schema = node(CLIQUESET, path)
    assert schema["required"] == ["maxReplicas"]
    high = schema["properties"]["maxReplicas"]
    assert (high["minimum"], high["maximum"], high["format"]) == (1, most, "int32")
    low = schema["properties"]["minReplicas"]
    assert (low["minimum"], low["default"], low["format"]) == (0, 1, "int32")
    metrics = schema["properties"]["metrics"]
    assert metrics["maxItems"] == 16
    assert metrics["items"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert schema["properties"]["behavior"]["x-kubernetes-preserve-unknown-fields"] is True
    (rule,) = schema["x-kubernetes-validations"]
    assert rule["fieldPath"] == ".minReplicas"
    assert "autoscaling.minReplicas" in rule["message"]
    # The clique's and the group's are the same schema but for the bound on maxReplicas.
    assert autoscaling_shape(schema) == autoscaling_shape(
        node(CLIQUESET, ".spec.template.scalingGroups[].autoscaling")
    )


def test_a_scaling_group_cannot_be_scaled_below_min_available() -> None:
    """On `spec`, so that a write through the scale subresource is checked too."""
    (rule,) = node(SCALING_GROUP, ".spec")["x-kubernetes-validations"]
    assert "self.replicas" in rule["rule"] and "self.minAvailable" in rule["rule"]
    assert rule["fieldPath"] == ".replicas"
    assert "kubectl scale" in rule["message"] and "minAvailable" in rule["message"]
    assert "string(" not in rule["messageExpression"]
    assert node(SCALING_GROUP, ".spec")["required"] == ["groupName", "gangIndex"]


@pytest.mark.parametrize(
    ("field", "most"),
    [
        ("labels", shapes.MAX_TEMPLATE_LABELS),
        ("annotations", shapes.MAX_TEMPLATE_ANNOTATIONS),
    ],
)
def test_pod_templates_may_not_carry_the_operators_keys(field: str, most: int) -> None:
    schema = node(CLIQUESET, f".spec.template.cliques[].template.metadata.{field}")
    assert schema["additionalProperties"] == {"type": "string"}
    # The rule walks every key: the estimator needs a bound on how many there are.
    assert schema["maxProperties"] == most
    (rule,) = schema["x-kubernetes-validations"]
    # The same test as labels.is_reserved.
    assert rule["rule"] == (
        f"self.all(k, !k.startsWith('{labels.RESERVED_PREFIX}')"
        f" && !k.contains('{labels.RESERVED_SUBDOMAIN}'))"
    )
    assert field.removesuffix("s") in rule["messageExpression"]


def test_gang_fields_are_bounded_as_the_api_says() -> None:
    for path in (
        ".spec.failurePolicy.minAvailableBreachedSeconds",
        ".spec.failurePolicy.restartBackoff.initialSeconds",
        ".spec.failurePolicy.restartBackoff.maxSeconds",
    ):
        schema = node(CLIQUESET, path)
        assert (schema["minimum"], schema["maximum"]) == (0, api.policies.MAX_FAILURE_SECONDS)
        assert schema["format"] == "int32", path
    restarts = node(CLIQUESET, ".spec.failurePolicy.maxGangRestarts")
    assert (restarts["minimum"], restarts["maximum"]) == (0, api.policies.MAX_GANG_RESTARTS)
    backoff = node(CLIQUESET, ".spec.failurePolicy.restartBackoff")
    (rule,) = backoff["x-kubernetes-validations"]
    assert "self.initialSeconds <= self.maxSeconds" in rule["rule"]
    assert rule["fieldPath"] == ".initialSeconds"
    # No messageExpression: string(int) makes the API server's CEL cost estimate of the
    # whole schema exceed its budget (the CRD is refused).
    assert "messageExpression" not in rule


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        ("topology.kubernetes.io/rack", True),
        ("kubernetes.io/hostname", True),
        ("rack", True),
        ("example.com/Rack_1.a", True),
        ("", False),
        ("/rack", False),
        ("Example.com/rack", False),
        ("rack/", False),
        ("a/b/c", False),
        ("rack-", False),
        ("has space", False),
    ],
)
def test_topology_keys_must_be_qualified_names(key: str, valid: bool) -> None:
    for path in (".spec.placement.pack.topologyKey", ".spec.placement.exclusive.topologyKey"):
        schema = node(CLIQUESET, path)
        assert schema["minLength"] == 1, path
        ok = bool(re.search(schema["pattern"], key)) and len(key) >= schema["minLength"]
        assert ok == valid, (path, key)
    assert node(CLIQUESET, ".spec.placement.pack")["required"] == ["topologyKey"]
    assert node(CLIQUESET, ".spec.placement.exclusive")["required"] == ["topologyKey"]


def test_gang_field_defaults_read_the_same_from_the_structs() -> None:
    spec = msgspec.convert(
        {"template": {"cliques": [{"name": "a", "template": {"spec": {"containers": []}}}]}},
        api.CliqueSetSpec,
    )
    assert spec.gang_scheduling.backend == GangBackend.AUTO
    assert spec.failure_policy.restart_policy == api.GangRestartPolicy.NONE
    assert spec.failure_policy.restart_backoff == api.RestartBackoff(
        initial_seconds=10, max_seconds=300
    )
    assert spec.placement is None
    # Encoding leaves the scalars out (the API server fills them in again).
    encoded = api.to_dict(spec)
    assert encoded["gangScheduling"] == {}
    assert encoded["failurePolicy"] == {"restartBackoff": {}}
    assert "placement" not in encoded


# ---- The Structs and the CRDs agree --------------------------------------------------------


def defaulted(schema: Schema, value: Any) -> Any:
    """`value` with the CRD's defaults applied below it, as the API server does."""
    if not isinstance(value, dict) or schema.get("type") != "object":
        return value
    out = dict(value)
    for name, prop in schema.get("properties", {}).items():
        if name not in out and "default" in prop:
            out[name] = prop["default"]
        if name in out:
            out[name] = defaulted(prop, out[name])
    return out


def bare(t: msgspec.inspect.Type) -> msgspec.inspect.Type:
    """A field's type without its `Annotated` declarations (also inside `| None`)."""
    if isinstance(t, msgspec.inspect.Metadata):
        return bare(t.type)
    if isinstance(t, msgspec.inspect.UnionType):
        return msgspec.inspect.UnionType(tuple(bare(u) for u in t.types))
    return t


def struct_fields(cls: type[msgspec.Struct]) -> dict[str, msgspec.inspect.Field]:
    info = msgspec.inspect.type_info(cls)
    assert isinstance(info, msgspec.inspect.StructType)
    return {f.encode_name: f for f in info.fields}


@pytest.mark.parametrize(
    ("crd", "path", "cls"),
    [
        (CLIQUESET, ".spec", api.CliqueSetSpec),
        (CLIQUESET, ".spec.updateStrategy", api.UpdateStrategy),
        (CLIQUESET, ".spec.gangScheduling", api.GangScheduling),
        (CLIQUESET, ".spec.failurePolicy", api.FailurePolicy),
        (CLIQUESET, ".spec.failurePolicy.restartBackoff", api.RestartBackoff),
        (CLIQUESET, ".spec.placement", api.Placement),
        (CLIQUESET, ".spec.placement.pack", api.PackPolicy),
        (CLIQUESET, ".spec.placement.exclusive", api.ExclusivePolicy),
        (CLIQUESET, ".spec.template", api.CliqueSetTemplate),
        (CLIQUESET, ".spec.template.cliques[]", api.CliqueTemplate),
        (CLIQUESET, ".spec.template.cliques[].autoscaling", api.policies.Autoscaling),
        (CLIQUESET, ".spec.template.scalingGroups[]", api.scalinggroup.ScalingGroup),
        (CLIQUESET, ".spec.template.scalingGroups[].autoscaling", api.policies.Autoscaling),
        (CLIQUESET, ".status", api.CliqueSetStatus),
        (CLIQUESET, ".status.conditions[]", api.Condition),
        (CLIQUE, ".spec", api.CliqueSpec),
        (CLIQUE, ".status", api.CliqueStatus),
        (CLIQUE, ".status.conditions[]", api.Condition),
        (SCALING_GROUP, ".spec", scalinggroup.CliqueScalingGroupSpec),
        (SCALING_GROUP, ".status", scalinggroup.CliqueScalingGroupStatus),
    ],
)
def test_structs_match_the_schema(
    crd: dict[str, Any], path: str, cls: type[msgspec.Struct]
) -> None:
    schema = node(crd, path)
    fields = struct_fields(cls)
    assert set(fields) == set(schema["properties"]), path
    for name, field in fields.items():
        prop = schema["properties"][name]
        where = f"{path}.{name}"
        if "default" in prop:
            default = field.default
            if default is msgspec.NODEFAULT and field.default_factory is not msgspec.NODEFAULT:
                default = msgspec.to_builtins(field.default_factory())
            assert defaulted(prop, default) == defaulted(prop, prop["default"]), where
        elif path.startswith(".spec") and field.required is False:
            # No CRD default: the Python default must mean "absent".
            assert field.default in (None, msgspec.NODEFAULT), where
        if path.startswith(".spec"):
            assert field.required == (name in schema.get("required", [])), where
        elif name in schema.get("required", []):
            # Required by the CRD: the Struct must always encode it.
            assert field.required or not cls.__struct_config__.omit_defaults, where
        if "enum" in prop:
            literal = bare(field.type)
            if isinstance(literal, msgspec.inspect.UnionType) and "default" not in prop:
                # An enum without a CRD default: Literal | None, None meaning "absent".
                rest = [t for t in literal.types if not isinstance(t, msgspec.inspect.NoneType)]
                assert len(rest) == 1, where
                literal = rest[0]
            if isinstance(literal, msgspec.inspect.EnumType):
                # A StrEnum: its members, in the order declared, are the CRD's enum.
                assert [m.value for m in literal.cls] == prop["enum"], where
            else:
                assert isinstance(literal, msgspec.inspect.LiteralType), where
                assert set(literal.values) == set(prop["enum"]), where


@pytest.mark.parametrize(
    ("crd", "first"),
    [
        (CLIQUESET, ["Replicas", "Ready", "Updated"]),
        (CLIQUE, ["Replicas", "Ready", "Updated"]),
        (SCALING_GROUP, ["Replicas", "Ready"]),
    ],
    ids=["CliqueSet", "Clique", "CliqueScalingGroup"],
)
def test_printer_columns_point_at_schema_fields(crd: dict[str, Any], first: list[str]) -> None:
    columns = version(crd)["additionalPrinterColumns"]
    names = [c["name"] for c in columns]
    assert names[: len(first)] == first
    assert names[-1] == "Age"
    for column in columns:
        path = column["jsonPath"]
        if path.startswith(".metadata"):
            continue
        path = re.sub(r"\[\?\(.*\)\]", "[]", path)
        assert node(crd, path), path
