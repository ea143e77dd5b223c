"""Pod starts as on GPU nodes (pure): an image pull paid once per (node, image), a load paid
at every container start, and the KWOK stages that wait for them.

On KWOK a pod is Ready about a second after it is bound. A real GPU node first pulls the
pod's images (10-20 GB: minutes), then the container loads its model (minutes again); an
image already on the node is not pulled again, so a container restarted in place, or a new
pod on a node that ran the image before, pays only the load. A KWOK Stage reads only the
pod it acts on, so the per-node cache cannot live in a stage: the dev cluster's `podstart`
process (`cliques_lab.devcluster.podstart`) watches pods and nodes, keeps the cache with
`StartModel`, and writes each start's outcome on the pod as a status condition
(`CONDITION`): `message` names the images the start is for, `lastProbeTime` is when the
containers are ready. Our stages (`with_start_model`) make such a pod Running and Ready, or
finish its in-place restart, at that time, and keep KWOK's own instant stages off it.

Which pods: those annotated `PULL_ANNOTATION` or `LOAD_ANNOTATION` (seconds; the bench and
the tests set them in pod templates), and in a cluster created with node defaults
(`cliques dev-cluster up --pull-seconds/--load-seconds`) every pod. A value the pod does not
give comes from its node's annotation of the same name (the defaults `up` writes on our
nodes), else 0. Only the dev cluster reads these names; a real kubelet ignores them.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

#: Seconds a pod's images take to pull onto a node that does not have them yet.
PULL_ANNOTATION: Final = "start.stage.kwok.x-k8s.io/pull-seconds"
#: Seconds a container takes to load (its model) at every start, in place or new.
LOAD_ANNOTATION: Final = "start.stage.kwok.x-k8s.io/load-seconds"
#: The pod condition `podstart` writes (through `pods/status`, as a kubelet writes status):
#: `message` the images (`image_key`) this start is for, `lastProbeTime` when the
#: containers are ready, `reason` `Pull` (some image was new to the node) or `Load`.
CONDITION: Final = "start.stage.kwok.x-k8s.io/start"
#: The component name of the `podstart` process (its pid file and log).
COMPONENT: Final = "podstart"
#: The record of a cluster's node defaults, beside its kwokctl configuration.
RECORD_FILE: Final = "start-model.json"

#: The stages of ours, beside KWOK's own `pod-ready` and our `pod-image-ready`.
READY_STAGE: Final = "pod-ready-start-model"
IMAGE_STAGE: Final = "pod-image-ready-start-model"
#: The stages that make a pod Ready at once (or after the test delay) and so are kept off
#: pods under the start model.
_INSTANT_STAGES: Final = ("pod-ready", "pod-ready-delayed", "pod-image-ready")

_IMAGES: Final = '([.spec.containers[].image] | join(","))'
_MINE: Final = (
    f'{_IMAGES} as $i | .status.conditions[]? | select(.type == "{CONDITION}" and .message == $i)'
)


def modelled_expression(every_pod: bool) -> str:
    """The jq expression (a boolean) that says whether a pod goes through the start model."""
    if every_pod:
        return "true"
    return f'(.metadata.annotations // {{}}) | has("{PULL_ANNOTATION}") or has("{LOAD_ANNOTATION}")'


def with_start_model(stages: Sequence[dict[str, Any]], *, every_pod: bool) -> list[dict[str, Any]]:
    """`stages` (copies) with the start model: the instant `pod-ready` stages and our
    `pod-image-ready` skip modelled pods, and two more stages, copies of `pod-ready` and
    `pod-image-ready`, act on a modelled pod only once `podstart` has written its condition
    for the pod's current images, delayed until that condition's `lastProbeTime`."""
    modelled = modelled_expression(every_pod)
    out: list[dict[str, Any]] = []
    extra: list[dict[str, Any]] = []
    for stage in stages:
        name = stage["metadata"]["name"]
        if name not in _INSTANT_STAGES:
            out.append(copy.deepcopy(stage))
            continue
        if name in ("pod-ready", "pod-image-ready"):
            extra.append(
                _modelled(stage, modelled, READY_STAGE if name == "pod-ready" else IMAGE_STAGE)
            )
        fast = copy.deepcopy(stage)
        _expressions(fast).append({"key": modelled, "operator": "In", "values": ["false"]})
        out.append(fast)
    return out + extra


def _expressions(stage: dict[str, Any]) -> list[dict[str, Any]]:
    selector = stage["spec"].setdefault("selector", {})
    expressions: list[dict[str, Any]] = selector.setdefault("matchExpressions", [])
    return expressions


def _modelled(stage: dict[str, Any], modelled: str, name: str) -> dict[str, Any]:
    out = copy.deepcopy(stage)
    out["metadata"]["name"] = name
    # The test delay of `pod-ready-delayed` does not apply: the start model decides.
    expressions = [e for e in _expressions(out) if "pod-ready.stage.kwok.x-k8s.io" not in e["key"]]
    expressions += [
        {"key": modelled, "operator": "In", "values": ["true"]},
        {"key": f"[{_MINE}] | length > 0", "operator": "In", "values": ["true"]},
    ]
    out["spec"]["selector"]["matchExpressions"] = expressions
    out["spec"]["delay"] = {"durationFrom": {"expressionFrom": f"{_MINE} | .lastProbeTime"}}
    return out


def stage_names() -> tuple[str, ...]:
    return (READY_STAGE, IMAGE_STAGE)


# --- durations -----------------------------------------------------------------------------


def seconds(value: str | None) -> float | None:
    """An annotation's seconds (`"90"`, `"1.5"`), or None when missing or not a finite
    number >= 0."""
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def durations(pod: Mapping[str, str], node: Mapping[str, str]) -> tuple[float, float]:
    """(pull, load) seconds of a pod on a node: the pod's annotations, else the node's,
    else 0."""

    def one(key: str) -> float:
        for source in (pod, node):
            value = seconds(source.get(key))
            if value is not None:
                return value
        return 0.0

    return one(PULL_ANNOTATION), one(LOAD_ANNOTATION)


def modelled(pod: Mapping[str, str], *, every_pod: bool) -> bool:
    """Whether a pod with these annotations goes through the start model."""
    return every_pod or PULL_ANNOTATION in pod or LOAD_ANNOTATION in pod


def image_key(images: Iterable[str]) -> str:
    """The images of a pod's containers in their order, as the stages join them."""
    return ",".join(images)


# --- the per-node image cache ----------------------------------------------------------------


@dataclass(frozen=True)
class Start:
    """One container start: when it is ready and whether it pulled."""

    ready_at: float  # seconds since the epoch
    pulled: tuple[str, ...]  # the images it pulled (new to the node)

    @property
    def reason(self) -> str:
        return "Pull" if self.pulled else "Load"


@dataclass
class StartModel:
    """The images on each node: (node, image) -> when the image is there (seconds since the
    epoch; in the future while its first pull runs, so a second pod of the same image on
    the node waits for that pull, not for one of its own)."""

    images: dict[tuple[str, str], float] = field(default_factory=dict)

    def start(
        self, node: str, images: Iterable[str], pull: float, load: float, now: float
    ) -> Start:
        """Containers of `images` start on `node` at `now`: each image new to the node is
        pulled (`pull` seconds, all at once) and marked as there from then on; the
        containers are ready `load` seconds after the last of their images is there."""
        there = now
        pulled: list[str] = []
        for image in dict.fromkeys(images):
            at = self.images.get((node, image))
            if at is None:
                at = now + pull
                self.images[(node, image)] = at
                pulled.append(image)
            there = max(there, at)
        return Start(there + load, tuple(pulled))

    def saw(self, node: str, image: str, at: float) -> None:
        """`image` is on `node` from `at` (an earlier start, seen when the cache is rebuilt
        from the pods: the earliest sighting counts)."""
        key = (node, image)
        self.images[key] = min(at, self.images.get(key, at))


def rebuild(pods: Iterable[PodView], loads: Mapping[str, float] | None = None) -> StartModel:
    """The cache as the pods already on the nodes show it, after a restart of `podstart`:
    an image a container reports running is on its node (since forever, as far as a start
    now is concerned); an image of a start condition is there from its ready time less
    the pod's load (`PodView.load`)."""
    model = StartModel()
    for pod in pods:
        if not pod.node:
            continue
        for image in pod.running_images:
            model.saw(pod.node, image, 0.0)
        if pod.condition is not None:
            images, ready_at = pod.condition
            for image in images.split(","):
                if image:
                    model.saw(pod.node, image, ready_at - pod.load)
    return model


@dataclass(frozen=True)
class PodView:
    """What the cache rebuild needs of one pod."""

    node: str
    running_images: tuple[str, ...] = ()
    condition: tuple[str, float] | None = None  # (image key, ready time) of its condition
    load: float = 0.0


# --- the condition ---------------------------------------------------------------------------


def rfc3339(at: float) -> str:
    """`at` (seconds since the epoch) as the API server keeps condition times: whole seconds,
    rounded up, so that a start is never reported ready early."""
    whole = dt.datetime.fromtimestamp(math.ceil(at - 1e-6), dt.UTC)
    return whole.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> float | None:
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def condition(images: str, start: Start, now: float) -> dict[str, Any]:
    """The pod condition that tells our stages when the containers of `images` are ready."""
    return {
        "type": CONDITION,
        "status": "True",
        "reason": start.reason,
        "message": images,
        "lastProbeTime": rfc3339(start.ready_at),
        "lastTransitionTime": rfc3339(now),
    }


# --- the cluster's node defaults -----------------------------------------------------------


@dataclass(frozen=True)
class Defaults:
    """What `cliques dev-cluster up --pull-seconds/--load-seconds` made a cluster with."""

    pull: float = 0.0
    load: float = 0.0

    @property
    def every_pod(self) -> bool:
        """Node defaults put every pod through the start model (the stages are chosen when
        the cluster is created)."""
        return self.pull > 0 or self.load > 0

    def node_annotations(self) -> dict[str, str]:
        return {PULL_ANNOTATION: _number(self.pull), LOAD_ANNOTATION: _number(self.load)}


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


def record_text(defaults: Defaults) -> str:
    return json.dumps({"pullSeconds": defaults.pull, "loadSeconds": defaults.load}) + "\n"


def read_record(path: Path) -> Defaults:
    """The defaults recorded in `path` (none: a cluster made without them, or by an older
    cliques)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Defaults()
    if not isinstance(data, dict):
        return Defaults()
    pull = seconds(str(data.get("pullSeconds", 0)))
    load = seconds(str(data.get("loadSeconds", 0)))
    return Defaults(pull or 0.0, load or 0.0)
