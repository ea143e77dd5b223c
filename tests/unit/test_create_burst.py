"""One plan asks for at most CREATE_BURST creates, however large the object; the passes that
follow (each after the creates before it are seen) create the rest, lowest indices first."""

from __future__ import annotations

from cliques.api.clique import Clique
from cliques.controllers.base.actions import CREATE_BURST
from cliques.controllers.clique import planner as clique_planner
from cliques.controllers.clique.planner import CliqueSnapshot
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.kube.resources import CLIQUES, SERVICES

from .planner_fixtures import NOW, clique, cliqueset, pod
from .planner_fixtures import services as fixture_services
from .planner_fixtures import set_snapshot as snapshot


def test_a_huge_cliqueset_is_created_in_bursts_lowest_gangs_first() -> None:
    cqs = cliqueset(replicas=1_000, roles=(("leader", 1), ("worker", 4)))
    made: list[Clique] = []
    services = 0
    passes = 0
    while True:
        snap = snapshot(cqs, list(made), services=fixture_services(services))
        out = cliqueset_planner.plan(snap)
        if not out.creates:
            break
        passes += 1
        assert len(out.creates) <= CREATE_BURST + 1  # a gang's Cliques go out together
        for c in out.creates:
            if c.resource == CLIQUES:
                spec = c.body["spec"]
                made.append(
                    clique(spec["gangIndex"], spec["cliqueName"], replicas=spec["replicas"])
                )
            else:
                assert c.resource == SERVICES and c.name == f"llama-{services}"
                services += 1
        gangs = sorted({c.spec.gang_index for c in made})
        assert gangs == list(range(len(gangs))), "lowest gangs first"
    assert (len(made), services) == (2_000, 1_000)
    assert passes >= 3_000 // (CREATE_BURST + 1)


def test_a_clique_of_many_pods_is_created_in_bursts() -> None:
    c = clique(0, "worker", replicas=1_000)
    pods = []
    while True:
        out = clique_planner.plan(CliqueSnapshot(clique=c, pods=list(pods), now=NOW))
        if not out.creates:
            break
        assert len(out.creates) <= CREATE_BURST
        indices = [int(a.name.rsplit("-", 1)[1]) for a in out.creates]
        assert indices == list(range(len(pods), len(pods) + len(indices)))
        pods += [pod(c, i) for i in indices]
    assert len(pods) == 1_000
