"""Pure parts of the dev cluster: the Go modules' contents, the kwokctl configuration and
command lines, fake node objects and scaling, names, and the `env` lines run by a shell."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cliques.devcluster import build, gomodules, kwok

GOMOD = """\
// header comment
module example.com/x

go 1.25.0

require k8s.io/kubernetes v1.35.4 // indirect

require (
	// go.etcd.io/etcd/server/v3 v9.9.9 commented out
	go.etcd.io/etcd/server/v3 v3.6.16 // indirect
)

tool go.etcd.io/etcd/server/v3

tool (
	k8s.io/kubernetes/cmd/kube-apiserver // the API server
	k8s.io/kubernetes/cmd/kubectl
)
"""


def test_tool_packages_reads_single_lines_and_blocks_in_order() -> None:
    assert gomodules.tool_packages(GOMOD) == [
        "go.etcd.io/etcd/server/v3",
        "k8s.io/kubernetes/cmd/kube-apiserver",
        "k8s.io/kubernetes/cmd/kubectl",
    ]


def test_required_version_ignores_comments() -> None:
    assert gomodules.required_version(GOMOD, "k8s.io/kubernetes") == "v1.35.4"
    assert gomodules.required_version(GOMOD, "go.etcd.io/etcd/server/v3") == "v3.6.16"
    with pytest.raises(ValueError, match="does not require"):
        gomodules.required_version(GOMOD, "sigs.k8s.io/kwok")


@pytest.mark.parametrize(
    ("package", "name"),
    [
        ("k8s.io/kubernetes/cmd/kube-apiserver", "kube-apiserver"),
        ("go.etcd.io/etcd/server/v3", "server"),
        ("sigs.k8s.io/kwok/cmd/kwokctl", "kwokctl"),
        ("example.com/v2", "example.com"),
    ],
)
def test_default_exec_name_follows_go_build(package: str, name: str) -> None:
    assert gomodules.default_exec_name(package) == name


def test_the_repository_modules_build_the_binaries_a_cluster_needs() -> None:
    binaries = {m.key: m.binaries() for m in gomodules.MODULES}
    assert set(binaries["kube"]) == {
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kubectl",
    }
    assert binaries["etcd"] == {"etcd": "go.etcd.io/etcd/server/v3"}
    assert set(binaries["kwok"]) == {"kwok", "kwokctl"}


def test_helm_and_lws_are_tools_a_cluster_does_not_wait_for() -> None:
    assert gomodules.HELM not in gomodules.MODULES
    assert gomodules.LWS not in gomodules.MODULES
    assert gomodules.TOOLS == (gomodules.HELM, gomodules.LWS)
    assert gomodules.LWS.version() == "v0.9.0"
    assert gomodules.ldflags_for(gomodules.LWS, "v0.9.0").split() == [
        "-s",
        "-w",
        "-X",
        "sigs.k8s.io/lws/pkg/version.GitVersion=v0.9.0",
    ]
    assert gomodules.HELM.binaries() == {"helm": "helm.sh/helm/v4/cmd/helm"}
    version = gomodules.HELM.version()
    assert [int(p) for p in version.removeprefix("v").split(".")[:2]] >= [4, 3]
    flags = gomodules.ldflags_for(gomodules.HELM, version).split()
    assert f"helm.sh/helm/v4/internal/version.version={version}" in flags


def test_pinned_versions_meet_the_issue() -> None:
    versions = {m.key: m.version() for m in gomodules.MODULES}
    major_minor = [int(p) for p in versions["kube"].removeprefix("v").split(".")[:2]]
    assert major_minor >= [1, 35]
    assert versions["etcd"].startswith("v3.6.")
    assert [int(p) for p in versions["kwok"].removeprefix("v").split(".")[:2]] >= [0, 8]


def test_kube_module_replaces_every_staging_module_by_its_published_version() -> None:
    text = gomodules.KUBE.gomod_text()
    version = gomodules.KUBE.version()  # v1.35.4 -> staging v0.35.4
    staging = "v0." + version.removeprefix("v1.")
    replaces = [line.split() for line in text.splitlines() if " => " in line]
    assert len(replaces) > 25
    for parts in replaces:
        assert parts[0].startswith("k8s.io/")
        assert parts[-1] == staging


def test_kube_ldflags_stamp_version_for_both_version_packages() -> None:
    flags = gomodules.kube_ldflags("v1.35.4")
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        assert f"-X {package}.gitVersion=v1.35.4" in flags
        assert f"-X {package}.gitMajor=1" in flags
        assert f"-X {package}.gitMinor=35" in flags
    with pytest.raises(ValueError):
        gomodules.kube_ldflags("1.35")


def test_fingerprint_changes_with_link_flags() -> None:
    a = gomodules.KWOK.fingerprint("-s -w")
    assert a == gomodules.KWOK.fingerprint("-s -w")
    assert a != gomodules.KWOK.fingerprint("-s")


def binaries(root: Path = Path("/cache")) -> build.Binaries:
    kube, etcd, kwokd = root / "kube-v1.35.4/bin", root / "etcd-v3.6.16/bin", root / "kwok/bin"
    return build.Binaries(
        kube_version="v1.35.4",
        etcd_version="v3.6.16",
        kwok_version="v0.8.0",
        kube_apiserver=kube / "kube-apiserver",
        kube_controller_manager=kube / "kube-controller-manager",
        kube_scheduler=kube / "kube-scheduler",
        kubectl=kube / "kubectl",
        etcd=etcd / "etcd",
        kwok=kwokd / "kwok",
        kwokctl=kwokd / "kwokctl",
    )


def test_kwokctl_configuration_uses_local_binaries_on_loopback() -> None:
    config = kwok.kwokctl_configuration(binaries(), disable_qps_limits=False)
    assert config["apiVersion"] == "config.kwok.x-k8s.io/v1alpha1"
    assert config["kind"] == "KwokctlConfiguration"
    options = config["options"]
    assert options["runtime"] == "binary"
    assert options["bindAddress"] == "127.0.0.1"
    assert options["kubeVersion"] == "v1.35.4"
    assert options["etcdVersion"] == "3.6.16"
    assert options["disableQPSLimits"] is False
    binary_options = {k: v for k, v in options.items() if k.endswith("Binary")}
    assert set(binary_options) == {
        "kubeApiserverBinary",
        "kubeControllerManagerBinary",
        "kubeSchedulerBinary",
        "kubectlBinary",
        "etcdBinary",
        "kwokControllerBinary",
    }
    assert all(v.startswith("/cache/") for v in binary_options.values())
    (patch,) = config["componentsPatches"]
    assert patch == {
        "name": "kube-apiserver",
        "extraArgs": [
            {"key": "enable-admission-plugins", "value": "OwnerReferencesPermissionEnforcement"}
        ],
    }
    fast = kwok.kwokctl_configuration(binaries(), disable_qps_limits=True)
    assert fast["options"]["disableQPSLimits"] is True


def test_gang_scheduling_gates_are_on_by_default_and_can_be_turned_off() -> None:
    options = kwok.kwokctl_configuration(binaries(), disable_qps_limits=False)["options"]
    # kwokctl hands kubeFeatureGates to the API server, controller-manager and scheduler,
    # kubeRuntimeConfig to the API server (--feature-gates, --runtime-config).
    assert options["kubeFeatureGates"] == "GenericWorkload=true,GangScheduling=true"
    assert options["kubeRuntimeConfig"] == "scheduling.k8s.io/v1alpha1=true"
    off = kwok.kwokctl_configuration(binaries(), disable_qps_limits=False, gang_scheduling=False)[
        "options"
    ]
    gates = {"kubeFeatureGates", "kubeRuntimeConfig"}
    assert off == {k: v for k, v in options.items() if k not in gates}


def test_the_cli_turns_gang_scheduling_off_with_a_flag() -> None:
    import argparse

    from cliques.cli import devcluster_cmd

    parser = argparse.ArgumentParser()
    devcluster_cmd.register(parser.add_subparsers())
    assert parser.parse_args(["dev-cluster", "up"]).gang_scheduling is True
    args = parser.parse_args(["dev-cluster", "up", "--no-gang-scheduling"])
    assert args.gang_scheduling is False


def test_kwokctl_environment_drops_stray_kwok_settings() -> None:
    env = kwok.kwokctl_environment(
        {"PATH": "/bin", "KWOK_KUBE_VERSION": "v1.20.0", "KWOK_RUNTIME": "docker"},
        Path("/cache/kwok"),
    )
    assert env == {"PATH": "/bin", "KWOK_WORKDIR": "/cache/kwok"}


def test_kwokctl_commands_never_touch_the_users_kubeconfig() -> None:
    create = kwok.create_command(Path("/k/kwokctl"), "c1", Path("/s/cfg.json"), dry_run=True)
    assert create[:6] == ["/k/kwokctl", "--name", "c1", "--config", "/s/cfg.json", "--dry-run"]
    assert create[create.index("--kubeconfig") + 1] == ""
    delete = kwok.delete_command(Path("/k/kwokctl"), "c1", Path("/w/c1/kubeconfig.yaml"))
    assert delete[delete.index("--kubeconfig") + 1] == "/w/c1/kubeconfig.yaml"


def test_node_manifest_has_gpu_capacity_and_our_label() -> None:
    node = kwok.node_manifest(3)
    assert node["metadata"]["name"] == "kwok-node-3"
    assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert node["metadata"]["labels"][kwok.NODE_LABEL] == "true"
    for field in ("capacity", "allocatable"):
        assert node["status"][field]["nvidia.com/gpu"] == "8"
        assert node["status"][field]["cpu"] == "32"
        assert node["status"][field]["memory"] == "256Gi"
        assert node["status"][field]["pods"] == "110"


def test_node_pod_cidrs_are_distinct() -> None:
    cidrs = {kwok.node_manifest(i)["spec"]["podCIDR"] for i in range(kwok.MAX_NODES)}
    assert len(cidrs) == kwok.MAX_NODES


@pytest.mark.parametrize(
    ("existing", "wanted", "create", "delete"),
    [
        ([], 3, [0, 1, 2], []),
        (["kwok-node-0", "kwok-node-1"], 3, [2], []),
        (
            ["kwok-node-0", "kwok-node-1", "kwok-node-2", "kwok-node-10"],
            2,
            [],
            ["kwok-node-2", "kwok-node-10"],
        ),
        (["kwok-node-1", "someone-else", "kwok-node-01"], 1, [0], ["kwok-node-1"]),
        (["kwok-node-0"], 0, [], ["kwok-node-0"]),
    ],
)
def test_scale_plan(existing: list[str], wanted: int, create: list[int], delete: list[str]) -> None:
    assert kwok.scale_plan(existing, wanted) == (create, delete)


@pytest.mark.parametrize("name", ["cliques", "a", "test-1", "x" * 40])
def test_valid_names(name: str) -> None:
    assert kwok.validate_name(name) == name


@pytest.mark.parametrize("name", ["", "-a", "a-", "A", "a_b", "a/b", "..", "x" * 41])
def test_invalid_names_are_refused_with_the_rule(name: str) -> None:
    with pytest.raises(ValueError, match="lowercase letters, digits and '-'"):
        kwok.validate_name(name)


def test_node_count_bounds() -> None:
    assert kwok.validate_nodes(0) == 0
    with pytest.raises(ValueError, match="--nodes"):
        kwok.validate_nodes(-1)
    with pytest.raises(ValueError, match="--nodes"):
        kwok.validate_nodes(kwok.MAX_NODES + 1)


def test_env_lines_survive_a_shell_even_with_odd_characters(tmp_path: Path) -> None:
    odd = tmp_path / 'we ird"$x`\\'
    lines = kwok.env_lines(odd / "kubeconfig.yaml", odd / "cache", odd / "bin")
    script = "\n".join([*lines, 'printf "%s\\n" "$KUBECONFIG" "$KUBECACHEDIR" "$PATH"'])
    done = subprocess.run(
        ["sh", "-c", script],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
        check=True,
        timeout=10,
    )
    kubeconfig, cache, path = done.stdout.splitlines()
    assert kubeconfig == str(odd / "kubeconfig.yaml")
    assert cache == str(odd / "cache")
    assert path == f"{odd / 'bin'}:/usr/bin:/bin"


def test_apiserver_url_and_saved_options() -> None:
    kubeconfig = "clusters:\n- cluster:\n    server: https://127.0.0.1:32764\n  name: kwok-x\n"
    assert kwok.apiserver_url(kubeconfig) == "https://127.0.0.1:32764"
    assert kwok.apiserver_url("nothing") is None
    saved = (
        "kind: Stage\nmetadata: {name: a}\n---\n"
        "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokctlConfiguration\n"
        "options:\n  disableQPSLimits: true\n  kubeApiserverPort: 32764\n"
    )
    assert kwok.saved_options(saved) == {"disableQPSLimits": True, "kubeApiserverPort": 32764}


def test_dry_run_parsing_tells_local_from_remote_sources() -> None:
    output = (
        "mkdir -p /w\n"
        "# Download /cache/etcd-v3.6.16/bin/etcd to /w/bin/etcd\n"
        "# Download https://dl.k8s.io/release/v1.35.4/bin/linux/amd64/kube-apiserver to /w/bin/x\n"
        "kube-apiserver --service-account-issuer=https://kubernetes.default.svc.cluster.local\n"
    )
    assert kwok.dry_run_sources(output) == [
        "/cache/etcd-v3.6.16/bin/etcd",
        "https://dl.k8s.io/release/v1.35.4/bin/linux/amd64/kube-apiserver",
    ]
    assert kwok.remote_sources(output) == [
        "https://dl.k8s.io/release/v1.35.4/bin/linux/amd64/kube-apiserver"
    ]


def test_normalized_gomod_ignores_comments_and_block_layout() -> None:
    a = "// one\nmodule m\n\nrequire k8s.io/kubernetes v1.35.4 // indirect\nrequire (\n\ta v1\n)\n"
    b = "module m\n// two\nrequire (\n\ta v1\n\tk8s.io/kubernetes v1.35.4 // indirect\n)\n"
    assert gomodules.normalized_gomod(a) == gomodules.normalized_gomod(b)
    assert gomodules.normalized_gomod(a) != gomodules.normalized_gomod(b.replace("v1\n", "v2\n"))


def load_generator() -> Any:
    path = Path(__file__).resolve().parents[2] / "scripts" / "gen_kube_gomod.py"
    spec = importlib.util.spec_from_file_location("gen_kube_gomod", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


UPSTREAM = """\
module k8s.io/kubernetes

go 1.25.0

godebug default=go1.25

require k8s.io/api v0.0.0

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/client-go => ./staging/src/k8s.io/client-go
	sigs.k8s.io/yaml => sigs.k8s.io/yaml v1.6.0
)
"""


def test_generator_replaces_staging_modules_by_published_versions() -> None:
    gen = load_generator()
    assert gen.staging_modules(UPSTREAM) == ["k8s.io/api", "k8s.io/client-go"]
    assert gen.staging_version("v1.35.4") == "v0.35.4"
    with pytest.raises(ValueError):
        gen.staging_version("v2.0.0")
    text = gen.render_gomod(UPSTREAM, "v1.35.4")
    assert "module cliques.dev/devcluster/kube" in text
    assert "go 1.25.0" in text and "godebug default=go1.25" in text
    assert "\tk8s.io/api => k8s.io/api v0.35.4" in text
    assert "\tk8s.io/client-go => k8s.io/client-go v0.35.4" in text
    assert "sigs.k8s.io/yaml" not in text
    assert gomodules.tool_packages(text) == list(gen.TOOLS)
    assert gomodules.required_version(text, "k8s.io/kubernetes") == "v1.35.4"


def test_committed_kube_module_is_what_the_generator_makes() -> None:
    """The tools and staging pins of the committed go.mod match the generator's (before tidy)."""
    gen = load_generator()
    committed = gomodules.KUBE.gomod_text()
    assert gomodules.tool_packages(committed) == list(gen.TOOLS)
    assert committed.startswith(gen.HEADER)


def _stage(name: str, expressions: list[dict[str, object]]) -> dict[str, object]:
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Stage",
        "metadata": {"name": name},
        "spec": {
            "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
            "selector": {"matchExpressions": expressions},
        },
    }


def test_stages_are_kwoks_defaults_with_the_start_gate_in_pod_ready(tmp_path: Path) -> None:
    import yaml

    deletion = {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"}
    for name in kwok.STAGE_FILES:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        stage = Path(name).stem
        path.write_text(yaml.safe_dump(_stage(stage, [dict(deletion)])), encoding="utf-8")
    stages = kwok.stages(tmp_path)
    names = [Path(n).stem for n in kwok.STAGE_FILES]
    names.insert(names.index("pod-ready") + 1, kwok.DELAYED_STAGE)
    assert [s["metadata"]["name"] for s in stages] == names
    by_name = {s["metadata"]["name"]: s for s in stages}
    key = f'.metadata.annotations["{kwok.START_DELAY_ANNOTATION}"]'
    ready = by_name["pod-ready"]["spec"]["selector"]["matchExpressions"]
    assert ready == [
        deletion,
        dict(kwok.START_GATE_REQUIREMENT),
        {"key": key, "operator": "DoesNotExist"},
    ]
    assert "delay" not in by_name["pod-ready"]["spec"]  # as kwok has it, for pods without
    delayed = by_name[kwok.DELAYED_STAGE]["spec"]
    assert delayed["selector"]["matchExpressions"] == [
        deletion,
        dict(kwok.START_GATE_REQUIREMENT),
        {"key": key, "operator": "Exists"},
    ]
    assert delayed["delay"] == dict(kwok.START_DELAY)
    for name, stage in by_name.items():
        if name not in ("pod-ready", kwok.DELAYED_STAGE):
            assert stage["spec"]["selector"]["matchExpressions"] == [deletion], name
    # adding it twice changes nothing; the input is not modified
    again = kwok.with_start_gate(by_name["pod-ready"])
    assert again == by_name["pod-ready"] and again is not by_name["pod-ready"]
    assert kwok.stage_changes(kwok.config_text({}, stages)) == []


def test_stages_name_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"node-initialize\.yaml is not in"):
        kwok.stages(tmp_path)


def test_config_text_is_the_configuration_then_the_stages() -> None:
    import yaml

    config = kwok.kwokctl_configuration(binaries(), disable_qps_limits=False)
    stage = _stage("pod-ready", [])
    docs = list(yaml.safe_load_all(kwok.config_text(config, [stage])))
    assert docs == [config, stage]
    assert kwok.saved_options(kwok.config_text(config, [stage])) == config["options"]


def test_the_stage_requirement_names_the_operators_annotation() -> None:
    from cliques.api import labels

    assert kwok.START_GATE_ANNOTATION == labels.ANNOTATION_START_GATE
