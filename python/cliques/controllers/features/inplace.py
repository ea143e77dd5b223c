"""In-place updates (pure): a gang whose pods differ from the new template only in container
images, and where the server serves `pods/resize` in their CPU and memory, keeps its pods
(`spec.updateStrategy.inPlace: IfPossible`; docs/operator.md).

- **The decision is the CliqueSet's**, per gang, when the gang rolls: every Clique of the
  gang that rolls must differ from its new template only where a running pod may change
  (`_core.template_diff` and `_core.in_place`: container and init container images; a
  container's CPU and memory requests and limits too when the API server serves the
  `pods/resize` subresource, no request or limit is removed and the pod's QoS class stays,
  as the server requires of a resize: `resize.allowed`). The
  template patch then records, on the Clique, the hashes its pods may be updated in place
  from (`cliques.dev/update: InPlace:<hash>,...`), or `Replace`; a gang is the unit, so one
  clique that cannot makes the whole gang replace its pods.
- **The Clique resizes, then patches its pods** labelled with one of those hashes. A pod
  whose CPU or memory differs from the template first gets a JSON patch of the `resize`
  subresource (`resize_patch`); once the cache shows the new values, a JSON patch that
  tests the pod's UID and each container's name at its index, replaces the images that
  differ, and moves the template-hash label (so the rest of the controller sees the pod as
  updated) and the annotation `cliques.dev/in-place-update` to the new hash. A pod whose
  containers are not those of the template (added, removed) is replaced.
- **A pod updated in place counts as ready only once it runs the new images**: each
  container's status reports the image of its spec (`image_matches`), and the CPU and memory
  of its spec where the status reports resources, no resize is pending or in progress, and
  the pod is Ready.
  Until then its gang is unavailable, so `maxUnavailable` bounds the gangs in flight.
- **Chains**: a Clique updated in place from H0 to H1 and then, before every pod got there,
  to H2 lists both H1 and H0 (an image change after an image change is still one).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from cliques import _core, resize
from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.pod import ContainerImage, Pod, Resources
from cliques.controllers.base.actions import pointer_key


@dataclass(frozen=True)
class View:
    """What the CliqueSet planner reads for in-place updates: whether the API server
    serves `pods/resize` (an in-place update may then change CPU and memory)."""

    resize_served: bool = False


#: The value of `labels.ANNOTATION_UPDATE` of a Clique rolled by replacement.
REPLACE: Final = "Replace"
IN_PLACE: Final = "InPlace"
#: At most this many hashes a Clique's pods may be updated in place from.
MAX_FROM: Final = 5
#: Registries whose name an image reference may leave out (the kubelet reports it in full).
_DEFAULT_PREFIXES: Final = ("docker.io/library/", "index.docker.io/library/", "docker.io/")
#: The pod conditions the kubelet reports a resize by.
COND_RESIZE_PENDING: Final = "PodResizePending"
COND_RESIZE_IN_PROGRESS: Final = "PodResizeInProgress"


def can_update_in_place(
    old: Mapping[str, Any], new: Mapping[str, Any], resizes: bool = False
) -> bool:
    """Whether pods of template `old` can take template `new` in place: a change, only of
    container images, or with `resizes` (the server serves `pods/resize`) also of containers'
    CPU and memory, as far as the server allows a resize (`resize.allowed`)."""
    paths = _core.template_diff(old, new)
    if not _core.in_place(paths, resizes):
        return False
    return not any(_core.resize_path(p) for p in paths) or resize.allowed(old, new)


def from_hashes(clique: Clique) -> list[str]:
    """The template hashes the Clique's pods may be updated in place from (none when its
    last roll replaced them, or it never rolled)."""
    value = clique.metadata.annotations.get(labels.ANNOTATION_UPDATE, "")
    kind, _, hashes = value.partition(":")
    if kind != IN_PLACE:
        return []
    return [h for h in hashes.split(",") if h]


def annotation(clique: Clique, current_hash: str, in_place: bool) -> str:
    """The `cliques.dev/update` value of a roll of `clique` (now at `current_hash`)."""
    if not in_place:
        return REPLACE
    chain = [current_hash, *(h for h in from_hashes(clique) if h != current_hash)]
    return f"{IN_PLACE}:{','.join(chain[:MAX_FROM])}"


def _images(containers: Any) -> list[tuple[str, str]]:
    if not isinstance(containers, list):
        return []
    return [
        (str(c.get("name", "")), str(c.get("image", ""))) for c in containers if isinstance(c, dict)
    ]


def _ops(
    kind: str, have: Sequence[ContainerImage], want: list[tuple[str, str]]
) -> list[Any] | None:
    """The ops that give the pod's `kind` containers the images `want` names; None when the
    pod's containers are not those of the template (besides the operator's start gate)."""
    wanted = dict(want)
    names = [c.name for c in have if c.name in wanted or kind == "containers"]
    if sorted(names) != sorted(wanted):
        return None
    ops: list[Any] = []
    for i, c in enumerate(have):
        image = wanted.get(c.name)
        if image is not None and image != c.image:
            ops.append({"op": "test", "path": f"/spec/{kind}/{i}/name", "value": c.name})
            ops.append({"op": "replace", "path": f"/spec/{kind}/{i}/image", "value": image})
    return ops


def pod_patch(
    pod: Pod, template: Mapping[str, Any], desired: str, algorithm: int
) -> list[Any] | None:
    """The JSON patch that updates `pod` in place to `template` (hash `desired`), or None
    when its containers are not the template's."""
    spec = template.get("spec") or {}
    containers = _ops("containers", pod.spec.containers, _images(spec.get("containers")))
    inits = _ops("initContainers", pod.spec.init_containers, _images(spec.get("initContainers")))
    if containers is None or inits is None:
        return None
    esc = pointer_key
    return [
        {"op": "test", "path": "/metadata/uid", "value": pod.metadata.uid},
        *containers,
        *inits,
        {
            "op": "add",
            "path": f"/metadata/labels/{esc(labels.LABEL_TEMPLATE_HASH)}",
            "value": desired,
        },
        {
            "op": "add",
            "path": f"/metadata/annotations/{esc(labels.ANNOTATION_HASH_ALGORITHM)}",
            "value": str(algorithm),
        },
        {
            "op": "add",
            "path": f"/metadata/annotations/{esc(labels.ANNOTATION_IN_PLACE)}",
            "value": desired,
        },
    ]


def resize_patch(pod: Pod, template: Mapping[str, Any]) -> list[Any] | None:
    """The JSON patch of `pod`'s `resize` subresource that gives its containers the CPU and
    memory of `template`, or None when they have them already."""
    wanted = {
        str(c.get("name")): resize.wanted(c.get("resources"))
        for c in resize.containers(template, "containers")
    }
    ops: list[Any] = []
    for i, c in enumerate(pod.spec.containers):
        want = wanted.get(c.name)
        if want is None:
            continue
        for kind in resize.KINDS:
            have: dict[str, str] = getattr(c.resources, kind)
            new = {**have, **want[kind]}
            if resize.differing(have, new):
                ops.append({"op": "test", "path": f"/spec/containers/{i}/name", "value": c.name})
                path = f"/spec/containers/{i}/resources/{kind}"
                ops.append({"op": "add", "path": path, "value": new})
    if not ops:
        return None
    return [{"op": "test", "path": "/metadata/uid", "value": pod.metadata.uid}, *ops]


def _normal(ref: str) -> str:
    for prefix in _DEFAULT_PREFIXES:
        if ref.startswith(prefix):
            ref = ref[len(prefix) :]
            break
    last = ref.rsplit("/", 1)[-1]
    if "@" not in last and ":" not in last:
        ref += ":latest"
    return ref


def image_matches(spec_image: str, status_image: str, image_id: str = "") -> bool:
    """Whether a container status's image is its spec's: equal once the default registry
    and tag are spelled out, or for a spec by digest, the status's image ID has the digest."""
    if not status_image:
        return False
    if "@" in spec_image:
        digest = spec_image.rsplit("@", 1)[1]
        return image_id.endswith(digest) or status_image.endswith(digest)
    return _normal(spec_image) == _normal(status_image)


def _runs_with(spec: Resources, status: Resources | None) -> bool:
    """Whether a container's status reports the CPU and memory its spec asks for (True when
    it reports no resources: a kubelet that does cannot resize, and the server refuses it)."""
    if status is None:
        return True
    for kind in resize.KINDS:
        want = {k: v for k, v in getattr(spec, kind).items() if k in resize.RESIZED}
        have = getattr(status, kind)
        if want and resize.differing(want, {k: have[k] for k in want if k in have}):
            return False
    return True


def _resizing(pod: Pod) -> Iterable[str]:
    """The reasons of the pod's resize conditions that are True (`Deferred`, `Infeasible`,
    or `InProgress`)."""
    for c in pod.status.conditions:
        if c.status == "True" and c.type == COND_RESIZE_PENDING:
            yield c.reason or "Pending"
        elif c.status == "True" and c.type == COND_RESIZE_IN_PROGRESS:
            yield "InProgress"


def settled(pod: Pod) -> bool:
    """Whether a pod runs its spec's images and CPU and memory, as far as an in-place update
    goes: True for a pod never updated in place (or updated to another hash than it is
    labelled with); for one updated in place, once every container's status reports its
    spec's image (and resources, where it reports them) and no resize is under way."""
    meta = pod.metadata
    target = meta.annotations.get(labels.ANNOTATION_IN_PLACE)
    if not target or target != meta.labels.get(labels.LABEL_TEMPLATE_HASH):
        return True
    statuses = {s.name: s for s in pod.status.container_statuses}
    for c in pod.spec.containers:
        s = statuses.get(c.name)
        if s is None or not image_matches(c.image, s.image, s.image_id):
            return False
        if not _runs_with(c.resources, s.resources):
            return False
    return not any(True for _ in _resizing(pod))


def waiting_reasons(pod: Pod) -> list[str]:
    """Why the pod's containers wait (`ImagePullBackOff`, `CrashLoopBackOff`, ...), if they do
    (`ContainerCreating` and `PodInitializing`, a start on its way, left out), and why its
    resize waits (`ResizeInfeasible`, `ResizeDeferred`: the node has not the room)."""
    out = [f"Resize{r}" for r in _resizing(pod) if r != "InProgress"]
    for s in pod.status.container_statuses:
        waiting = s.state.waiting
        if waiting is not None and waiting.reason not in (
            "",
            "ContainerCreating",
            "PodInitializing",
        ):
            out.append(waiting.reason)
    return out
