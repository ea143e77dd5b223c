"""cliques.api.crdgen: how a Struct and its declarations become a structural schema, and the
`--check` that `make lint` runs on the committed copies."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import msgspec
import pytest
import yaml

from cliques.api import crdgen, schema
from cliques.api.meta import ObjectMeta
from cliques.api.schema import Count, Rule, crd


class Inner(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    __crd__: ClassVar[msgspec.Meta] = crd(rules=[Rule(rule="self.a >= 0", message="a")])

    a: int = 0
    b: int = 2


class Shape(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    __crd__: ClassVar[msgspec.Meta] = crd(preserve_unknown_fields=True)

    name: str


class Spec(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    mode_of_work: Literal["Zeta", "Alpha", "Mid"] = "Mid"
    count: Annotated[Count, crd(maximum=9, description="How many.")] = 1
    maybe: Annotated[int, crd(description="Left out: none.")] | None = None
    names: Annotated[list[Annotated[str, crd(max_length=5)]], crd(list_type="set")] = msgspec.field(
        default_factory=list
    )
    labels: dict[str, str] = msgspec.field(default_factory=dict)
    opaque: dict[str, Any] | None = None
    shaped: Annotated[dict[str, Any], crd(shape=Shape)]
    inner: Annotated[Inner, crd(properties={"b": crd(maximum=3, description="b here")})] = (
        msgspec.field(default_factory=Inner)
    )
    flag: bool = False
    empty: str = ""


class Status(msgspec.Struct, kw_only=True, rename="camel"):
    total: Count = 0
    message: Annotated[str, crd(required=True)] = ""
    gone: Inner | None = None


class Thing(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: Spec
    status: Status | None = None


THING = schema.Resource(
    root=Thing,
    kind="Thing",
    plural="things",
    short_names=("th",),
    description="A thing.",
    columns=(schema.AGE,),
)


def root() -> dict[str, Any]:
    crd_ = crdgen.build(THING)
    out = crd_["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert isinstance(out, dict)
    return out


def test_the_root_has_the_kubernetes_fields_and_the_resource_description() -> None:
    node = root()
    assert node["description"] == "A thing."
    assert node["required"] == ["spec"]
    props = node["properties"]
    assert props["apiVersion"] == props["kind"] == {"type": "string"}
    assert props["metadata"] == {"type": "object"}  # ObjectMeta: no default, no fields
    assert "nullable" not in props["status"]  # omitted when None: never sent as null


def test_fields_take_their_types_defaults_and_declarations() -> None:
    spec = root()["properties"]["spec"]
    assert spec["required"] == ["shaped"]
    props = spec["properties"]
    # A Literal keeps the order it is declared in (msgspec.inspect sorts its values).
    assert props["modeOfWork"] == {
        "type": "string",
        "enum": ["Zeta", "Alpha", "Mid"],
        "default": "Mid",
    }
    assert props["count"] == {
        "type": "integer",
        "format": "int32",
        "default": 1,
        "minimum": 0,
        "maximum": 9,
        "description": "How many.",
    }
    assert props["maybe"] == {
        "type": "integer",
        "format": "int32",
        "description": "Left out: none.",
    }
    assert props["names"] == {
        "type": "array",
        "x-kubernetes-list-type": "set",
        "items": {"type": "string", "maxLength": 5},
    }
    assert props["labels"] == {"type": "object", "additionalProperties": {"type": "string"}}
    assert props["opaque"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert props["shaped"] == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "required": ["name"],
        "properties": {"name": {"type": "string"}},
    }
    # A Struct default is {}: the API server fills in its own defaults below it.
    inner = props["inner"]
    assert inner["default"] == {}
    assert inner["x-kubernetes-validations"] == [{"rule": "self.a >= 0", "message": "a"}]
    assert inner["properties"]["a"]["default"] == 0
    assert inner["properties"]["b"] == {
        "type": "integer",
        "format": "int32",
        "default": 2,
        "maximum": 3,
        "description": "b here",
    }
    assert props["flag"]["default"] is False
    assert "default" not in props["empty"]  # reads the same as absent


def test_a_struct_that_encodes_every_field_has_no_defaults_and_may_be_null() -> None:
    status = root()["properties"]["status"]
    assert status["required"] == ["message"]
    assert "default" not in status["properties"]["total"]
    assert status["properties"]["gone"]["nullable"] is True


def test_the_rendered_yaml_reads_back_as_the_crd_and_says_it_is_generated() -> None:
    text = crdgen.render(THING)
    assert text.startswith("# The Thing CRD, generated by `make crds`")
    assert yaml.safe_load(text) == crdgen.build(THING)
    names = crdgen.build(THING)["spec"]["names"]
    assert names["listKind"] == "ThingList" and names["singular"] == "thing"


class Checked(msgspec.Struct):
    """msgspec's own constraints (enforced when decoding) reach the schema too."""

    n: Annotated[int, msgspec.Meta(ge=1, le=5)]
    s: Annotated[str, msgspec.Meta(min_length=1, max_length=3, pattern="^a")]
    items: Annotated[list[str], msgspec.Meta(max_length=2)]
    keys: Annotated[dict[str, str], msgspec.Meta(max_length=4)]


def test_msgspec_constraints_become_schema_bounds() -> None:
    resource = schema.Resource(
        root=Checked, kind="C", plural="cs", short_names=(), description="", columns=()
    )
    props = crdgen.build(resource)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    assert (props["n"]["minimum"], props["n"]["maximum"]) == (1, 5)
    assert (props["s"]["minLength"], props["s"]["maxLength"], props["s"]["pattern"]) == (1, 3, "^a")
    assert props["items"]["maxItems"] == 2
    assert props["keys"]["maxProperties"] == 4


class Floaty(msgspec.Struct):
    x: float


class Either(msgspec.Struct):
    x: int | bool


class Exclusive(msgspec.Struct):
    x: Annotated[int, msgspec.Meta(gt=0)]


class Misnamed(msgspec.Struct):
    inner: Annotated[Inner, crd(properties={"c": crd(maximum=1)})]


class IntOrString(msgspec.Struct, omit_defaults=True):
    x: int | str = 0


def test_int_or_string_is_an_int_or_string_node() -> None:
    resource = schema.Resource(
        root=IntOrString, kind="X", plural="xs", short_names=(), description="", columns=()
    )
    (version,) = crdgen.build(resource)["spec"]["versions"]
    node = version["schema"]["openAPIV3Schema"]["properties"]["x"]
    assert node == {
        "default": 0,
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }


@pytest.mark.parametrize("cls", [Floaty, Either, Exclusive, Misnamed])
def test_types_without_a_structural_schema_are_refused(cls: type[msgspec.Struct]) -> None:
    resource = schema.Resource(
        root=cls, kind="X", plural="xs", short_names=(), description="", columns=()
    )
    with pytest.raises(crdgen.SchemaError):
        crdgen.build(resource)


def test_check_finds_stale_and_missing_files_and_writing_fixes_them(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert crdgen.main([str(a), str(b)]) == 0
    assert crdgen.main(["--check", str(a), str(b)]) == 0
    name = sorted(crdgen.generate())[0]
    (a / name).write_text((a / name).read_text() + "# edited\n")
    (b / name).unlink()
    assert crdgen.sync([a, b], check=True) == [str(a / name), str(b / name)]
    assert crdgen.main(["--check", str(a), str(b)]) == 1
    assert not (b / name).exists()  # --check writes nothing
    assert crdgen.main([str(a), str(b)]) == 0
    assert crdgen.sync([a, b], check=True) == []
