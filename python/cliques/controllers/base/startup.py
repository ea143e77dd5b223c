"""Startup ordering of the cliques of a gang (pure).

`AnyOrder`: nobody waits. `InOrder`: each clique waits for the one before it in the list.
`Explicit`: each clique waits for the cliques named in its `startsAfter`. The API server
already refuses unknown names and self-references; a cycle is only visible here, and is
reported as an `InvalidSpec` with the cycle spelled out.
"""

from __future__ import annotations

from cliques.api.cliqueset import CliqueSetSpec, StartupType


class StartupCycle(ValueError):
    """startsAfter forms a cycle; the message names it (`a -> b -> a`)."""


def dependencies(spec: CliqueSetSpec) -> dict[str, list[str]]:
    """For each clique (role) name, the role names it starts after."""
    cliques = spec.template.cliques
    if spec.startup_type == StartupType.IN_ORDER:
        return {c.name: ([cliques[i - 1].name] if i else []) for i, c in enumerate(cliques)}
    if spec.startup_type == StartupType.EXPLICIT:
        deps = {c.name: list(c.starts_after) for c in cliques}
        find_cycle(deps)
        return deps
    return {c.name: [] for c in cliques}


def find_cycle(deps: dict[str, list[str]]) -> None:
    """Raise StartupCycle if the graph has a cycle (or names an unknown clique)."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for dep in deps.get(node, []):
            if dep not in deps:
                raise StartupCycle(f"clique {node!r} starts after unknown clique {dep!r}")
            if state.get(dep) == 1:
                cycle = [*path[path.index(dep) :], dep]
                raise StartupCycle("startsAfter cycle: " + " -> ".join(cycle))
            if state.get(dep) is None:
                visit(dep)
        path.pop()
        state[node] = 2

    for node in sorted(deps):
        if node not in state:
            visit(node)
