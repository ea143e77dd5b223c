"""What the API server allows of an in-place resize of a pod's CPU and memory (pure).

A running pod's containers change their CPU and memory requests and limits through the
`pods/resize` subresource, which refuses a change that removes a request or a limit or
moves the pod to another QoS class (`allowed`). Quantities compare by meaning (`1` and
`1000m` are the same: `differing`), through the Rust core's canonical form. Needs nothing
but the core, so `cliques hash --diff` can say whether a change resizes in place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from cliques import _core

#: The resources `pods/resize` changes, and the two maps of a container's `resources`.
RESIZED: Final = ("cpu", "memory")
KINDS: Final = ("requests", "limits")


def containers(template: Mapping[str, Any], *kinds: str) -> list[Mapping[str, Any]]:
    """The containers of `template`'s lists `kinds` (`containers`, `initContainers`)."""
    spec = template.get("spec") or {}
    return [c for kind in kinds for c in (spec.get(kind) or []) if isinstance(c, Mapping)]


def compute(resources: Any, kind: str) -> dict[str, str]:
    """The CPU and memory of a container's `resources.<kind>` (a mapping from a template)."""
    values = (resources or {}).get(kind) or {} if isinstance(resources, Mapping) else {}
    return {k: str(v) for k, v in values.items() if k in RESIZED}


def wanted(resources: Any) -> dict[str, dict[str, str]]:
    """The CPU and memory requests and limits a container of a template with `resources`
    runs with: a request left out is its limit (the API server's defaulting)."""
    limits = compute(resources, "limits")
    return {"requests": {**limits, **compute(resources, "requests")}, "limits": limits}


def _mini(values: Mapping[str, str]) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c", "resources": {"limits": dict(values)}}]}}


def differing(a: Mapping[str, str], b: Mapping[str, str]) -> list[str]:
    """The resource names whose quantities differ in meaning between `a` and `b` (`1` and
    `1000m` do not), one side missing a name included."""
    if a == b:
        return []
    paths = _core.template_diff(_mini(a), _mini(b))
    return sorted({p.rsplit(".", 1)[-1] for p in paths} if paths else set())


def _is_set(value: str) -> bool:
    return bool(differing({"q": value}, {"q": "0"}))


def _positive(values: Mapping[str, str]) -> dict[str, str]:
    """The quantities of `values` that are not zero: the API server's QoS counts a zero
    request or limit as not set."""
    return {k: v for k, v in values.items() if _is_set(v)}


def qos_class(template: Mapping[str, Any]) -> str:
    """The QoS class of pods of `template`, as the API server computes it from their
    containers' CPU and memory (`GetPodQOS`): a zero request or limit counts as not set, a
    request left out is its limit; BestEffort without any, Guaranteed when every container
    has a CPU and a memory limit and requests equal to them, Burstable otherwise. (The API
    server compares the sums over the containers; a request is never above its limit, so
    that is the same as comparing each container's.)"""
    anything = False
    guaranteed = True
    for c in containers(template, "containers", "initContainers"):
        asked = wanted(c.get("resources"))
        requests = _positive(asked["requests"])
        limits = _positive(asked["limits"])
        if requests or limits:
            anything = True
        if set(limits) != set(RESIZED) or differing(requests, limits):
            guaranteed = False
    if not anything:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def allowed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether the API server lets a pod of `old` be resized to `new`: no pod-level
    resources, no container's request or limit removed, and the same QoS class."""
    for template in (old, new):
        if (template.get("spec") or {}).get("resources"):
            return False
    wanted = {str(c.get("name")): c.get("resources") for c in containers(new, "containers")}
    for c in containers(old, "containers"):
        for kind in KINDS:
            have = ((c.get("resources") or {}).get(kind) or {}).keys()
            want = ((wanted.get(str(c.get("name"))) or {}).get(kind) or {}).keys()
            if not set(have) <= set(want):
                return False
    return qos_class(old) == qos_class(new)
