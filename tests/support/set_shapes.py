"""CliqueSet manifests (plain JSON) at each size bound and one past it, counted as the
operator makes them (`cliques.api.sizes`): the unit tests count and plan them, the
integration tests send them to the API server."""

from __future__ import annotations

import json
from typing import Any

POD: dict[str, Any] = {"spec": {"containers": [{"name": "m", "image": "i"}]}}


def clique(
    name: str, replicas: int = 1, autoscale: int | None = None, template: Any = None
) -> dict[str, Any]:
    """A clique template of `replicas` pods, autoscaled up to `autoscale` pods if given."""
    out: dict[str, Any] = {"name": name, "replicas": replicas, "template": template or POD}
    if autoscale is not None:
        out["autoscaling"] = {"minReplicas": 1, "maxReplicas": autoscale}
    return out


def group(
    name: str, cliques: list[str], replicas: int = 1, autoscale: int | None = None
) -> dict[str, Any]:
    """A scaling group of `replicas` instances, autoscaled up to `autoscale` if given."""
    out: dict[str, Any] = {"name": name, "cliques": cliques, "replicas": replicas}
    if autoscale is not None:
        out["autoscaling"] = {"minReplicas": 1, "maxReplicas": autoscale}
    return out


def manifest(
    replicas: int,
    cliques: list[dict[str, Any]],
    groups: list[dict[str, Any]] | None = None,
    name: str = "big",
) -> dict[str, Any]:
    """A CliqueSet of `replicas` gangs of `cliques`, with scaling groups `groups`."""
    template: dict[str, Any] = {"cliques": cliques}
    if groups:
        template["scalingGroups"] = groups
    return {
        "apiVersion": "cliques.dev/v1alpha1",
        "kind": "CliqueSet",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "template": template},
    }


def million() -> dict[str, Any]:
    """625 gangs of 16 cliques of 10 pods in 8 scaling groups of 100 instances: as the CRD
    counted before it counted instances, 10,000 Cliques, 100,000 pods and 160 pods a gang;
    as they are made, 1,000,000 Cliques, 10,000,000 pods and 16,000 pods a gang."""
    return manifest(
        625,
        [clique(f"c{i}", 10) for i in range(16)],
        [group(f"g{i}", [f"c{2 * i}", f"c{2 * i + 1}"], replicas=100) for i in range(8)],
    )


def gang_pods(one: int) -> dict[str, Any]:
    """One gang of 5,000 + `one` pods: an HPA's maxReplicas on a clique outside the groups
    (1,000), 50 pods x a group's 80 instances at its maxReplicas, and `one`."""
    return manifest(
        1,
        [clique("auto", 1, autoscale=1_000), clique("p", 50), clique("one", one)],
        [group("g", ["p"], replicas=1, autoscale=80)],
    )


def set_cliques(past: bool) -> dict[str, Any]:
    """10,000 Cliques: 100 gangs of a clique and a group of 99 instances at its maxReplicas;
    past: 10,001 = 137 gangs x (1 + 72 instances)."""
    if past:
        return manifest(137, [clique("a", 0), clique("b", 0)], [group("h", ["b"], replicas=72)])
    return manifest(100, [clique("a", 0), clique("b", 0)], [group("h", ["b"], autoscale=99)])


def set_pods(past: bool) -> dict[str, Any]:
    """100,000 pods: 40 gangs of 1,000 (an HPA's maxReplicas) + 13 pods x 100 instances
    + 200. No set has 100,001 pods (11 x 9,091: past the bound of a gang), so one past is
    the next count a set can have: 42 gangs of 1,000 + 1,300 + 81, 100,002 pods."""
    gangs, rest = (42, 81) if past else (40, 200)
    return manifest(
        gangs,
        [clique("auto", 1, autoscale=1_000), clique("q", 13), clique("r", rest)],
        [group("g", ["q"], replicas=100)],
    )


def padded(size: int) -> dict[str, Any]:
    """A pod template whose compact JSON is `size` bytes (an annotation pads it)."""
    empty = {"metadata": {"annotations": {"pad": ""}}, **POD}
    pad = size - len(json.dumps(empty, separators=(",", ":")))
    assert pad >= 0, size
    return {"metadata": {"annotations": {"pad": "x" * pad}}, **POD}


def template_bytes(past: bool) -> dict[str, Any]:
    """Cliques that store 256 MiB of pod templates (one byte more a gang if `past`): 2
    gangs of a 128-byte clique and a group of 100 instances of 15 cliques of 1,342,176
    bytes of templates together (2 x (128 + 100 x 1,342,176) = 2**28). The set is about
    1.35 MB, its 3,002 Cliques 0 pods."""
    rest = 2**27 - 128
    assert rest % 100 == 0
    sizes = [rest // 100 // 15 + (1 if i < rest // 100 % 15 else 0) for i in range(15)]
    cliques = [clique("o", 0, template=padded(128 + past))]
    cliques += [clique(f"c{i}", 0, template=padded(size)) for i, size in enumerate(sizes)]
    return manifest(2, cliques, [group("g", [f"c{i}" for i in range(15)], replicas=100)])
