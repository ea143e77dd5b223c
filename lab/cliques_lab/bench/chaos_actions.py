"""What `cliques bench chaos` does to the cluster, drawn from one seed (pure: no I/O).

A `Shape` is a valid CliqueSet the run keeps track of (its gangs, cliques, pods, startup
type, update strategy); `manifest` turns it into the object. `Draw` draws from a seeded
`random.Random` the next step of a run: a new valid set, an invalid or hostile object (each
with what the API server or the operator must say about it), an edit of a live set (image
or env change that rolls, a resize of a clique, a scale through the subresource, a
re-order that must change nothing, an annotation), a delete with a propagation policy, or
a fault. The same seed gives the same sequence of steps.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from typing import Any, Literal

IMAGES = ("busybox:1.35", "busybox:1.36", "busybox:1.37")
STARTUPS = ("AnyOrder", "InOrder", "Explicit")
PROPAGATIONS = ("Background", "Foreground", "Orphan")
FAULTS = (
    "kill-worker",
    "cut-watches",
    "stall-watches",
    "throttle",
    "pod-loss",
    "apiserver-restart",
)
EDITS = ("image", "env", "scale", "resize", "reorder", "annotate")
#: A nested pod template this deep is stored by the API server but read by no JSON decoder.
DEEP = 1200
DEEP_PLACEHOLDER = "@@nested@@"


@dataclass(frozen=True)
class CliqueShape:
    name: str
    replicas: int
    min_available: int
    starts_after: tuple[str, ...] = ()


@dataclass(frozen=True)
class Shape:
    """A valid CliqueSet: everything its manifest and the invariants need."""

    name: str
    replicas: int
    cliques: tuple[CliqueShape, ...]
    startup: str = "AnyOrder"
    strategy: str = "RollingUpdate"
    max_unavailable: int = 1
    image: str = IMAGES[1]
    env: int = 0  # the value of env CHAOS_REV: a change rolls every gang
    reordered: bool = False  # containers and ports listed in another order (same hash)
    note: str = ""  # an annotation on the CliqueSet only (never rolls)

    def clique(self, name: str) -> CliqueShape | None:
        return next((c for c in self.cliques if c.name == name), None)


def pod_template(shape: Shape, clique: CliqueShape) -> dict[str, Any]:
    ports = [
        {"name": "http", "containerPort": 8000},
        {"name": "metrics", "containerPort": 9000},
    ]
    containers: list[dict[str, Any]] = [
        {
            "name": "main",
            "image": shape.image,
            "env": [{"name": "CHAOS_REV", "value": str(shape.env)}],
            "ports": ports[::-1] if shape.reordered else ports,
            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
        },
        {"name": "sidecar", "image": "busybox:1.36"},
    ]
    return {
        "metadata": {"labels": {"app": shape.name, "role": clique.name}},
        "spec": {"containers": containers[::-1] if shape.reordered else containers},
    }


def manifest(shape: Shape) -> dict[str, Any]:
    cliques = []
    for c in shape.cliques:
        entry: dict[str, Any] = {
            "name": c.name,
            "replicas": c.replicas,
            "minAvailable": c.min_available,
            "template": pod_template(shape, c),
        }
        if c.starts_after:
            entry["startsAfter"] = list(c.starts_after)
        cliques.append(entry)
    meta: dict[str, Any] = {"name": shape.name}
    if shape.note:
        meta["annotations"] = {"chaos/note": shape.note}
    return {
        "apiVersion": "cliques.dev/v1alpha1",
        "kind": "CliqueSet",
        "metadata": meta,
        "spec": {
            "replicas": shape.replicas,
            "startupType": shape.startup,
            "gangScheduling": {"backend": "None"},
            "updateStrategy": {"type": shape.strategy, "maxUnavailable": shape.max_unavailable},
            "template": {"cliques": cliques},
        },
    }


@dataclass(frozen=True)
class Invalid:
    """An object that must be refused or reported. `where` is `api` (the API server refuses
    it, its message holding `expect`), `condition` (stored, then reported by the operator as
    Degraded/InvalidSpec holding `expect`) or `conflict` (a foreign Service holds the name of
    the set's Service: ReplicaFailure/NameConflict until the Service goes away)."""

    kind: str
    name: str
    where: Literal["api", "condition", "conflict"]
    expect: str
    body: dict[str, Any] = field(default_factory=dict)
    shape: Shape | None = None  # for `conflict`: the (valid) set behind the conflict

    def raw(self) -> bytes:
        """The manifest as JSON bytes (the deep one built as text: no encoder goes there)."""
        import json

        text = json.dumps(self.body)
        if self.kind == "deep-template":
            nested = '{"n":' * DEEP + '{"key":"zone","operator":"Exists"}' + "}" * DEEP
            text = text.replace(f'"{DEEP_PLACEHOLDER}"', nested)
        return text.encode()


@dataclass(frozen=True)
class Step:
    """One step of a run. `op`: create | invalid | edit | delete | fault | unblock."""

    op: str
    kind: str = ""  # the edit, the propagation policy, the fault, the invalid kind
    name: str = ""  # the CliqueSet
    shape: Shape | None = None  # create/edit: the desired set after the step
    invalid: Invalid | None = None
    seconds: float = 0.0  # throttle: how long
    fraction: float = 0.0  # throttle: which part of the requests
    pick: float = 0.0  # pod-loss / kill-worker: which one (0..1 of the candidates)

    def describe(self) -> str:
        what = f"{self.op} {self.kind}".strip()
        return f"{what} {self.name}".strip()


class Draw:
    """The steps of one run, drawn from `seed`; `faults` are the fault kinds allowed."""

    def __init__(
        self, seed: int, faults: tuple[str, ...] = FAULTS, *, max_sets: int = 4, max_pods: int = 8
    ) -> None:
        self.rng = random.Random(seed)
        self.faults = faults
        self.max_sets = max_sets
        self.max_pods = max_pods  # pods per set, at most (the cluster is small)
        self.serial = 0

    def _name(self, prefix: str = "c") -> str:
        self.serial += 1
        return f"{prefix}{self.serial}"

    def shape(self, name: str | None = None) -> Shape:
        r = self.rng
        startup = r.choice(STARTUPS)
        n_cliques = r.randint(1, 3)
        cliques: list[CliqueShape] = []
        for i, role in enumerate(("lead", "work", "aux")[:n_cliques]):
            replicas = r.randint(1, 2)
            after = (cliques[i - 1].name,) if startup == "Explicit" and i > 0 else ()
            cliques.append(CliqueShape(role, replicas, r.randint(1, replicas), after))
        per_gang = sum(c.replicas for c in cliques)
        gangs = r.randint(1, max(1, min(3, self.max_pods // per_gang)))
        return Shape(
            name=name or self._name(),
            replicas=gangs,
            cliques=tuple(cliques),
            startup=startup,
            strategy=r.choice(("RollingUpdate", "RollingUpdate", "RollingUpdate", "Recreate")),
            max_unavailable=r.randint(1, 2),
            image=r.choice(IMAGES),
        )

    def edit(self, shape: Shape) -> tuple[str, Shape]:
        r = self.rng
        kind = r.choice(EDITS)
        per_gang = sum(c.replicas for c in shape.cliques)
        if kind == "image":
            image = r.choice([i for i in IMAGES if i != shape.image])
            return kind, dataclasses.replace(shape, image=image)
        if kind == "env":
            return kind, dataclasses.replace(shape, env=shape.env + 1)
        if kind == "scale":
            most = max(1, self.max_pods // per_gang)
            choices = [n for n in range(0, min(3, most) + 1) if n != shape.replicas]
            return kind, dataclasses.replace(shape, replicas=r.choice(choices or [shape.replicas]))
        if kind == "resize":
            i = r.randrange(len(shape.cliques))
            c = shape.cliques[i]
            replicas = 1 if c.replicas == 2 else 2
            if (per_gang - c.replicas + replicas) * shape.replicas > self.max_pods:
                replicas = 1
            resized = dataclasses.replace(
                c, replicas=replicas, min_available=min(c.min_available, replicas)
            )
            cliques = (*shape.cliques[:i], resized, *shape.cliques[i + 1 :])
            return kind, dataclasses.replace(shape, cliques=cliques)
        if kind == "reorder":
            return kind, dataclasses.replace(shape, reordered=not shape.reordered)
        return kind, dataclasses.replace(shape, note=f"n{r.randint(0, 10**6)}")

    def invalid(self) -> Invalid:
        r = self.rng
        kind = r.choice(
            (
                "restart-never",
                "huge-replicas",
                "huge-clique",
                "min-available",
                "duplicate-clique",
                "startsafter-cycle",
                "deep-template",
                "name-conflict",
            )
        )
        base = Shape(
            name=self._name("bad"),
            replicas=1,
            cliques=(CliqueShape("lead", 1, 1), CliqueShape("work", 1, 1)),
        )
        body = manifest(base)
        spec = body["spec"]
        cl = spec["template"]["cliques"]
        if kind == "restart-never":
            cl[1]["template"]["spec"]["restartPolicy"] = "Never"
            return Invalid(kind, base.name, "api", "restartPolicy", body)
        if kind == "huge-replicas":
            spec["replicas"] = r.choice((10_001, 2**31 - 1))
            return Invalid(kind, base.name, "api", "spec.replicas", body)
        if kind == "huge-clique":
            cl[0]["replicas"] = 1001
            cl[0]["minAvailable"] = 1
            return Invalid(kind, base.name, "api", "cliques[0].replicas", body)
        if kind == "min-available":
            cl[1]["minAvailable"] = 2
            return Invalid(kind, base.name, "api", "minAvailable must be less than", body)
        if kind == "duplicate-clique":
            cl[1]["name"] = "lead"
            return Invalid(kind, base.name, "api", "Duplicate value", body)
        if kind == "startsafter-cycle":
            spec["startupType"] = "Explicit"
            cl[0]["startsAfter"] = ["work"]
            cl[1]["startsAfter"] = ["lead"]
            return Invalid(kind, base.name, "condition", "cycle", body)
        if kind == "deep-template":
            tmpl = cl[1]["template"]["spec"]
            tmpl["affinity"] = {"nodeAffinity": DEEP_PLACEHOLDER}
            return Invalid(kind, base.name, "condition", "nested too deeply", body)
        shape = dataclasses.replace(self.shape(base.name), replicas=1)
        from cliques.api import labels  # (not at the top: `cliques --help` needs no msgspec)

        held = labels.set_service_name(base.name)  # a new set's one (Shared) Service
        return Invalid(kind, base.name, "conflict", held, manifest(shape), shape)

    def step(self, live: dict[str, Shape], conflicts: list[str]) -> Step:
        """The next step, given the valid sets alive now and the names held by a foreign
        Service (a conflict to clear)."""
        r = self.rng
        roll = r.random()
        if conflicts and roll < 0.08:
            return Step("unblock", "name-conflict", conflicts[0])
        if (roll < 0.22 or not live) and len(live) < self.max_sets:
            shape = self.shape()
            return Step("create", "valid", shape.name, shape=shape)
        if roll < 0.32:
            inv = self.invalid()
            return Step("invalid", inv.kind, inv.name, invalid=inv)
        if roll < 0.62 and live:
            name = r.choice(sorted(live))
            kind, shape = self.edit(live[name])
            return Step("edit", kind, name, shape=shape)
        if roll < 0.72 and live:
            name = r.choice(sorted(live))
            return Step("delete", r.choice(PROPAGATIONS), name)
        if self.faults:
            kind = r.choice(self.faults)
            return Step(
                "fault",
                kind,
                seconds=r.uniform(3.0, 8.0),
                fraction=r.uniform(0.3, 0.7),
                pick=r.random(),
            )
        shape = self.shape()
        return Step("create", "valid", shape.name, shape=shape)

    def pause(self) -> float:
        """Seconds until the next step."""
        return self.rng.uniform(0.3, 2.5)
