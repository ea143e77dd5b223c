"""Startup ordering and cycle detection."""

import pytest

from cliques.api.cliqueset import CliqueSetSpec, CliqueSetTemplate
from cliques.api.cliquetemplate import CliqueTemplate
from cliques.controllers.base import startup

T = {"spec": {"containers": [{"name": "m", "image": "x"}]}}


def spec(kind: str, *cliques: tuple[str, list[str]]) -> CliqueSetSpec:
    return CliqueSetSpec(
        startup_type=kind,  # type: ignore[arg-type]
        template=CliqueSetTemplate(
            cliques=[CliqueTemplate(name=n, starts_after=a, template=T) for n, a in cliques]
        ),
    )


@pytest.mark.parametrize(
    ("kind", "cliques", "expected"),
    [
        ("AnyOrder", [("a", []), ("b", [])], {"a": [], "b": []}),
        ("InOrder", [("a", []), ("b", []), ("c", [])], {"a": [], "b": ["a"], "c": ["b"]}),
        (
            "Explicit",
            [("a", []), ("b", ["a"]), ("c", ["a", "b"])],
            {"a": [], "b": ["a"], "c": ["a", "b"]},
        ),
    ],
)
def test_dependencies(kind: str, cliques: list[tuple[str, list[str]]], expected: object) -> None:
    assert startup.dependencies(spec(kind, *cliques)) == expected


def test_cycle_is_named() -> None:
    with pytest.raises(startup.StartupCycle, match="a -> b -> c -> a"):
        startup.dependencies(spec("Explicit", ("a", ["b"]), ("b", ["c"]), ("c", ["a"])))


def test_self_cycle() -> None:
    with pytest.raises(startup.StartupCycle, match="x -> x"):
        startup.dependencies(spec("Explicit", ("x", ["x"])))
