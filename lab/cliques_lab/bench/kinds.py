"""The kinds of object the scale benchmark can deploy its workload as (pure).

An operator under test reads one kind: cliques and the kopf peer read CliqueSets,
LeaderWorkerSet's manager reads LeaderWorkerSets. A `WorkloadKind` is what the harness
needs to drive and judge either one the same way: the resource, its manifests (deploy,
rolling update, re-ordered apply), its pod templates and the pod names it should end up
with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cliques.kube.resources import CLIQUESETS, Resource
from cliques_lab.bench import workload, workload_lws
from cliques_lab.bench.workload import Shape

#: Where the harness starts and where the rolling update goes.
FIRST_IMAGE = "busybox:1.36"
NEXT_IMAGE = "busybox:1.37"
#: The image of the in-place update phase (cliques with `updateStrategy.inPlace`).
IN_PLACE_IMAGE = "busybox:1.37.1"


@dataclass(frozen=True)
class WorkloadKind:
    """One kind of workload object and how the benchmark builds and judges it."""

    name: str
    resource: Resource
    #: (object name, shape, image of the main container, gang-scheduling backend,
    #: subdomain policy or "" for the default) -> body
    manifest: Callable[[str, Shape, str, str, str], dict[str, Any]]
    reordered: Callable[[dict[str, Any]], dict[str, Any]]
    pod_templates: Callable[[dict[str, Any]], dict[str, dict[str, Any]]]
    desired_pods: Callable[[Shape], set[str]]

    def template_hash(
        self,
        shape: Shape,
        gang_scheduling: str,
        pull: float | None = None,
        load: float | None = None,
    ) -> str:
        """The digest of the pod templates this kind's workload starts with (with the start
        model's `pull` and `load` seconds, when given)."""
        body = self.build(shape.names()[0], shape, FIRST_IMAGE, gang_scheduling, "", pull, load)
        return workload.templates_hash(self.pod_templates(body))

    def build(
        self,
        name: str,
        shape: Shape,
        image: str,
        gang_scheduling: str,
        subdomain_policy: str,
        pull: float | None = None,
        load: float | None = None,
    ) -> dict[str, Any]:
        """`manifest`, its pod templates annotated with the pull and load seconds given."""
        body = self.manifest(name, shape, image, gang_scheduling, subdomain_policy)
        workload.with_start(self.pod_templates(body), pull, load)
        return body


def _cliqueset(
    name: str, shape: Shape, image: str, gang_scheduling: str, subdomain_policy: str
) -> dict[str, Any]:
    return workload.manifest(
        name, shape, image=image, gang_scheduling=gang_scheduling, subdomain_policy=subdomain_policy
    )


def _lws(
    name: str, shape: Shape, image: str, _gang_scheduling: str, _subdomain_policy: str
) -> dict[str, Any]:
    return workload_lws.manifest(name, shape, image=image)


CLIQUESET = WorkloadKind(
    name="CliqueSet",
    resource=CLIQUESETS,
    manifest=_cliqueset,
    reordered=workload.reordered,
    pod_templates=workload.pod_templates,
    desired_pods=Shape.desired_pods,
)
LEADERWORKERSET = WorkloadKind(
    name="LeaderWorkerSet",
    resource=workload_lws.LEADERWORKERSETS,
    manifest=_lws,
    reordered=workload_lws.reordered,
    pod_templates=workload_lws.pod_templates,
    desired_pods=workload_lws.desired_pods,
)
