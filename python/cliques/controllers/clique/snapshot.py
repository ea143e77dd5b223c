"""What the Clique planner reads (`CliqueSnapshot`), gathered by the Clique controller
from its caches: the Clique, its pods, its start order and expectations, and, for the
Clique that keeps its gang's readiness gates, the gang (`GangView`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from cliques.api.clique import Clique
from cliques.api.pod import Pod
from cliques.controllers.base import failures


@dataclass(frozen=True)
class CliqueSnapshot:
    clique: Clique
    pods: list[Pod]
    #: Names of the Cliques this one starts after that are not Ready yet.
    waiting_for: list[str] = field(default_factory=list)
    expectations_satisfied: bool = True
    template_hash: str = ""
    algorithm: int = 1
    now: str = "1970-01-01T00:00:00Z"
    #: the API server's refusal of this Clique's last writes, until a write succeeds
    failure: failures.Failure | None = None
    #: the image of the start gate's init container (`start_gate`)
    gate_image: str = ""
    #: the cluster serves Evictions: pods outside PodGroups name the operator's responder
    responder: bool = False
    #: the pods whose deletes were sent and are not in the cache yet (expectations): going,
    #: though the cache may still show them as they were
    deleting: frozenset[str] = frozenset()
    #: with `podReadiness: Gang`, for the Clique that keeps its gang's gates (`keeper`): the
    #: gang's Cliques and their pods (`gang_ready`); None for any other
    gang: GangView | None = None
    #: pods made for a gang restart prefer the nodes of the restart before (`same_nodes`)
    same_nodes: bool = True


@dataclass(frozen=True)
class GangView:
    """A gang as the Clique that keeps its gates (`keeper`) sees it: its Cliques and each
    one's pods, by the Clique's name (`gang_whole`, `_gang_gates`)."""

    cliques: tuple[Clique, ...]
    pods: Mapping[str, Sequence[Pod]]
