"""`cliques._core.Selector`: Kubernetes label selectors with apimachinery semantics."""

from __future__ import annotations

from typing import Any

import pytest

from cliques import _core

LABELS = {"app": "web", "tier": "frontend", "env": ""}


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("", ""),
        ("a=b", "a=b"),
        ("a==b", "a=b"),
        (" a = b , c != d ", "a=b,c!=d"),
        ("a in (y, x)", "a in (x,y)"),
        ("a notin (x)", "a notin (x)"),
        ("!a", "!a"),
        ("b,a", "a,b"),
        ("app.kubernetes.io/name=web", "app.kubernetes.io/name=web"),
    ],
)
def test_string_form(text: str, canonical: str) -> None:
    sel = _core.Selector(text)
    assert str(sel) == canonical
    assert repr(sel) == f"Selector('{canonical}')"
    assert str(_core.Selector(canonical)) == canonical
    assert sel.is_empty() == (canonical == "")


@pytest.mark.parametrize(
    ("spec", "canonical"),
    [
        (None, ""),
        ({}, ""),
        ({"matchLabels": {"b": "2", "a": "1"}}, "a=1,b=2"),
        (
            {
                "matchLabels": {"app": "web"},
                "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["b", "a"]},
                    {"key": "canary", "operator": "DoesNotExist"},
                    {"key": "zone", "operator": "NotIn", "values": ["x"]},
                    {"key": "gpu", "operator": "Exists"},
                ],
            },
            "app=web,!canary,gpu,tier in (a,b),zone notin (x)",
        ),
    ],
)
def test_label_selector_form(spec: Any, canonical: str) -> None:
    assert str(_core.Selector(spec)) == canonical
    assert str(_core.Selector()) == ""


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("", True),
        ("app=web", True),
        ("app=db", False),
        ("app!=db", True),
        ("missing!=x", True),
        ("missing=x", False),
        ("app in (web,db)", True),
        ("missing in (x)", False),
        ("app notin (web)", False),
        ("missing notin (x)", True),
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("env=", True),
        ("tier=frontend,app=web", True),
        ("tier=frontend,app=db", False),
    ],
)
def test_matching(selector: str, matches: bool) -> None:
    assert _core.Selector(selector).matches(LABELS) is matches


def test_no_labels() -> None:
    assert _core.Selector("").matches(None)
    assert _core.Selector("!a,b notin (c)").matches(None)
    assert _core.Selector("!a").matches({})
    assert not _core.Selector("a").matches(None)


def test_filter() -> None:
    sel = _core.Selector({"matchLabels": {"app": "web"}})
    sets: list[dict[str, str] | None] = [
        {"app": "web"},
        None,
        {"app": "db"},
        {"app": "web", "x": "y"},
        {},
    ]
    assert sel.filter(sets) == [0, 3]
    assert _core.Selector().filter(sets) == [0, 1, 2, 3, 4]
    assert sel.filter([]) == []
    assert sel.filter(tuple(sets)) == [0, 3]
    many = [{"app": "web" if i % 3 == 0 else "db"} for i in range(3000)]
    assert sel.filter(many) == list(range(0, 3000, 3))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("a in ()", "invalid label selector"),
        ("a,", "invalid label selector"),
        ("a>1", "not supported"),
        ("-a=b", "invalid label key"),
        ("a=-b", "invalid label value"),
        ({"matchLabels": {"a b": "c"}}, r"^matchLabels\.a b: invalid label key"),
        ({"matchLabel": {}}, "^matchLabel: unknown field"),
        (
            {"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["b"]}]},
            r'^matchExpressions\[0\]\.operator: "Equals" is not a valid label selector operator',
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In"}]},
            r"^matchExpressions\[0\]: values must be non-empty",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            r"^matchExpressions\[0\]: values must be empty",
        ),
        ({"matchLabels": {"a": 1}}, r"^matchLabels\.a: expected a string, got number"),
    ],
)
def test_invalid_selectors(spec: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _core.Selector(spec)


def test_type_errors() -> None:
    with pytest.raises(TypeError):
        _core.Selector(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _core.Selector("a").matches({"a": 1})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        _core.Selector("a").matches(["a"])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _core.Selector("a").filter({"a": "b"})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _core.Selector("a").filter("ab")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _core.Selector("a").filter([{"a": "b"}, 3])  # type: ignore[list-item]


def test_selector_is_final_and_frozen() -> None:
    sel = _core.Selector("a=b")
    with pytest.raises(TypeError):

        class Sub(_core.Selector):  # type: ignore[misc]
            pass

    with pytest.raises(AttributeError):
        sel.x = 1  # type: ignore[attr-defined]
