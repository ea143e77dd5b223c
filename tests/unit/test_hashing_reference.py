"""The pure-Python reference (tests/reference_canonical.py) against docs/hashing.md's examples.

The reference is what the Rust core is checked against, so it is itself checked here, rule
by rule, with the examples the specification gives.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from tests import reference_canonical as ref


def canon(doc: object, kind: str = "PodTemplateSpec") -> str:
    return ref.canonical_json(doc, kind).decode()  # type: ignore[arg-type]


def main_container(**fields: object) -> dict[str, object]:
    return {"spec": {"containers": [{"name": "main", **fields}]}}


@pytest.mark.parametrize(
    ("spellings", "expected"),
    [
        (["1", "1000m", 1, 1.0, "1e0", "+1", "1.", "0.001k", "1000000000n"], "1"),
        (["1Gi", "1024Mi", "1073741824", 1073741824, "1048576Ki"], "1073741824"),
        (["0.5", "500m", 0.5, "5e-1", "500000u", ".5", "0.5e0"], "0.5"),
        (["0", "0m", "-0", "0Gi", 0, "0e5"], "0"),
        (["1.5Gi", "1536Mi"], "1610612736"),
        (["1E"], "1000000000000000000"),
        (["1Ei"], str(2**60)),
        (["-1.5"], "-1.5"),
        (["0.1n", "0.0000000001", "1e-100"], "0.000000001"),  # rounded away from zero
        (["-0.0000000001"], "-0.000000001"),
        (["1.0000000001"], "1.000000001"),
        (["12.3400"], "12.34"),
        (["1e100"], "1" + "0" * 100),
    ],
)
def test_quantity_spellings(spellings: list[object], expected: str) -> None:
    for spelling in spellings:
        out = canon(main_container(resources={"limits": {"cpu": spelling}}))
        assert f'"limits":{{"cpu":"{expected}"}}' in out, spelling


@pytest.mark.parametrize(
    "bad",
    [
        "abc",
        "",
        " 1",
        "1 ",
        "1KB",
        "1k1",
        "1e101",
        "1e-101",
        "--1",
        "-",
        "+",
        ".",
        "1.2.3",
        "1e",
        "1ki",
    ],
)
def test_invalid_quantities(bad: str) -> None:
    with pytest.raises(
        ValueError, match=r"spec\.containers\[0\]\.resources\.limits\.cpu: invalid quantity"
    ):
        canon(main_container(resources={"limits": {"cpu": bad}}))


def test_parse_quantity_is_exact() -> None:
    assert ref.parse_quantity("1.1Ki") == Fraction(11264, 10)
    assert ref.format_quantity(Fraction(1, 3)) == "0.333333334"
    assert ref.format_quantity(Fraction(-1, 3)) == "-0.333333334"


def test_objects_sorted_nulls_and_empties_dropped() -> None:
    doc = {
        "metadata": {"labels": {}, "annotations": {"b": "1", "a": None}, "creationTimestamp": None},
        "spec": {
            "containers": [{"name": "c", "args": [], "env": [], "securityContext": {}}],
            "volumes": [{"name": "v", "emptyDir": {}}],
            "nodeSelector": {},
            "zzz-unknown": {"x": [], "y": {}, "z": None},
        },
    }
    assert canon(doc) == (
        '{"metadata":{"annotations":{"b":"1"}},"spec":{"containers":[{"name":"c",'
        '"securityContext":{}}],"volumes":[{"emptyDir":{},"name":"v"}],"zzz-unknown":{"y":{}}}}'
    )


def test_keys_sorted_by_utf8_bytes() -> None:
    out = canon(
        {"metadata": {"labels": {"é": "1", "z": "2", "Z": "3", "\U0001f600": "4", "\uffff": "5"}}}
    )
    assert out == '{"metadata":{"labels":{"Z":"3","z":"2","é":"1","\uffff":"5","\U0001f600":"4"}}}'


def test_map_lists_sorted_by_key_with_defaults() -> None:
    doc = main_container(
        ports=[
            {"containerPort": 80, "protocol": "UDP"},
            {"containerPort": 9090},
            {"containerPort": 80},
        ]
    )
    assert (
        '"ports":[{"containerPort":80},{"containerPort":80,"protocol":"UDP"},{"containerPort":9090}]'
        in canon(doc)
    )


def test_map_list_duplicate_reports_second_path() -> None:
    doc = {"spec": {"containers": [{"name": "main"}, {"name": "side"}, {"name": "main"}]}}
    with pytest.raises(ValueError, match=r'^spec\.containers\[2\]: duplicate key name="main"$'):
        canon(doc)
    # A key's default counts for duplicates: protocol defaults to TCP.
    with pytest.raises(ValueError, match=r"spec\.containers\[0\]\.ports\[1\]: duplicate key"):
        canon(
            main_container(ports=[{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}])
        )


def test_ordered_and_atomic_lists_keep_order() -> None:
    doc = {
        "spec": {
            "initContainers": [{"name": "b"}, {"name": "a"}],
            "containers": [
                {"name": "m", "env": [{"name": "Y"}, {"name": "X"}], "args": ["2", "1"]}
            ],
            "tolerations": [{"key": "b"}, {"key": "a"}],
        }
    }
    out = canon(doc)
    assert '"initContainers":[{"name":"b"},{"name":"a"}]' in out
    assert '"env":[{"name":"Y"},{"name":"X"}]' in out
    assert '"args":["2","1"]' in out
    assert '"tolerations":[{"key":"b"},{"key":"a"}]' in out


def test_set_lists_sorted_by_canonical_bytes() -> None:
    doc = {"metadata": {"finalizers": ["b", "a", "c"]}}
    assert canon(doc) == '{"metadata":{"finalizers":["a","b","c"]}}'


def test_numbers() -> None:
    out = canon({"spec": {"terminationGracePeriodSeconds": 30.0, "x": [0.1, 1e-7, -2.5, 1e21, 3]}})
    numbers = "[0.1,1e-07,-2.5,1000000000000000000000,3]"
    assert out == '{"spec":{"terminationGracePeriodSeconds":30,"x":' + numbers + "}}"


def test_strings_escaped() -> None:
    out = canon({"metadata": {"labels": {"a": 'q"b\\n\n\r\t\b\f\x01\x1f\x7fé/'}}})
    assert out == '{"metadata":{"labels":{"a":"q\\"b\\\\n\\n\\r\\t\\b\\f\\u0001\\u001f\x7fé/"}}}'


def test_podspec_root_paths_have_no_prefix() -> None:
    with pytest.raises(
        ValueError, match=r"^containers\[0\]\.resources\.requests\.memory: invalid quantity"
    ):
        canon(
            {"containers": [{"name": "a", "resources": {"requests": {"memory": "x"}}}]}, "PodSpec"
        )


def test_hash_alphabet_and_known_value() -> None:
    digest = ref.template_hash({"spec": {"containers": [{"name": "a"}]}})
    assert 1 <= len(digest) <= 20
    assert set(digest) <= set(ref.SAFE_ALPHABET)
    # FNV-1a 64 reference vectors, then the encoding by hand.
    assert ref.fnv1a_64(b"") == 0xCBF29CE484222325
    assert ref.fnv1a_64(b"foobar") == 0x85944171F73967E8
    assert ref.fnv1a_32(b"foobar") == 0xBF9CF968
    assert ref.safe_encode("0123456789") == "456789bcdf"  # b"0" = 48, 48 % 27 = 21 -> "4"
    assert ref.hash_of_canonical(b"") == ref.safe_encode(str(0xCBF29CE484222325))


@pytest.mark.parametrize(
    "bad",
    [
        b"[1]",
        b'"x"',
        b"1",
        b"null",
        b"\xff",
        b'{"a": NaN}',
        b'{"a": Infinity}',
        b"{",
        b'{"a":1}x',
        b'{"a":"\\ud800"}',
    ],
)
def test_invalid_documents(bad: bytes) -> None:
    with pytest.raises(ValueError):
        ref.canonical_json(bad)


def test_type_mismatch_is_an_error_with_path() -> None:
    with pytest.raises(ValueError, match=r"^spec\.containers: expected a list"):
        canon({"spec": {"containers": {"name": "a"}}})
    with pytest.raises(ValueError, match=r"^spec\.securityContext: expected an object"):
        canon({"spec": {"securityContext": "yes"}})


def test_idempotent_and_input_forms_agree() -> None:
    doc = main_container(resources={"limits": {"cpu": "1500m", "memory": "1Gi"}}, args=["x"])
    once = ref.canonical_json(doc)
    assert ref.canonical_json(once) == once
    assert ref.canonical_json(once.decode()) == once


def test_numbers_follow_python_json() -> None:
    """Not in the spec (see the reference's docstring): JSON numbers as Python reads them."""
    cases = {
        "30.0": "30",
        "1e23": "99999999999999991611392",  # the exact integer the double is
        "0.00001": "1e-05",  # repr's layout
        "123456789012345678901234567890": "123456789012345678901234567890",
        "-0.0": "0",
    }
    for literal, expected in cases.items():
        doc = '{"spec": {"x": ' + literal + "}}"
        assert canon(doc) == '{"spec":{"x":' + expected + "}}", literal
    # A quantity given as a JSON number is read as the double it is.
    doc = '{"spec": {"overhead": {"cpu": 0.10000000000000000001}}}'
    assert canon(doc) == '{"spec":{"overhead":{"cpu":"0.1"}}}'


def test_scalar_fields_take_any_json_value() -> None:
    out = canon({"spec": {"hostname": {"b": [], "a": [1, None, []]}}})
    assert out == '{"spec":{"hostname":{"a":[1,null,[]]}}}'


def test_map_list_keys_must_be_strings_or_numbers() -> None:
    with pytest.raises(ValueError, match=r"^spec\.containers\[1\]\.name: map-list key must be"):
        canon({"spec": {"containers": [{"name": "a"}, {"name": True}]}})
    # Numbers sort before strings, and by value.
    out = canon(
        main_container(
            ports=[{"containerPort": "80"}, {"containerPort": 443}, {"containerPort": 80.0}]
        )
    )
    assert '"ports":[{"containerPort":80},{"containerPort":443},{"containerPort":"80"}]' in out


def test_nesting_limit() -> None:
    """Not in the spec: a value deeper than 100 path segments is refused."""

    def nested(levels: int) -> dict[str, object]:
        deep: object = "x"
        for _ in range(levels):
            deep = [deep]
        return {"spec": {"x": deep}}  # "x" at depth 2 + levels

    assert canon(nested(98)).endswith('[["x"]]]' + "]" * 95 + "}}")
    with pytest.raises(ValueError, match=r"^spec\.x(\[0\]){99}: nested deeper than 100 levels$"):
        canon(nested(99))


def test_first_error_is_the_first_met_in_canonical_order() -> None:
    # Members in sorted key order: "containers" before "securityContext".
    with pytest.raises(ValueError, match=r"^spec\.containers: expected a list"):
        canon({"spec": {"securityContext": 1, "containers": "x"}})
    # A map list's key checks come after all its elements; key types before duplicates.
    with pytest.raises(ValueError, match=r"^spec\.containers\[1\]\.resources\.limits\.cpu"):
        canon(
            {
                "spec": {
                    "containers": [
                        {"name": "a"},
                        {"name": "a", "resources": {"limits": {"cpu": "?"}}},
                    ]
                }
            }
        )
    with pytest.raises(ValueError, match=r"^spec\.containers\[2\]\.name: map-list key must be"):
        canon({"spec": {"containers": [{"name": "a"}, {"name": "a"}, {"name": False}]}})


def test_python_values_that_are_not_json_are_a_type_error() -> None:
    for doc in ({"spec": {"containers": "x", "x": {1}}}, {"spec": {1: "a"}}, {"spec": {"x": b""}}):
        with pytest.raises(TypeError):
            ref.canonical_json(doc)
