"""Start order enforced after placement (pure): the start gate of a gang's pods.

With gang scheduling (the Workload backend) the scheduler binds none of a gang's pods until
all of them exist, so a clique cannot wait for the cliques it starts after by holding back
its pods. Its Clique then has `startGate: true`: its pods are created with the rest of the
gang, and each carries a gate that keeps its containers from starting:

- an init container `cliques-start-gate` (the operator's image, `cliques start-gate`)
  that exits once the file `/etc/cliques/start-gate/state` reads `open`. An init container
  runs after the pod is bound and before any other container, so the gang is placed whole
  and starts in order;
- that file is a downward API projection of the pod's annotation `cliques.dev/start-gate`,
  which the kubelet keeps up to date. The pod is created `closed` (`open` when the Cliques
  it starts after are already Ready, or the Clique has started before), and the Clique
  controller patches it `open` once they are (`to_open`).

The pod needs no ServiceAccount token, no RBAC and no network to wait; the operator's
write is a patch of a pod it owns. The init container asks for as much as it may use
(requests equal to limits), so a Guaranteed pod stays Guaranteed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from cliques import __version__
from cliques.api import labels
from cliques.api.pod import Pod

OPEN: Final = "open"
CLOSED: Final = "closed"
CONTAINER: Final = "cliques-start-gate"
VOLUME: Final = "cliques-start-gate"
MOUNT: Final = "/etc/cliques/start-gate"
STATE_FILE: Final = f"{MOUNT}/state"
STARTS_AFTER_FILE: Final = f"{MOUNT}/starts-after"
#: What the gate container may use (and asks for): enough for a Python start-up.
RESOURCES: Final = {"cpu": "50m", "memory": "64Mi"}
#: The image's non-root user (scripts/build_image.py).
RUN_AS: Final = 65532
#: Where the operator's image is published (deploy/operator/deployment.yaml).
REPOSITORY: Final = "ghcr.io/cliques-dev/cliques"


def default_image() -> str:
    """The gate's image unless the operator is told otherwise: its own, of this version."""
    return f"{REPOSITORY}:{__version__}"


def init_container(image: str) -> dict[str, Any]:
    """The init container that waits for the gate to open."""
    return {
        "name": CONTAINER,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["cliques", "start-gate", "--file", STATE_FILE],
        "resources": {"requests": dict(RESOURCES), "limits": dict(RESOURCES)},
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RUN_AS,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [{"name": VOLUME, "mountPath": MOUNT, "readOnly": True}],
    }


def volume() -> dict[str, Any]:
    """The downward API volume that shows the pod its gate annotations as files."""

    def item(path: str, annotation: str) -> dict[str, Any]:
        return {"path": path, "fieldRef": {"fieldPath": f"metadata.annotations['{annotation}']"}}

    return {
        "name": VOLUME,
        "downwardAPI": {
            "items": [
                item("state", labels.ANNOTATION_START_GATE),
                item("starts-after", labels.ANNOTATION_STARTS_AFTER),
            ]
        },
    }


def add(
    pod_spec: dict[str, Any],
    annotations: dict[str, str],
    *,
    image: str,
    starts_after: list[str],
    open_now: bool,
) -> None:
    """Put the gate into a pod body being built: the init container first (before the
    template's own), the volume, and the annotations it reads."""
    pod_spec["initContainers"] = [init_container(image), *(pod_spec.get("initContainers") or ())]
    pod_spec["volumes"] = [*(pod_spec.get("volumes") or ()), volume()]
    annotations[labels.ANNOTATION_START_GATE] = OPEN if open_now else CLOSED
    annotations[labels.ANNOTATION_STARTS_AFTER] = ",".join(sorted(starts_after))


def is_closed(pod: Pod) -> bool:
    return pod.metadata.annotations.get(labels.ANNOTATION_START_GATE) == CLOSED


def to_open(pods: Iterable[Pod]) -> list[Pod]:
    """The live pods whose gate is still closed, by name."""
    return sorted(
        (p for p in pods if p.metadata.deletion_timestamp is None and is_closed(p)),
        key=lambda p: p.metadata.name,
    )


def open_patch() -> dict[str, Any]:
    """The merge patch that opens a pod's gate."""
    return {"metadata": {"annotations": {labels.ANNOTATION_START_GATE: OPEN}}}
