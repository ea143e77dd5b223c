"""Pure parts of the dev cluster: the Go modules' contents, the kwokctl configuration and
command lines, fake node objects and scaling, names, and the `env` lines run by a shell."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cliques_lab.devcluster import build, gomodules, kwok, startmodel

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


@pytest.mark.parametrize("version", list(gomodules.KUBE_VERSIONS))
def test_the_repository_modules_build_the_binaries_a_cluster_needs(version: str) -> None:
    binaries = {m.key: m.binaries() for m in gomodules.cluster_modules(version)}
    assert set(binaries["kube"]) == {
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kubectl",
    }
    assert binaries["etcd"] == {"etcd": "go.etcd.io/etcd/server/v3"}
    assert set(binaries["kwok"]) == {"kwok", "kwokctl"}


def test_each_supported_version_has_its_own_module_pinning_it() -> None:
    assert list(gomodules.KUBE_VERSIONS) == ["1.35.4", "1.36.3", "1.37.2", "1.38.0-beta.0"]
    assert gomodules.DEFAULT_KUBE_VERSION == "1.37.2"  # 1.38 is a pre-release
    for version, module in gomodules.KUBE_VERSIONS.items():
        assert module.key == "kube"  # the cache directory is kube-v<version>
        assert module.directory.name == "kube-" + ".".join(version.split(".")[:2])
        assert module.version() == f"v{version}"
    assert not (gomodules.GOMOD_ROOT / "kube").exists()


def test_a_version_may_start_with_v_and_an_unknown_one_names_the_supported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(gomodules.KUBE_VERSION_ENV, raising=False)
    assert gomodules.kube_version("v1.36.3") == gomodules.kube_version(" 1.36.3") == "1.36.3"
    assert gomodules.kube_version() == "1.37.2"
    monkeypatch.setenv(gomodules.KUBE_VERSION_ENV, "v1.35.4")
    assert gomodules.kube_version() == "1.35.4"
    assert gomodules.kube_version("1.37.2") == "1.37.2"  # an explicit one wins
    with pytest.raises(ValueError) as caught:
        gomodules.kube_version("1.36")
    assert str(caught.value) == (
        "unsupported Kubernetes version '1.36': supported are 1.35.4, 1.36.3, 1.37.2, "
        "1.38.0-beta.0 (default 1.37.2)"
    )


def test_helm_and_lws_are_tools_a_cluster_does_not_wait_for() -> None:
    cluster_modules = gomodules.cluster_modules(gomodules.DEFAULT_KUBE_VERSION)
    assert gomodules.HELM not in cluster_modules
    assert gomodules.LWS not in cluster_modules
    assert gomodules.TOOLS == (
        gomodules.HELM,
        gomodules.LWS,
        gomodules.KUEUE,
        gomodules.METRICS_SERVER,
        gomodules.PROMETHEUS,
    )
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
    versions = {m.key: m.version() for m in gomodules.cluster_modules("1.35.4")}
    major_minor = [int(p) for p in versions["kube"].removeprefix("v").split(".")[:2]]
    assert major_minor >= [1, 35]
    assert versions["etcd"].startswith("v3.6.")
    assert [int(p) for p in versions["kwok"].removeprefix("v").split(".")[:2]] >= [0, 8]


#: Modules a kube go.mod pins below what its release asks for, because the Go module proxy
#: serves no newer version (1.38.0-beta.0 asks for v7.0.1).
PINNED_BELOW_UPSTREAM = {"sigs.k8s.io/structured-merge-diff/v7": "v7.0.0"}


@pytest.mark.parametrize("module", list(gomodules.KUBE_VERSIONS.values()))
def test_kube_module_replaces_every_staging_module_by_its_published_version(
    module: gomodules.GoModule,
) -> None:
    text = module.gomod_text()
    version = module.version()  # v1.35.4 -> staging v0.35.4, v1.38.0-beta.0 -> v0.38.0-beta.0
    staging = "v0." + version.removeprefix("v1.")
    replaces = [line.split() for line in text.splitlines() if " => " in line]
    assert len(replaces) > 25
    for parts in replaces:
        if parts[0] in PINNED_BELOW_UPSTREAM:  # a version the proxy serves, not upstream's
            assert parts[-1] == PINNED_BELOW_UPSTREAM[parts[0]]
            continue
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


def binaries(root: Path = Path("/cache"), version: str = "v1.35.4") -> build.Binaries:
    kube, etcd, kwokd = root / f"kube-{version}/bin", root / "etcd-v3.6.16/bin", root / "kwok/bin"
    return build.Binaries(
        kube_version=version,
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


def test_the_audit_log_is_asked_for_only_with_a_policy(tmp_path: Path) -> None:
    plain = kwok.kwokctl_configuration(binaries(), disable_qps_limits=False)["options"]
    assert "kubeAuditPolicy" not in plain
    policy = tmp_path / "audit-policy.yaml"
    audited = kwok.kwokctl_configuration(binaries(), disable_qps_limits=False, audit_policy=policy)
    assert audited["options"]["kubeAuditPolicy"] == str(policy)
    rules = kwok.AUDIT_POLICY["rules"]
    # first match wins: Leases and Events are dropped before writes are logged, reads last
    assert (
        rules[0]["level"] == "None"
        and {"resources": ["leases"], "group": "coordination.k8s.io"} in rules[0]["resources"]
    )
    assert rules[1] == {
        "level": "Metadata",
        "verbs": ["create", "update", "patch", "delete", "deletecollection"],
    }
    assert rules[-1] == {"level": "None"}


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
    apiserver, kcm = config["componentsPatches"]
    assert apiserver == {
        "name": "kube-apiserver",
        "extraArgs": [
            {"key": "enable-admission-plugins", "value": "OwnerReferencesPermissionEnforcement"}
        ],
    }
    # a silent node is lost in about a minute, as on a real cluster (kwokctl says 3m20s)
    assert kcm == {
        "name": "kube-controller-manager",
        "extraArgs": [
            {"key": "node-monitor-grace-period", "value": "60s"},
            {"key": "node-monitor-period", "value": "5s"},
        ],
    }
    fast = kwok.kwokctl_configuration(binaries(), disable_qps_limits=True)
    assert fast["options"]["disableQPSLimits"] is True


GANG_SETTINGS = {
    "v1.35.4": (
        "GenericWorkload=true,GangScheduling=true",
        "scheduling.k8s.io/v1alpha1=true",
    ),
    "v1.36.3": (
        "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true,"
        "DRAWorkloadResourceClaims=true,WorkloadAwarePreemption=true",
        "scheduling.k8s.io/v1alpha2=true",
    ),
    "v1.37.2": (
        "GenericWorkload=true,TopologyAwareWorkloadScheduling=true,"
        "DRAWorkloadResourceClaims=true,PodGroupPreemptionPolicy=true,CompositePodGroup=true",
        "scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true",
    ),
}


@pytest.mark.parametrize("version", list(GANG_SETTINGS))
def test_gang_scheduling_gates_are_on_by_default_and_can_be_turned_off(version: str) -> None:
    options = kwok.kwokctl_configuration(binaries(version=version), disable_qps_limits=False)[
        "options"
    ]
    # kwokctl hands kubeFeatureGates to the API server, controller-manager and scheduler,
    # kubeRuntimeConfig to the API server (--feature-gates, --runtime-config).
    assert (options["kubeFeatureGates"], options["kubeRuntimeConfig"]) == GANG_SETTINGS[version]
    assert options["kubeVersion"] == version
    off = kwok.kwokctl_configuration(
        binaries(version=version), disable_qps_limits=False, gang_scheduling=False
    )["options"]
    gates = {"kubeFeatureGates", "kubeRuntimeConfig"}
    assert off == {k: v for k, v in options.items() if k not in gates}


def test_every_version_has_gang_gates_and_runtime_config() -> None:
    assert set(kwok.GANG_FEATURE_GATES) == set(gomodules.KUBE_VERSIONS)
    assert set(kwok.GANG_RUNTIME_CONFIG) == set(gomodules.KUBE_VERSIONS)
    # 1.37 removed GangScheduling (GenericWorkload turns gang scheduling on): naming it
    # there would stop the API server.
    assert "GangScheduling" not in kwok.GANG_FEATURE_GATES["1.37.2"]
    # 1.38 removed PodGroupPreemptionPolicy (the field is ungated) and serves
    # CompositePodGroups in v1beta1: no v1alpha3
    assert "PodGroupPreemptionPolicy" not in kwok.GANG_FEATURE_GATES["1.38.0-beta.0"]
    assert "CompositePodGroup" in kwok.GANG_FEATURE_GATES["1.38.0-beta.0"]
    assert kwok.GANG_RUNTIME_CONFIG["1.38.0-beta.0"] == ("scheduling.k8s.io/v1beta1",)
    for version, gates in kwok.GANG_FEATURE_GATES.items():
        assert kwok.has_gang_scheduling(version, dict.fromkeys(gates, True))
        assert not kwok.has_gang_scheduling(version, {"GenericWorkload": False})


def _module_cache() -> str:
    """Go's module cache directory ("" without Go)."""
    go = shutil.which("go")
    if go is None:
        return ""
    done = subprocess.run(
        [go, "env", "GOMODCACHE"], capture_output=True, text=True, timeout=60, check=False
    )
    return done.stdout.strip()


def _features_source(version: str) -> str | None:
    """k8s.io/kubernetes@v<version>'s pkg/features/kube_features.go from Go's module cache,
    or None when Go or that module is not there."""
    cache = _module_cache()
    source = Path(cache) / f"k8s.io/kubernetes@v{version}" / "pkg/features/kube_features.go"
    return source.read_text(encoding="utf-8") if cache and source.is_file() else None


@pytest.mark.parametrize("version", list(gomodules.KUBE_VERSIONS))
def test_each_gang_gate_is_one_its_release_declares(version: str) -> None:
    """An unknown gate stops the API server, so each must be declared in that release."""
    source = _features_source(version)
    if source is None:
        pytest.skip(f"k8s.io/kubernetes@v{version} is not in Go's module cache")
    declared = set(re.findall(r"^\t(\w+) featuregate\.Feature = ", source, re.MULTILINE))
    assert set(kwok.GANG_FEATURE_GATES[version]) <= declared


@pytest.mark.parametrize("version", list(gomodules.KUBE_VERSIONS))
def test_each_runtime_config_names_an_api_version_its_release_has(version: str) -> None:
    source = _features_source(version)
    if source is None:
        pytest.skip(f"k8s.io/kubernetes@v{version} is not in Go's module cache")
    api = Path(_module_cache()) / f"k8s.io/api@v0.{version.removeprefix('1.')}"
    if not api.is_dir():
        pytest.skip(f"{api.name} is not in Go's module cache (k8s.io/kubernetes is)")
    for group_version in kwok.GANG_RUNTIME_CONFIG[version]:
        group, api_version = group_version.split("/")
        assert (api / group.removesuffix(".k8s.io") / api_version / "types.go").is_file()


def test_feature_gates_are_merged_on_top_of_the_versions() -> None:
    gates = kwok.feature_gates(
        "v1.37.2", overrides={"CompositePodGroup": False, "DRADeviceTaints": True}
    )
    assert kwok.gates_text(gates) == (
        "GenericWorkload=true,TopologyAwareWorkloadScheduling=true,"
        "DRAWorkloadResourceClaims=true,PodGroupPreemptionPolicy=true,"
        "CompositePodGroup=false,DRADeviceTaints=true"
    )
    assert kwok.feature_gates("1.35.4", gang_scheduling=False, overrides={"A": True}) == {"A": True}
    options = kwok.kwokctl_configuration(
        binaries(), disable_qps_limits=False, gate_overrides={"GangScheduling": False}
    )["options"]
    assert options["kubeFeatureGates"] == "GenericWorkload=true,GangScheduling=false"


@pytest.mark.parametrize(
    ("text", "gates"),
    [
        ("A=true,B=false", {"A": True, "B": False}),
        (" A = True , ,B=FALSE,", {"A": True, "B": False}),
        ("", {}),
        ("A=true,A=false", {"A": False}),
    ],
)
def test_parse_feature_gates(text: str, gates: dict[str, bool]) -> None:
    assert kwok.parse_feature_gates(text) == gates


@pytest.mark.parametrize("text", ["A", "A=yes", "=true", "A-B=true", "A=true=false"])
def test_malformed_feature_gates_are_refused_with_the_form(text: str) -> None:
    with pytest.raises(ValueError, match="is not NAME=true or NAME=false"):
        kwok.parse_feature_gates(text)


def _parser() -> Any:
    import argparse

    from cliques_lab.cli import devcluster_cmd

    parser = argparse.ArgumentParser()
    devcluster_cmd.register(parser.add_subparsers())
    return parser


def test_the_cli_turns_gang_scheduling_off_with_a_flag() -> None:
    parser = _parser()
    assert parser.parse_args(["dev-cluster", "up"]).gang_scheduling is True
    args = parser.parse_args(["dev-cluster", "up", "--no-gang-scheduling"])
    assert args.gang_scheduling is False


def test_up_help_lists_versions_gates_and_the_environment(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        _parser().parse_args(["dev-cluster", "up", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--kube-version V" in text and "--feature-gates K=V,..." in text
    assert "1.35.4, 1.36.3, 1.37.2" in text and "else 1.37.2" in text
    assert "CLIQUES_KUBE_VERSION" in text
    assert "scheduling.k8s.io/v1beta1, scheduling.k8s.io/v1alpha3" in text
    assert "PodGroupPreemptionPolicy, CompositePodGroup" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--kube-version", "1.34.9"], "unsupported Kubernetes version '1.34.9': supported are"),
        (["--feature-gates", "GenericWorkload"], "is not NAME=true or NAME=false"),
    ],
)
def test_up_refuses_a_bad_version_or_gates_in_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _parser().parse_args(["dev-cluster", "up", *argv])
    assert args.func(args) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and message in error


def test_up_reads_the_version_from_the_environment_unless_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cliques_lab.cli import devcluster_cmd

    monkeypatch.delenv(gomodules.KUBE_VERSION_ENV, raising=False)
    assert devcluster_cmd._kube_version(None) is None  # the existing cluster's, or the default
    assert devcluster_cmd._kube_version("v1.36.3") == "1.36.3"
    monkeypatch.setenv(gomodules.KUBE_VERSION_ENV, "1.35.4")
    assert devcluster_cmd._kube_version(None) == "1.35.4"
    assert devcluster_cmd._kube_version("1.37.2") == "1.37.2"
    monkeypatch.setenv(gomodules.KUBE_VERSION_ENV, "1.99.0")
    with pytest.raises(ValueError, match=r"^CLIQUES_KUBE_VERSION: unsupported"):
        devcluster_cmd._kube_version(None)


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
    path = Path(__file__).resolve().parents[3] / "scripts" / "gen_kube_gomod.py"
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


def test_generator_takes_a_pre_release_its_stand_ins_and_pins() -> None:
    gen = load_generator()
    assert gen.staging_version("v1.38.0-beta.0") == "v0.38.0-beta.0"
    assert gen.module_dir("v1.38.0-beta.0").name == "kube-1.38"
    text = gen.render_gomod(UPSTREAM, "v1.38.0-beta.0", frozenset({"k8s.io/client-go"}))
    assert "\tk8s.io/api => k8s.io/api v0.38.0-beta.0" in text
    assert "k8s.io/client-go =>" not in text  # a stand-in: the build replaces it
    pinned = "\tsigs.k8s.io/structured-merge-diff/v7 => sigs.k8s.io/structured-merge-diff/v7 v7.0.0"
    assert pinned in text
    assert pinned not in gen.render_gomod(UPSTREAM, "v1.37.2")


@pytest.mark.parametrize("module", list(gomodules.KUBE_VERSIONS.values()))
def test_committed_kube_module_is_what_the_generator_makes(module: gomodules.GoModule) -> None:
    """The tools and staging pins of the committed go.mod match the generator's (before tidy),
    in the directory the generator writes for its version."""
    gen = load_generator()
    committed = module.gomod_text()
    assert gomodules.tool_packages(committed) == list(gen.TOOLS)
    assert committed.startswith(gen.HEADER)
    assert gen.module_dir(module.version()) == module.directory


#: The part of kwok's `pod-ready` template that `kwok.with_resources` extends.
_READY_TEMPLATE = (
    'conditions:\n- lastTransitionTime: {{ $now | Quote }}\n  status: "True"\n  type: Ready\n'
    "{{ range .spec.readinessGates }}\n- lastTransitionTime: {{ $now | Quote }}\n"
    '  status: "True"\n  type: {{ .conditionType | Quote }}\n{{ end }}\n'
    "containerStatuses:\n{{ range .spec.containers }}\n- image: {{ .image | Quote }}\n"
    "  name: {{ .name | Quote }}\n{{ end }}\n"
)


def _stage(name: str, expressions: list[dict[str, object]]) -> dict[str, object]:
    spec: dict[str, object] = {
        "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
        "selector": {"matchExpressions": expressions},
    }
    if name == "pod-ready":
        spec["next"] = {"statusTemplate": _READY_TEMPLATE}
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Stage",
        "metadata": {"name": name},
        "spec": spec,
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
    names += ["pod-image-restart", "pod-image-ready", "pod-image-pull-error"]
    names += [s["metadata"]["name"] for s in kwok.resize_stages()]
    names.append(kwok.TERMINATION_STAGE)
    names += list(kwok.GATE_STAGES)
    names += list(startmodel.stage_names())
    assert [s["metadata"]["name"] for s in stages] == names
    by_name = {s["metadata"]["name"]: s for s in stages}
    key = f'.metadata.annotations["{kwok.START_DELAY_ANNOTATION}"]'
    ready = by_name["pod-ready"]["spec"]["selector"]["matchExpressions"]
    instant = {"key": startmodel.modelled_expression(False), "operator": "In", "values": ["false"]}
    assert ready == [
        deletion,
        dict(kwok.START_GATE_REQUIREMENT),
        {"key": key, "operator": "DoesNotExist"},
        instant,
    ]
    assert "delay" not in by_name["pod-ready"]["spec"]  # as kwok has it, for pods without
    delayed = by_name[kwok.DELAYED_STAGE]["spec"]
    assert delayed["selector"]["matchExpressions"] == [
        deletion,
        dict(kwok.START_GATE_REQUIREMENT),
        {"key": key, "operator": "Exists"},
        instant,
    ]
    assert delayed["delay"] == dict(kwok.START_DELAY)
    for name, stage in by_name.items():
        if name not in (
            "pod-ready",
            kwok.DELAYED_STAGE,
            *startmodel.stage_names(),
        ) and not name.startswith(("pod-image", "pod-resize", "pod-gates", kwok.TERMINATION_STAGE)):
            extra = (
                [dict(kwok._NO_FINALIZERS), dict(kwok._GRACEFUL)] if name == "pod-delete" else []
            )
            assert stage["spec"]["selector"]["matchExpressions"] == [deletion, *extra], name
    # adding it twice changes nothing; the input is not modified
    again = kwok.with_start_gate(by_name["pod-ready"])
    assert again == by_name["pod-ready"] and again is not by_name["pod-ready"]
    assert kwok.stage_changes(kwok.config_text({}, stages)) == []
    # a cluster made before pod-delete skipped the pod's last write (grace period 0) is told
    for expr in by_name["pod-delete"]["spec"]["selector"]["matchExpressions"]:
        if expr == dict(kwok._GRACEFUL):
            by_name["pod-delete"]["spec"]["selector"]["matchExpressions"].remove(expr)
    assert kwok.stage_changes(kwok.config_text({}, stages)) == ["single deletes"]


def test_image_stages_act_on_running_pods_whose_images_changed() -> None:
    import yaml

    stages = {s["metadata"]["name"]: s["spec"] for s in kwok.image_stages()}
    for name, spec in stages.items():
        keys = [e["key"] for e in spec["selector"]["matchExpressions"]]
        assert ".metadata.deletionTimestamp" in keys and ".status.phase" in keys, name
        assert any("containerStatuses" in k and "sort" in k for k in keys), name
        # the Go templates hold together as YAML once rendered (here: not rendered, but the
        # conditions part is plain YAML around the template actions)
        assert "containerStatuses:" in spec["next"]["statusTemplate"]
    assert "delay" not in stages["pod-image-restart"]
    assert stages["pod-image-ready"]["delay"] == {
        "durationMilliseconds": kwok.RESTART_MS,
        "jitterDurationMilliseconds": 2 * kwok.RESTART_MS,
    }
    saved = kwok.config_text({}, [s for s in kwok.image_stages()])
    assert "image updates" not in kwok.stage_changes(
        saved
        + "---\n"
        + yaml.safe_dump({"kind": "Stage", "metadata": {"name": "pod-ready"}, "spec": {}})
    )
    old = yaml.safe_dump({"kind": "Stage", "metadata": {"name": "pod-ready"}, "spec": {}})
    assert "image updates" in kwok.stage_changes(old)


def test_pod_ready_leaves_the_gang_gate_to_the_operator_and_gates_decide_ready() -> None:
    from cliques.api import labels

    assert kwok.GANG_GATE == labels.CONDITION_GANG_READY
    ready = kwok.with_gang_gate(_stage("pod-ready", []))
    template = ready["spec"]["next"]["statusTemplate"]
    # a pod with the operator's gate is not Ready and its gate's condition is not set True;
    # any other gate's condition is, as kwok has it
    assert template.startswith(kwok._GANG_GATED)
    assert 'status: {{ if $gangGated }}"False"{{ else }}"True"{{ end }}\n  type: Ready' in template
    assert f'{{{{ if ne .conditionType "{kwok.GANG_GATE}" }}}}' in template
    assert template.count("{{ end }}{{ end }}") == 2  # the gated check, the other gates
    with pytest.raises(ValueError, match="readiness gates not found"):
        kwok.with_gang_gate(_stage("pod-ready", []) | {"spec": {"next": {"statusTemplate": ""}}})
    stages = {s["metadata"]["name"]: s["spec"] for s in kwok.gate_stages()}
    assert set(stages) == set(kwok.GATE_STAGES)
    up = stages["pod-gates-ready"]
    down = stages["pod-gates-unready"]
    assert {"key": kwok._GATES_MET, "operator": "In", "values": ["true"]} in up["selector"][
        "matchExpressions"
    ]
    assert {"key": kwok._GATES_MET, "operator": "In", "values": ["false"]} in down["selector"][
        "matchExpressions"
    ]
    assert 'status: "True", type: Ready' in up["next"]["statusTemplate"]
    assert 'status: "False", type: Ready' in down["next"]["statusTemplate"]
    old = {"kind": "Stage", "metadata": {"name": "pod-ready"}, "spec": {}}
    import yaml

    assert "readiness gates" in kwok.stage_changes(yaml.safe_dump(old))


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


@pytest.mark.parametrize("version", ["1.37.2", "1.38.0-beta.0"])
def test_the_eviction_request_gate_also_serves_its_alpha_api(version: str) -> None:
    options = kwok.kwokctl_configuration(
        binaries(version=version),
        disable_qps_limits=False,
        gate_overrides={"EvictionRequestAPI": True},
    )["options"]
    # kwokctl hands the gate to the API server and kube-controller-manager (whose default
    # --controllers=* runs the evictionrequest controllers from 1.38 on), the API version
    # to the API server alone
    assert "EvictionRequestAPI=true" in options["kubeFeatureGates"].split(",")
    served = options["kubeRuntimeConfig"].split(",")
    assert served[-1] == "lifecycle.k8s.io/v1alpha1=true"
    assert served[:-1] == [f"{gv}=true" for gv in kwok.GANG_RUNTIME_CONFIG[version]]
    # without gang scheduling, the gate's API alone; turned off, none
    assert (
        kwok.runtime_config(version, gang_scheduling=False, gates={"EvictionRequestAPI": True})
        == "lifecycle.k8s.io/v1alpha1=true"
    )
    assert kwok.runtime_config(version, gates={"EvictionRequestAPI": False}) == ",".join(
        f"{gv}=true" for gv in kwok.GANG_RUNTIME_CONFIG[version]
    )


def test_a_release_without_the_eviction_request_controller_says_so() -> None:
    gates = {"EvictionRequestAPI": True}
    assert "no evictionrequest-controller" in " ".join(kwok.gate_notes("v1.37.2", gates))
    assert kwok.gate_notes("1.38.0-beta.0", gates) == []
    assert kwok.gate_notes("1.37.2", {"EvictionRequestAPI": False}) == []


@pytest.mark.parametrize("version", list(gomodules.KUBE_VERSIONS))
def test_each_gated_runtime_config_is_served_by_the_releases_with_the_gate(version: str) -> None:
    source = _features_source(version)
    if source is None:
        pytest.skip(f"k8s.io/kubernetes@v{version} is not in Go's module cache")
    api = Path(_module_cache()) / f"k8s.io/api@v0.{version.removeprefix('1.')}"
    if not api.is_dir():
        pytest.skip(f"{api.name} is not in Go's module cache (k8s.io/kubernetes is)")
    for gate, group_versions in kwok.GATED_RUNTIME_CONFIG.items():
        if not re.search(rf"^\t{gate} featuregate\.Feature = ", source, re.MULTILINE):
            continue  # (a release without the gate: the gate would stop the API server)
        for group_version in group_versions:
            group, api_version = group_version.split("/")
            assert (api / group.removesuffix(".k8s.io") / api_version / "types.go").is_file()
