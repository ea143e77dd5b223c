"""What the dev cluster asks of kwokctl and the API server, as plain data (no processes).

`cluster` turns these into processes: the KwokctlConfiguration that points
`kwokctl --runtime binary` at our own binaries on loopback, with the feature gates and
API versions of the chosen Kubernetes release (`GANG_FEATURE_GATES`, `GANG_RUNTIME_CONFIG`,
`feature_gates`), the environment kwokctl runs in
(its whole state under our cache directory), the command lines, the fake Node objects with a
GPU machine's capacity, the `export` lines of `cliques dev-cluster env`, and the parsing of
what kwokctl leaves on disk. Keeping them pure keeps them testable without a cluster.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from cliques_lab.devcluster.build import Binaries

DEFAULT_NAME: Final = "cliques"
DEFAULT_NODES: Final = 4
MAX_NODES: Final = 1000
NODE_PREFIX: Final = "kwok-node-"
# Our mark on the nodes we create, so that scaling never touches anybody else's nodes.
NODE_LABEL: Final = "cliques.dev/dev-cluster-node"

#: What one fake node offers: a realistic GPU machine, so GPU-requesting pods schedule.
NODE_CAPACITY: Final[Mapping[str, str]] = {
    "cpu": "32",
    "memory": "256Gi",
    "pods": "110",
    "ephemeral-storage": "1Ti",
    "nvidia.com/gpu": "8",
}

#: Control-plane processes of a cluster, in start order; kwokctl names its logs and pid files
#: after them.
COMPONENTS: Final = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok-controller",
)

#: Gang scheduling (docs/gangs.md), on by default: the feature gates a new cluster gets, per
#: Kubernetes version (the keys of `gomodules.KUBE_VERSIONS`), as read from each release's
#: pkg/features/kube_features.go. Each lists only gates its release knows: an unknown gate
#: makes the API server refuse to start. kwokctl passes them (`kubeFeatureGates`) to the API
#: server, the controller-manager and the scheduler. DynamicResourceAllocation, which
#: DRAWorkloadResourceClaims needs, is GA and locked on from 1.35, so no DRA gate is listed.
GANG_FEATURE_GATES: Final[Mapping[str, tuple[str, ...]]] = {
    "1.35.4": (
        "GenericWorkload",  # alpha, off by default: the v1alpha1 Workload API
        "GangScheduling",  # alpha, off by default: the scheduler's gang plugin
    ),
    "1.36.3": (
        "GenericWorkload",  # alpha, off by default: the v1alpha2 Workload and PodGroup APIs
        "GangScheduling",  # alpha, off by default: the scheduler's gang plugin
        "TopologyAwareWorkloadScheduling",  # alpha, new: a PodGroup's topology constraints
        "DRAWorkloadResourceClaims",  # alpha, new: ResourceClaims shared by a PodGroup
        # alpha, new: preemption by whole PodGroups and their priority fields, which 1.37
        # folds into GenericWorkload: on here too, so gangs are preempted alike on both
        "WorkloadAwarePreemption",
    ),
    "1.37.2": (
        # beta, still off by default: v1beta1 Workload and PodGroup; since 1.37 it also turns
        # on gang scheduling and workload-aware preemption (those two gates were removed)
        "GenericWorkload",
        "TopologyAwareWorkloadScheduling",  # alpha: a PodGroup's topology constraints
        "DRAWorkloadResourceClaims",  # beta, off by default: ResourceClaims of a PodGroup
        "PodGroupPreemptionPolicy",  # alpha, new: a PodGroup's preemptionPolicy field
        # alpha, new: v1alpha3 CompositePodGroups, PodGroups' parentCompositePodGroupName and
        # Workloads' compositePodGroupTemplates; needs GenericWorkload and
        # TopologyAwareWorkloadScheduling (a component refuses to start without them)
        "CompositePodGroup",
    ),
    "1.38.0-beta.0": (
        "GenericWorkload",  # beta, still off by default: v1beta1 Workload and PodGroup
        "TopologyAwareWorkloadScheduling",  # beta now, off by default
        "DRAWorkloadResourceClaims",  # beta, off by default
        # beta now, off by default: CompositePodGroups in v1beta1 (still in v1alpha3 too),
        # needing GenericWorkload and TopologyAwareWorkloadScheduling as before.
        # PodGroupPreemptionPolicy is gone: a PodGroup's preemptionPolicy is ungated.
        "CompositePodGroup",
    ),
}
#: The API versions those gates serve, off by default because they are not GA
#: (`--runtime-config`, kwokctl's `kubeRuntimeConfig`, for the API server only). Every
#: version's `resource.k8s.io/v1` (ResourceClaims) is GA and on by default.
GANG_RUNTIME_CONFIG: Final[Mapping[str, tuple[str, ...]]] = {
    "1.35.4": ("scheduling.k8s.io/v1alpha1",),  # Workload (alpha groups are always off)
    "1.36.3": ("scheduling.k8s.io/v1alpha2",),  # Workload and PodGroup
    "1.37.2": (
        "scheduling.k8s.io/v1beta1",  # Workload and PodGroup (new betas are off by default)
        "scheduling.k8s.io/v1alpha3",  # CompositePodGroup
    ),
    # Workload, PodGroup and CompositePodGroup, all in the beta (v1alpha3 left off: the
    # operator takes v1beta1's composites where served)
    "1.38.0-beta.0": ("scheduling.k8s.io/v1beta1",),
}
#: The API versions a feature gate needs served besides (`--runtime-config`), whatever the
#: release: an alpha group is off by default even with its gate on. `EvictionRequestAPI`
#: (alpha since 1.37) serves lifecycle.k8s.io/v1alpha1 EvictionRequests and Evictions, and
#: the Pod field `evictionResponders`; kube-controller-manager runs its controllers
#: (`evictionrequest-controller`, `imperative-eviction-responder-controller`) from 1.38 on
#: with the gate alone: they are in its default `--controllers=*`, which kwokctl keeps.
#: Kubernetes 1.37 serves the API but has no controller for it (`GATE_NOTES`).
GATED_RUNTIME_CONFIG: Final[Mapping[str, tuple[str, ...]]] = {
    "EvictionRequestAPI": ("lifecycle.k8s.io/v1alpha1",),
}
#: What a release does not do for a gate it knows: said when a cluster is made with it on.
GATE_NOTES: Final[Mapping[tuple[str, str], str]] = {
    ("1.37.2", "EvictionRequestAPI"): (
        "Kubernetes 1.37.2 serves lifecycle.k8s.io/v1alpha1 but has no evictionrequest-"
        "controller: EvictionRequests stay unanswered (no Eviction is made); use "
        "--kube-version 1.38.0-beta.0 for the whole protocol"
    ),
}
#: The gates without which a cluster has no gang scheduling at all (where its release has
#: them): what `status` reports as "gang scheduling on".
GANG_CORE_GATES: Final = ("GenericWorkload", "GangScheduling")

#: Admission plugins the API server enables on top of its defaults, as production clusters
#: (OpenShift, hardened kubeadm) do: OwnerReferencesPermissionEnforcement refuses an owner
#: reference with `blockOwnerDeletion: true` unless the writer may update the owner's
#: `finalizers`, so a missing RBAC rule shows up here rather than in production.
ADMISSION_PLUGINS: Final = ("OwnerReferencesPermissionEnforcement",)

#: How soon the controller-manager's node lifecycle calls a silent node lost (`Unknown`, then
#: tainted `unreachable:NoExecute`). kwokctl passes 3m20s, checked every 25 s; a real
#: cluster's default is 50 s, checked every 5 s, and KWOK renews node Leases every 10 s, so
#: the dev cluster takes 60 s and 5 s: a powered-off node (`node_power`) is lost in about a
#: minute, as on a real cluster. Passed after kwokctl's own flags, so they win.
NODE_MONITOR_ARGS: Final = (("node-monitor-grace-period", "60s"), ("node-monitor-period", "5s"))

#: The stages kwokctl gives a cluster by default (its `fast` pod stages, node init and
#: heartbeat with lease), as files of the kwok module's source (`build.module_source`).
#: Passing any Stage replaces all of kwokctl's defaults, so all of them are passed.
STAGE_FILES: Final = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-complete.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
)
#: The first change to them: a pod whose start gate is closed does not turn Ready, as a
#: kubelet does not start a pod's containers while its init container waits
#: (`controllers.start_gate`); once the operator opens the gate the pod goes on.
START_GATE_ANNOTATION: Final = "cliques.dev/start-gate"
START_GATE_REQUIREMENT: Final[Mapping[str, Any]] = {
    "key": f'.metadata.annotations["{START_GATE_ANNOTATION}"]',
    "operator": "NotIn",
    "values": ["closed"],
}

#: The second, for tests, which only pods that ask for it see: a pod annotated
#: `pod-ready.stage.kwok.x-k8s.io/delay` (a Go duration such as "20s" or "2m", or an RFC 3339
#: time) stays `Pending`, not Ready, for that long once it could start (bound to its node,
#: its start gate open), or until that time, as a pod whose images are pulled or whose model
#: is loaded. KWOK reads the value with the jq expression of `delay.durationFrom`; a pod
#: without it, or with a value that is neither, starts at once as before. The name is the
#: one KWOK's own `general` stages read for the same delay; it is not a `cliques.dev` key,
#: which the operator keeps for itself and a pod template may not carry.
START_DELAY_ANNOTATION: Final = "pod-ready.stage.kwok.x-k8s.io/delay"
START_DELAY: Final[Mapping[str, Any]] = {
    "durationFrom": {"expressionFrom": f'.metadata.annotations["{START_DELAY_ANNOTATION}"]'},
}

_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$")
_GATE = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")
_BOOLEANS: Final[Mapping[str, bool]] = {"true": True, "false": False}


def validate_name(name: str) -> str:
    """A cluster name: a short DNS label (it names directories and a kubeconfig context)."""
    if not _NAME.match(name):
        raise ValueError(
            f"invalid dev cluster name {name!r}: use 1-40 lowercase letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return name


def validate_nodes(nodes: int) -> int:
    if not 0 <= nodes <= MAX_NODES:
        raise ValueError(f"--nodes must be between 0 and {MAX_NODES}, not {nodes}")
    return nodes


def parse_feature_gates(text: str) -> dict[str, bool]:
    """`K=true,L=false` (as `--feature-gates` takes them; spaces and empty items ignored)
    -> {"K": True, "L": False}; ValueError naming the first malformed item."""
    gates: dict[str, bool] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not _GATE.match(name) or value.lower() not in _BOOLEANS:
            raise ValueError(
                f"feature gate {item!r} is not NAME=true or NAME=false "
                "(e.g. --feature-gates GenericWorkload=true,CompositePodGroup=false)"
            )
        gates[name] = _BOOLEANS[value.lower()]
    return gates


def gates_text(gates: Mapping[str, bool]) -> str:
    """{"K": True, "L": False} -> `K=true,L=false`, in the mapping's order."""
    return ",".join(f"{name}={str(on).lower()}" for name, on in gates.items())


def _release(kube_version: str) -> str:
    """`v1.37.2` -> `1.37.2`, the key of the tables above."""
    return kube_version.removeprefix("v")


def feature_gates(
    kube_version: str, *, gang_scheduling: bool = True, overrides: Mapping[str, bool] | None = None
) -> dict[str, bool]:
    """The gates a new cluster of `kube_version` runs with: the gang gates of its release (if
    `gang_scheduling`), then `overrides` on top (`K=false` turns one of them off)."""
    base = GANG_FEATURE_GATES.get(_release(kube_version), ()) if gang_scheduling else ()
    gates = dict.fromkeys(base, True)
    gates.update(overrides or {})
    return gates


def runtime_config(
    kube_version: str, *, gang_scheduling: bool = True, gates: Mapping[str, bool] | None = None
) -> str:
    """The API server's `--runtime-config` for a new cluster: the gang APIs (none without
    gang scheduling), then those of the `gates` turned on (`GATED_RUNTIME_CONFIG`)."""
    versions = list(GANG_RUNTIME_CONFIG.get(_release(kube_version), ())) if gang_scheduling else []
    for gate, on in (gates or {}).items():
        for gv in GATED_RUNTIME_CONFIG.get(gate, ()) if on else ():
            if gv not in versions:
                versions.append(gv)
    return ",".join(f"{gv}=true" for gv in versions)


def gate_notes(kube_version: str, gates: Mapping[str, bool]) -> list[str]:
    """What `kube_version` does not do for the `gates` turned on (`GATE_NOTES`)."""
    release = _release(kube_version)
    return [
        GATE_NOTES[(release, g)] for g, on in gates.items() if on and (release, g) in GATE_NOTES
    ]


def has_gang_scheduling(kube_version: str, gates: Mapping[str, bool]) -> bool:
    """Whether `gates` turn on the Workload API and gang scheduling on `kube_version`: every
    one of `GANG_CORE_GATES` that release knows is true."""
    known = GANG_FEATURE_GATES.get(_release(kube_version), ("GenericWorkload",))
    return all(gates.get(gate, False) for gate in GANG_CORE_GATES if gate in known)


#: The audit policy of `up --audit`: one line per write the API server answered (who, what,
#: which object, the response code), none for reads, Leases (every component's heartbeat)
#: or Events. A write's body is not logged, so the file grows by about 1 KB per write.
AUDIT_POLICY: Final[dict[str, Any]] = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived", "ResponseStarted"],
    "rules": [
        {
            "level": "None",
            "resources": [
                {"group": "coordination.k8s.io", "resources": ["leases"]},
                {"group": "", "resources": ["events"]},
                {"group": "events.k8s.io", "resources": ["events"]},
            ],
        },
        {
            "level": "Metadata",
            "verbs": ["create", "update", "patch", "delete", "deletecollection"],
        },
        {"level": "None"},
    ],
}

#: Where kwokctl writes a cluster's audit log, under its work directory.
AUDIT_LOG: Final = Path("logs", "audit.log")


def kwokctl_configuration(
    binaries: Binaries,
    *,
    disable_qps_limits: bool,
    gang_scheduling: bool = True,
    gate_overrides: Mapping[str, bool] | None = None,
    audit_policy: Path | None = None,
) -> dict[str, Any]:
    """The KwokctlConfiguration for `kwokctl create cluster --config`.

    Every binary is a local path (kwokctl links them into the cluster directory, its dry run
    shows no URL), every component listens on 127.0.0.1 only, and ports are left to kwokctl,
    which picks free ones and avoids those of the other clusters under the same work dir.
    The feature gates are `feature_gates(binaries.kube_version, ...)`; kwokctl records them
    and the version in the cluster's kwok.yaml, where `cluster.status` reads them back.
    `audit_policy` (a file holding `AUDIT_POLICY`) turns on the API server's audit log
    (`AUDIT_LOG`).
    """
    options: dict[str, Any] = {
        "runtime": "binary",
        "bindAddress": "127.0.0.1",
        "kubeVersion": binaries.kube_version,
        "etcdVersion": binaries.etcd_version.removeprefix("v"),
        "kubeApiserverBinary": str(binaries.kube_apiserver),
        "kubeControllerManagerBinary": str(binaries.kube_controller_manager),
        "kubeSchedulerBinary": str(binaries.kube_scheduler),
        "kubectlBinary": str(binaries.kubectl),
        "etcdBinary": str(binaries.etcd),
        "kwokControllerBinary": str(binaries.kwok),
        "quietPull": True,
        "disableQPSLimits": disable_qps_limits,
    }
    gates = feature_gates(
        binaries.kube_version, gang_scheduling=gang_scheduling, overrides=gate_overrides
    )
    if gates:
        options["kubeFeatureGates"] = gates_text(gates)
    api_versions = runtime_config(
        binaries.kube_version, gang_scheduling=gang_scheduling, gates=gates
    )
    if api_versions:
        options["kubeRuntimeConfig"] = api_versions
    if audit_policy is not None:
        options["kubeAuditPolicy"] = str(audit_policy)
    apiserver_args = [{"key": "enable-admission-plugins", "value": ",".join(ADMISSION_PLUGINS)}]
    kcm_args = [{"key": key, "value": value} for key, value in NODE_MONITOR_ARGS]
    return {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
        "kind": "KwokctlConfiguration",
        "options": options,
        "componentsPatches": [
            {"name": "kube-apiserver", "extraArgs": apiserver_args},
            {"name": "kube-controller-manager", "extraArgs": kcm_args},
        ],
    }


def config_text(config: Mapping[str, Any], stage_docs: list[dict[str, Any]]) -> str:
    """The file `kwokctl --config` reads: the configuration, then each Stage, as YAML
    documents (each written as JSON, which YAML reads)."""
    import json

    return "---\n".join(json.dumps(doc, indent=2) + "\n" for doc in [config, *stage_docs])


def stages(source: Path, *, every_pod: bool = False) -> list[dict[str, Any]]:
    """kwokctl's default stages read from the kwok module's source, with the start gate
    kept closed (`START_GATE_REQUIREMENT`) and the start delay (`START_DELAY`) in
    `pod-ready`, which also reports each container's CPU and memory (`with_resources`), and
    ours for pods whose images (`image_stages`) or resources (`resize_stages`) change, and
    for deleted pods that finalizers keep (`termination_stage`); then the start model
    (`startmodel.with_start_model`: image pulls and model loads, for `every_pod` or for pods
    that ask for them)."""
    import yaml

    from cliques_lab.devcluster import startmodel

    out: list[dict[str, Any]] = []
    for name in STAGE_FILES:
        path = source / name
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise FileNotFoundError(f"kwok's stage {name} is not in {source}: {exc}") from exc
        if not isinstance(doc, dict) or doc.get("kind") != "Stage":
            raise ValueError(f"{path} is not a kwok Stage")
        out.append(doc)
    result: list[dict[str, Any]] = []
    for s in out:
        if s["metadata"]["name"] == "pod-delete":
            s["spec"]["selector"]["matchExpressions"] += [dict(_NO_FINALIZERS), dict(_GRACEFUL)]
        if s["metadata"]["name"] != "pod-ready":
            result.append(s)
            continue
        # Two stages, so that a pod without the annotation goes through kwok's own stage
        # exactly as before (no delay queue), and one with it through the delayed copy.
        gated = with_gang_gate(with_start_gate(with_resources(s)))
        result.append(_requiring(gated, "DoesNotExist"))
        delayed = _requiring(with_start_delay(gated), "Exists")
        delayed["metadata"]["name"] = DELAYED_STAGE
        result.append(delayed)
    made = result + image_stages() + resize_stages() + [termination_stage()]
    made += gate_stages()
    return startmodel.with_start_model(made, every_pod=every_pod)


#: The name of the copy of `pod-ready` that pods with `START_DELAY_ANNOTATION` go through.
DELAYED_STAGE: Final = "pod-ready-delayed"

#: In-place updates as a kubelet shows them (`controllers.inplace`): KWOK on its own never
#: looks at a running pod again, so a pod whose container images change would report the
#: old images and stay Ready for ever. Three stages of our own, for pods Running and not
#: being deleted whose containers' images differ from what their statuses report:
#: `pod-image-restart` drops Ready at once (the kubelet stops the changed containers);
#: `pod-image-ready`, 0.25 to 0.5 s later (`RESTART_MS`: a restart with the image at hand;
#: kwok's own `pod-ready` makes a new pod Ready at once), reports the new images, one more
#: restart of each changed container, and Ready again; `pod-image-pull-error` instead
#: leaves a container whose image names `IMAGE_PULL_ERROR` waiting in ImagePullBackOff (an
#: image that cannot be pulled), until its image changes again.
IMAGE_PULL_ERROR: Final = "cliques-pull-error"
RESTART_MS: Final = 250
_RUNNING: Final[list[dict[str, Any]]] = [
    {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
    {"key": ".status.phase", "operator": "In", "values": ["Running"]},
    {
        "key": (
            "((.status.containerStatuses // []) | length) > 0 and "
            "(([.spec.containers[] | [.name, .image]] | sort) != "
            "([.status.containerStatuses[] | [.name, .image]] | sort))"
        ),
        "operator": "In",
        "values": ["true"],
    },
]
_READY: Final = '.status.conditions.[] | select( .type == "Ready" ) | .status'
_PULL_ERROR: Final = f'[.spec.containers[].image | contains("{IMAGE_PULL_ERROR}")] | any'
_WAITING: Final = "[.status.containerStatuses[]?.state.waiting.reason // empty] | length"
_CONDITIONS: Final = """{{ $now := Now }}
conditions:
- {lastTransitionTime: {{ $now | Quote }}, status: "True", type: PodScheduled}
- {lastTransitionTime: {{ $now | Quote }}, status: "True", type: Initialized}
- {lastTransitionTime: {{ $now | Quote }}, status: "%(ready)s", type: Ready}
- {lastTransitionTime: {{ $now | Quote }}, status: "%(ready)s", type: ContainersReady}
"""
#: A container's status as it was, or the new image once restarted (`%(body)s`).
_STATUSES: Final = """{{ $statuses := .status.containerStatuses }}
containerStatuses:
{{ range $c := .spec.containers }}
{{ $old := dict }}{{ range $statuses }}{{ if eq .name $c.name }}{{ $old = . }}{{ end }}{{ end }}
{{ $changed := ne (get $old "image") $c.image }}
%(body)s
{{ end }}
"""
_STOPPED: Final = """- name: {{ $c.name | Quote }}
  image: {{ get $old "image" | Quote }}
  ready: {{ not $changed }}
  restartCount: {{ default 0 (get $old "restartCount") }}
  state: {running: {startedAt: {{ $now | Quote }}}}%(resources)s"""
_RESTARTED: Final = """- name: {{ $c.name | Quote }}
  image: {{ $c.image | Quote }}
  ready: true
  restartCount: {{ if $changed -}}
    {{ add1 (default 0 (get $old "restartCount")) }}
  {{- else -}}
    {{ default 0 (get $old "restartCount") }}
  {{- end }}
  state: {running: {startedAt: {{ $now | Quote }}}}%(resources)s"""
_PULLING: Final = """- name: {{ $c.name | Quote }}
  image: {{ get $old "image" | Quote }}
  ready: false
  restartCount: {{ default 0 (get $old "restartCount") }}
  state:
    waiting:
      reason: {{ if $changed }}ImagePullBackOff{{ else }}PodInitializing{{ end }}
      message: {{ printf "Back-off pulling image %%q" $c.image | Quote }}%(resources)s"""


#: An image stage's container status keeps the resources it reported (a resize under way
#: goes on: `resize_stages`).
_OLD_RESOURCES: Final = """{{ if hasKey $old "resources" }}
  resources: {{ toJson (get $old "resources") }}{{ end }}"""


def _pod_stage(
    name: str, selector: list[dict[str, Any]], template: str, delay_ms: int = 0
) -> dict[str, Any]:
    """A Stage of ours for pods: `selector`'s expressions, then `template` as the status,
    `delay_ms` (with twice that of jitter) after the pod matches."""
    spec: dict[str, Any] = {
        "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
        "selector": {"matchExpressions": selector},
        "next": {"statusTemplate": template},
    }
    if delay_ms:
        spec["delay"] = {
            "durationMilliseconds": delay_ms,
            "jitterDurationMilliseconds": 2 * delay_ms,
        }
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Stage",
        "metadata": {"name": name},
        "spec": spec,
    }


def _image_stage(
    name: str, extra: list[dict[str, Any]], ready: str, body: str, delay_ms: int = 0
) -> dict[str, Any]:
    template = _CONDITIONS % {"ready": ready} + _STATUSES % {
        "body": body % {"resources": _OLD_RESOURCES}
    }
    return _pod_stage(name, [*_RUNNING, *extra], template, delay_ms)


def image_stages() -> list[dict[str, Any]]:
    """The stages of `IMAGE_PULL_ERROR`'s comment: a running pod whose images change."""
    ready = {"key": _READY, "operator": "In", "values": ["True"]}
    not_ready = {"key": _READY, "operator": "NotIn", "values": ["True"]}
    pullable = {"key": _PULL_ERROR, "operator": "In", "values": ["false"]}
    unpullable = {"key": _PULL_ERROR, "operator": "In", "values": ["true"]}
    not_waiting = {"key": _WAITING, "operator": "In", "values": ["0"]}
    return [
        _image_stage("pod-image-restart", [ready], "False", _STOPPED),
        _image_stage("pod-image-ready", [not_ready, pullable], "True", _RESTARTED, RESTART_MS),
        _image_stage(
            "pod-image-pull-error", [not_ready, unpullable, not_waiting], "False", _PULLING, 500
        ),
    ]


def _requiring(stage: dict[str, Any], operator: str) -> dict[str, Any]:
    """`stage` (a copy) whose selector also requires `START_DELAY_ANNOTATION` to exist or
    not (`operator`)."""
    import copy

    out = copy.deepcopy(stage)
    expressions = out["spec"].setdefault("selector", {}).setdefault("matchExpressions", [])
    expressions.append(
        {"key": f'.metadata.annotations["{START_DELAY_ANNOTATION}"]', "operator": operator}
    )
    return out


def with_start_gate(stage: dict[str, Any]) -> dict[str, Any]:
    """`stage` with `START_GATE_REQUIREMENT` added to its selector (a copy)."""
    import copy

    out = copy.deepcopy(stage)
    selector = out["spec"].setdefault("selector", {})
    expressions = selector.setdefault("matchExpressions", [])
    if dict(START_GATE_REQUIREMENT) not in expressions:
        expressions.append(dict(START_GATE_REQUIREMENT))
    return out


def with_start_delay(stage: dict[str, Any]) -> dict[str, Any]:
    """`stage` delayed by `START_DELAY` (a copy). kwok's fast `pod-ready` has no delay of its
    own; one it had would be kept as the default for pods without the annotation."""
    import copy

    out = copy.deepcopy(stage)
    delay = out["spec"].setdefault("delay", {})
    delay.update(copy.deepcopy(dict(START_DELAY)))
    return out


def stage_changes(config_text: str) -> list[str]:
    """Which of our changes to `pod-ready` (`"start gate"`, `"start delay"`) and `pod-delete`
    (`"single deletes"`) and stages of our own (`"image updates"`, `"resizes"`,
    `"terminations"`, `"readiness gates"`, `"start model"`) the Stages saved in a
    cluster's kwok.yaml lack: a
    cluster created by an older version keeps its stages until it is recreated."""
    import yaml

    ready: dict[str, Any] = {}
    delayed: dict[str, Any] = {}
    deleting: dict[str, Any] = {}
    names: set[str] = set()
    try:
        docs = list(yaml.safe_load_all(config_text))
    except yaml.YAMLError:
        return []  # not ours to judge
    for doc in docs:
        if not isinstance(doc, dict) or doc.get("kind") != "Stage":
            continue
        name = (doc.get("metadata") or {}).get("name")
        names.add(str(name))
        if name == "pod-ready":
            ready = doc
        elif name == DELAYED_STAGE:
            delayed = doc
        elif name == "pod-delete":
            deleting = doc
    if not ready:
        return []  # no stage of ours to judge
    spec = ready.get("spec") or {}
    expressions = (spec.get("selector") or {}).get("matchExpressions") or []
    missing = []
    # kwokctl may save them converted (`jq: {key, ...}`): look for the annotations' names.
    if START_GATE_ANNOTATION not in str(expressions):
        missing.append("start gate")
    if START_DELAY_ANNOTATION not in str((delayed.get("spec") or {}).get("delay") or ""):
        missing.append("start delay")
    if not {s["metadata"]["name"] for s in image_stages()} <= names:
        missing.append("image updates")
    if TERMINATION_STAGE not in names:
        missing.append("terminations")
    if "deletionGracePeriodSeconds" not in str(deleting):
        missing.append("single deletes")
    if not set(_start_model_stages()) <= names:
        missing.append("start model")
    if not {s["metadata"]["name"] for s in resize_stages()} <= names or "toJson $res" not in str(
        spec.get("next") or ""
    ):
        missing.append("resizes")
    if not {s["metadata"]["name"] for s in gate_stages()} <= names:
        missing.append("readiness gates")
    return missing


def kwokctl_environment(base: Mapping[str, str], workdir: Path) -> dict[str, str]:
    """kwokctl's environment: its state under `workdir`, no stray KWOK_* settings.

    kwokctl reads many `KWOK_*` variables (versions, ports, runtimes); one left over in a
    developer's shell must not change our cluster, so all are dropped but the work dir.
    """
    env = {key: value for key, value in base.items() if not key.startswith("KWOK_")}
    env["KWOK_WORKDIR"] = str(workdir)
    return env


def create_command(kwokctl: Path, name: str, config: Path, *, dry_run: bool) -> list[str]:
    """`kwokctl create cluster` that touches no kubeconfig but the cluster's own."""
    argv = [str(kwokctl), "--name", name, "--config", str(config)]
    if dry_run:
        argv.append("--dry-run")
    # --kubeconfig "": do not add a context to ~/.kube/config (kwokctl's default).
    argv += ["create", "cluster", "--kubeconfig", "", "--timeout", "2m"]
    return argv


def start_command(kwokctl: Path, name: str) -> list[str]:
    return [str(kwokctl), "--name", name, "start", "cluster", "--timeout", "2m"]


def delete_command(kwokctl: Path, name: str, own_kubeconfig: Path) -> list[str]:
    # kwokctl insists on a kubeconfig to remove the context from; hand it the cluster's own
    # file, which it deletes anyway, so that ~/.kube/config is never rewritten.
    return [
        str(kwokctl),
        "--name",
        name,
        "delete",
        "cluster",
        "--kubeconfig",
        str(own_kubeconfig),
    ]


def node_name(index: int) -> str:
    return f"{NODE_PREFIX}{index}"


def node_index(name: str) -> int | None:
    """The index of one of our node names, or None for any other name."""
    rest = name.removeprefix(NODE_PREFIX)
    if rest == name or not rest.isdigit() or (len(rest) > 1 and rest.startswith("0")):
        return None
    return int(rest)


def node_manifest(index: int) -> dict[str, Any]:
    """A KWOK fake node: managed by kwok-controller (which fills in nodeInfo), GPU capacity."""
    name = node_name(index)
    cidr = f"10.{(index >> 8) + 64}.{index & 0xFF}.0/24"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {
                "kwok.x-k8s.io/node": "fake",
                "node.alpha.kubernetes.io/ttl": "0",
            },
            "labels": {
                "type": "kwok",
                NODE_LABEL: "true",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "kwok-gpu-8",
                "nvidia.com/gpu.present": "true",
            },
        },
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr]},
        "status": {
            "capacity": dict(NODE_CAPACITY),
            "allocatable": dict(NODE_CAPACITY),
        },
    }


def node_list(indices: list[int]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": [node_manifest(i) for i in indices],
    }


def scale_plan(existing: list[str], wanted: int) -> tuple[list[int], list[str]]:
    """(indices to create, names to delete) so that our nodes are exactly 0..wanted-1.

    Only names of our pattern are considered, so nodes somebody else added stay.
    """
    have = {i for i in (node_index(n) for n in existing) if i is not None}
    create = [i for i in range(wanted) if i not in have]
    delete = [node_name(i) for i in sorted(have) if i >= wanted]
    return create, delete


def _escape_in_double_quotes(value: str) -> str:
    return re.sub(r'([\\"$`])', r"\\\1", value)


def shell_double_quote(value: str) -> str:
    """`value` as one sh word inside double quotes."""
    return f'"{_escape_in_double_quotes(value)}"'


def env_lines(kubeconfig: Path, kube_cache: Path, bin_dir: Path) -> list[str]:
    """The `export` lines of `cliques dev-cluster env` (for `eval "$(...)"`)."""
    return [
        f"export KUBECONFIG={shell_double_quote(str(kubeconfig))}",
        # kubectl's discovery cache, kept with the cluster so that `down` removes it.
        f"export KUBECACHEDIR={shell_double_quote(str(kube_cache))}",
        f'export PATH="{_escape_in_double_quotes(str(bin_dir))}:$PATH"',
    ]


def apiserver_url(kubeconfig_text: str) -> str | None:
    """The `server:` of a kubeconfig kwokctl wrote (one cluster), or None."""
    match = re.search(r"^\s*server:\s*(\S+)\s*$", kubeconfig_text, re.MULTILINE)
    return match.group(1) if match else None


def saved_options(config_text: str) -> dict[str, Any]:
    """The `options` of the KwokctlConfiguration in a cluster's saved kwok.yaml."""
    import yaml

    for doc in yaml.safe_load_all(config_text):
        if isinstance(doc, dict) and doc.get("kind") == "KwokctlConfiguration":
            options = doc.get("options")
            return options if isinstance(options, dict) else {}
    return {}


def saved_ports(config_text: str) -> set[int]:
    """Every port a cluster's saved kwok.yaml gives its components: the options' `…Port`
    values and the components' `ports`."""
    import yaml

    ports: set[int] = set()
    try:
        docs = list(yaml.safe_load_all(config_text))
    except yaml.YAMLError:
        return ports
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        if doc.get("kind") == "KwokctlConfiguration":
            options = doc.get("options")
            for key, value in (options if isinstance(options, dict) else {}).items():
                if key.endswith("Port") and type(value) is int and value > 0:  # not a bool
                    ports.add(value)
            for component in doc.get("components") or []:
                for port in (component or {}).get("ports") or []:
                    for key in ("port", "hostPort"):
                        value = (port or {}).get(key)
                        if type(value) is int and value > 0:
                            ports.add(value)
    return ports


def dry_run_sources(output: str) -> list[str]:
    """The sources of the `# Download <src> to <dest>` lines of a kwokctl dry run."""
    return re.findall(r"^# Download (\S+) ", output, re.MULTILINE)


def remote_sources(output: str) -> list[str]:
    """Sources in a kwokctl dry run that are not local files (that is, would be fetched)."""
    return [src for src in dry_run_sources(output) if not src.startswith("/")]


#: In-place resizes as a kubelet shows them (`controllers.inplace`): KWOK's `pod-ready`
#: reports no resources in a container's status, and the API server refuses to resize a
#: pod whose running containers report none ("Pod running on node without support for
#: resize"), so `with_resources` makes `pod-ready` report each container's CPU and memory
#: as a kubelet does; then, for a Running pod whose containers' CPU and memory differ from
#: what their statuses report: `pod-resize-start` sets the condition PodResizeInProgress;
#: `pod-resize-done`, `RESIZE_MS` later (0.25 to 0.75 s), reports the new values and
#: clears it; with the annotation `RESIZE_PENDING_ANNOTATION` (`Deferred` or `Infeasible`:
#: a node without the room) the resize waits in PodResizePending with that reason
#: instead, until the annotation goes or the resize is undone.
RESIZE_MS: Final = 250
RESIZE_PENDING_ANNOTATION: Final = "resize.stage.kwok.x-k8s.io/pending"
_CPU_MEMORY: Final = 'with_entries(select(.key == "cpu" or .key == "memory"))'
_NORMAL: Final = (
    f"((. // {{}}) | {{requests: ((.requests // {{}}) | {_CPU_MEMORY}), "
    f"limits: ((.limits // {{}}) | {_CPU_MEMORY})}})"
)
_RESIZE_DIFFERS: Final = (
    f"([.spec.containers[] | [.name, (.resources | {_NORMAL})]] | sort) != "
    f"([.status.containerStatuses[]? | [.name, (.resources | {_NORMAL})]] | sort)"
)
_REPORTS_RESOURCES: Final = "[.status.containerStatuses[]? | .resources != null] | any"
#: A spec container's CPU and memory as a container status reports them (`$item`).
_SPEC_RESOURCES: Final = """{{ $res := dict }}{{ with $item.resources -}}
{{ with .requests }}{{ $_ := set $res "requests" (pick . "cpu" "memory") }}{{ end -}}
{{ with .limits }}{{ $_ := set $res "limits" (pick . "cpu" "memory") }}{{ end -}}
{{ end }}"""
_RESIZED_STATUSES: Final = (
    """{{ $specs := .spec.containers }}
containerStatuses:
{{ range $s := .status.containerStatuses }}
{{ $item := dict }}{{ range $specs }}{{ if eq .name $s.name }}{{ $item = . }}{{ end }}{{ end }}
"""
    + _SPEC_RESOURCES
    + """
- {{ toJson (set (deepCopy $s) "resources" $res) }}
{{ end }}
"""
)


def _condition_is(kind: str, operator: str) -> dict[str, Any]:
    return {
        "key": f'.status.conditions[]? | select(.type == "{kind}") | .status',
        **(
            {"operator": operator, "values": ["True"]}
            if operator == "In"
            else {"operator": operator}
        ),
    }


def _resize_stage(
    name: str, extra: list[dict[str, Any]], template: str, delay_ms: int = 0
) -> dict[str, Any]:
    selector: list[dict[str, Any]] = [
        {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
        {"key": ".status.phase", "operator": "In", "values": ["Running"]},
        *extra,
    ]
    return _pod_stage(name, selector, template, delay_ms)


def resize_stages() -> list[dict[str, Any]]:
    """The stages of `RESIZE_MS`'s comment: a running pod whose CPU or memory changes."""
    differs = {"key": _RESIZE_DIFFERS, "operator": "In", "values": ["true"]}
    same = {"key": _RESIZE_DIFFERS, "operator": "In", "values": ["false"]}
    reports = {"key": _REPORTS_RESOURCES, "operator": "In", "values": ["true"]}
    pending_key = f'.metadata.annotations["{RESIZE_PENDING_ANNOTATION}"]'
    in_progress = "PodResizeInProgress"
    pending = "PodResizePending"
    now = "{{ Now | Quote }}"
    return [
        _resize_stage(
            "pod-resize-start",
            [
                differs,
                reports,
                {"key": pending_key, "operator": "DoesNotExist"},
                _condition_is(in_progress, "DoesNotExist"),
            ],
            f"conditions:\n- {{type: {in_progress}, status: 'True', lastTransitionTime: {now}}}"
            f"\n- {{type: {pending}, $patch: delete}}\n",
        ),
        _resize_stage(
            "pod-resize-done",
            [_condition_is(in_progress, "In")],
            _RESIZED_STATUSES + f"conditions:\n- {{type: {in_progress}, $patch: delete}}\n",
            RESIZE_MS,
        ),
        _resize_stage(
            "pod-resize-pending",
            [
                differs,
                reports,
                {"key": pending_key, "operator": "Exists"},
                _condition_is(pending, "DoesNotExist"),
            ],
            f"conditions:\n- {{type: {pending}, status: 'True', lastTransitionTime: {now}, "
            f'reason: {{{{ index .metadata.annotations "{RESIZE_PENDING_ANNOTATION}" '
            "| Quote }}, message: 'Node didn''t have enough capacity'}\n",
        ),
        _resize_stage(
            "pod-resize-pending-cleared",
            [same, _condition_is(pending, "In")],
            f"conditions:\n- {{type: {pending}, $patch: delete}}\n",
        ),
    ]


def with_resources(stage: dict[str, Any]) -> dict[str, Any]:
    """kwok's `pod-ready` (a copy) whose container statuses report the containers' CPU and
    memory (`resources`), as a kubelet's do, so that the API server lets them be resized."""
    import copy

    out = copy.deepcopy(stage)
    template = out["spec"]["next"]["statusTemplate"]
    anchor = "containerStatuses:\n{{ range .spec.containers }}\n- image: {{ .image | Quote }}\n"
    if template.count(anchor) != 1:
        raise ValueError("kwok's pod-ready template changed: its containerStatuses not found")
    body = "  {{ $item := . }}" + _SPEC_RESOURCES.replace("\n", "\n  ")
    out["spec"]["next"]["statusTemplate"] = template.replace(
        anchor, f"{anchor}{body}\n  resources: {{{{ toJson $res }}}}\n"
    )
    return out


#: A deleted pod that a finalizer keeps (Kueue's `kueue.x-k8s.io/managed`, say) as a kubelet
#: leaves it: its containers stopped and the pod in a terminal phase (Failed), which is
#: what such a finalizer's owner waits for before it lets the pod go. KWOK's own
#: `pod-delete` only deletes, so without this the pod stayed Running and Ready for ever.
TERMINATION_STAGE: Final = "pod-terminate"
#: KWOK's `pod-delete` waits for a pod's finalizers to go (as the kubelet's final delete
#: does), so that `pod-terminate` is the one stage a kept pod goes through first.
_NO_FINALIZERS: Final = {
    "key": "(.metadata.finalizers // []) | length == 0",
    "operator": "In",
    "values": ["true"],
}
#: KWOK's `pod-delete` deletes (grace period 0, the pod's UID as precondition) only a pod
#: whose grace period is not 0 yet, as the kubelet's one final delete. Its own delete
#: writes the pod once more, with `deletionGracePeriodSeconds: 0`, just before the API
#: server removes it; without this that update played the stage again, a second DELETE
#: racing the first: 404 once the pod is gone, 409 once its controller has made the pod's
#: successor of the same name (the UID precondition), one per pod deleted.
_GRACEFUL: Final = {
    "key": "(.metadata.deletionGracePeriodSeconds // 1) > 0",
    "operator": "In",
    "values": ["true"],
}
_TERMINATED: Final = """{{ $now := Now }}
phase: Failed
conditions:
- {lastTransitionTime: {{ $now | Quote }}, status: "False", type: Ready}
- {lastTransitionTime: {{ $now | Quote }}, status: "False", type: ContainersReady}
containerStatuses:
{{ range .status.containerStatuses }}
- {{ toJson (set (set (deepCopy .) "ready" false) "state" (dict "terminated" (dict
    "exitCode" 137 "reason" "Error" "finishedAt" $now))) }}
{{ end }}
"""


def termination_stage() -> dict[str, Any]:
    """The stage of `TERMINATION_STAGE`'s comment."""
    selector: list[dict[str, Any]] = [
        {"key": ".metadata.deletionTimestamp", "operator": "Exists"},
        {"key": "(.metadata.finalizers // []) | length > 0", "operator": "In", "values": ["true"]},
        {"key": ".status.phase", "operator": "In", "values": ["Pending", "Running"]},
    ]
    return _pod_stage(TERMINATION_STAGE, selector, _TERMINATED)


def _start_model_stages() -> tuple[str, ...]:
    """The names of the start model's stages (`startmodel`)."""
    from cliques_lab.devcluster import startmodel

    return startmodel.stage_names()


#: Readiness gates as a kubelet honours them: a pod is Ready when its containers are
#: (ContainersReady) and every condition its `spec.readinessGates` names is True, and it
#: turns Ready or not Ready again whenever one of them changes. KWOK's own `pod-ready` sets
#: every gate's condition True itself and the pod Ready at once, which no kubelet does, so
#: `with_gang_gate` makes it leave the operator's gate (`GANG_GATE`) to the operator and a
#: pod carrying it not Ready; and two stages of ours keep Ready the kubelet's judgement for
#: a running pod with readiness gates, whichever stage or writer last changed its
#: conditions: `pod-gates-ready` makes it Ready when its containers are ready and every
#: gate is True, `pod-gates-unready` not Ready when either stops being so.
GANG_GATE: Final = "cliques.dev/gang-ready"
GATE_STAGES: Final = ("pod-gates-ready", "pod-gates-unready")
#: jq: the pod's containers are ready and every readiness gate's condition is True.
_GATES_MET: Final = (
    '([.status.conditions[]? | select(.type == "ContainersReady" and .status == "True")] '
    "| length > 0) and ([.spec.readinessGates[]?.conditionType as $t | "
    'any(.status.conditions[]?; .type == $t and .status == "True")] | all)'
)
_HAS_GATES: Final = "(.spec.readinessGates // []) | length > 0"
_READY_AS: Final = """{{ $now := Now }}
conditions:
- {lastTransitionTime: {{ $now | Quote }}, status: "%s", type: Ready}
"""


#: kwok's `pod-ready`: every readiness gate's condition True, and the pod Ready.
_KWOK_GATES: Final = """{{ range .spec.readinessGates }}
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: {{ .conditionType | Quote }}
{{ end }}"""
_KWOK_READY: Final = 'status: "True"\n  type: Ready\n'
#: ours: every gate's condition True but `GANG_GATE`'s, and Ready unless it has that gate.
_GANG_GATED: Final = (
    "{{ $gangGated := false }}{{ range .spec.readinessGates }}"
    f'{{{{ if eq .conditionType "{GANG_GATE}" }}}}{{{{ $gangGated = true }}}}{{{{ end }}}}'
    "{{ end }}\n"
)
_OTHER_GATES: Final = _KWOK_GATES.replace(
    "{{ range .spec.readinessGates }}",
    f'{{{{ range .spec.readinessGates }}}}{{{{ if ne .conditionType "{GANG_GATE}" }}}}',
).replace("{{ end }}", "{{ end }}{{ end }}")
_GATED_READY: Final = 'status: {{ if $gangGated }}"False"{{ else }}"True"{{ end }}\n  type: Ready\n'


def gate_stages() -> list[dict[str, Any]]:
    """The stages of `GANG_GATE`'s comment, for running pods with readiness gates."""
    base: list[dict[str, Any]] = [
        {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
        {"key": ".status.phase", "operator": "In", "values": ["Running"]},
        {"key": _HAS_GATES, "operator": "In", "values": ["true"]},
    ]
    ready = {"key": _READY, "operator": "In", "values": ["True"]}
    not_ready = {"key": _READY, "operator": "NotIn", "values": ["True"]}
    met = {"key": _GATES_MET, "operator": "In", "values": ["true"]}
    unmet = {"key": _GATES_MET, "operator": "In", "values": ["false"]}
    return [
        _pod_stage(GATE_STAGES[0], [*base, not_ready, met], _READY_AS % "True"),
        _pod_stage(GATE_STAGES[1], [*base, ready, unmet], _READY_AS % "False"),
    ]


def with_gang_gate(stage: dict[str, Any]) -> dict[str, Any]:
    """kwok's `pod-ready` (a copy) that sets no `GANG_GATE` condition and leaves a pod that
    carries that gate not Ready (`GANG_GATE`'s comment)."""
    import copy

    out = copy.deepcopy(stage)
    template = out["spec"]["next"]["statusTemplate"]
    if template.count(_KWOK_GATES) != 1 or template.count(_KWOK_READY) != 1:
        raise ValueError("kwok's pod-ready template changed: its readiness gates not found")
    template = template.replace(_KWOK_GATES, _OTHER_GATES).replace(_KWOK_READY, _GATED_READY)
    out["spec"]["next"]["statusTemplate"] = _GANG_GATED + template
    return out
