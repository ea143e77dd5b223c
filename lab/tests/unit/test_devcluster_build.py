"""The cached Go builds, with a fake `go` (a shell script): what is built, what is reused,
the lock against two builds at once, progress lines, and the errors a person can act on
(no Go, a Go too old, a failing step with its log)."""

from __future__ import annotations

import fcntl
import io
import json
import os
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cliques_lab.devcluster import build, gomodules, progress
from cliques_lab.devcluster.errors import BuildError, GoNotFoundError

# A stand-in for `go`: `env` answers like Go 1.26, `list` prints a few package paths, `build`
# writes one executable per package into the -o directory that prints every pinned version.
# `mod download -json` names $FAKE_GO_MODDIR as the module source to patch. Each call is
# appended to $FAKE_GO_CALLS. $FAKE_GO_FAIL=<subcommand> makes that one fail.
FAKE_GO = r"""#!/bin/sh
echo "$*" >> "$FAKE_GO_CALLS"
cmd="$1"
if [ "$cmd" = "$FAKE_GO_FAIL" ]; then
    echo "go: example.com/broken@v1.0.0: reading example.com: 410 Gone" >&2
    exit 1
fi
case "$cmd" in
env) echo "${FAKE_GO_VERSION:-go1.26.8}"; echo "${FAKE_GO_TOOLCHAIN:-auto}" ;;
version) printf '%s: go1.26.8\n\tmod\texample.com/m\tv0.17.0\n' "$3" ;;
mod) echo "{\"Dir\": \"$FAKE_GO_MODDIR\"}" ;;
list)
    echo "go: downloading example.com/dep v1.0.0" >&2
    for p in runtime example.com/a example.com/b example.com/c; do echo "$p"; done ;;
build)
    out=""; prev=""
    for a in "$@"; do
        if [ "$prev" = "-o" ]; then out="$a"; fi
        prev="$a"
    done
    for a in "$@"; do
        case "$a" in
        -*|/*) ;;
        *.*/*)
            name=$(basename "$a")
            case "$name" in v[0-9]*) name=$(basename "$(dirname "$a")");; esac
            echo "$a" >&2
            v="v1.35.4 v1.36.3 v1.37.2 3.6.16 0.8.0 v4.3.1 v0.9.0"
            printf '#!/bin/sh\necho "versions %s $*"\n' "$v" > "$out/$name"
            chmod +x "$out/$name" ;;
        esac
    done ;;
esac
"""


@pytest.fixture
def fake_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    go = tmp_path / "fake-go"
    go.write_text(FAKE_GO)
    go.chmod(go.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("CLIQUES_GO", str(go))
    monkeypatch.setenv("FAKE_GO_CALLS", str(tmp_path / "calls"))
    monkeypatch.delenv("FAKE_GO_FAIL", raising=False)
    monkeypatch.delenv(gomodules.KUBE_VERSION_ENV, raising=False)
    # A read-only "module cache" copy of every module that is patched before building.
    source = tmp_path / "modcache" / "src"
    for module in gomodules.all_modules():
        for patch in module.patches:
            target = source / patch.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(f"package x\n\nfunc f() {{\n\t{patch.old}\n}}\n")
    for path in sorted(source.rglob("*"), reverse=True):
        path.chmod(0o555 if path.is_dir() else 0o444)
    source.chmod(0o555)
    monkeypatch.setenv("FAKE_GO_MODDIR", str(source))
    yield go
    for path in [tmp_path / "modcache", *(tmp_path / "modcache").rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


KUBE = gomodules.kube_module(gomodules.DEFAULT_KUBE_VERSION)


def calls(tmp_path: Path) -> list[str]:
    path = tmp_path / "calls"
    return path.read_text().splitlines() if path.exists() else []


def test_builds_every_module_once_then_reuses_the_cache(fake_go: Path, tmp_path: Path) -> None:
    root = tmp_path / "cache"
    out = io.StringIO()
    binaries = build.ensure_binaries(progress.PlainReporter(out), root=root)

    assert binaries.kube_version == KUBE.version() == "v1.37.2"
    assert binaries.kubectl == root / "kube-v1.37.2" / "bin" / "kubectl"
    assert binaries.etcd.name == "etcd"  # go names it `server` (from server/v3); renamed
    for path in (binaries.kube_apiserver, binaries.etcd, binaries.kwok, binaries.kwokctl):
        assert os.access(path, os.X_OK)
    builds = [c for c in calls(tmp_path) if c.startswith("build")]
    assert len(builds) == 3
    assert all("-trimpath" in c and "-mod=readonly" in c for c in builds)
    assert any("gitVersion=v1.37.2" in c for c in builds)
    stamp = json.loads((root / "kube-v1.37.2" / "stamp.json").read_text())
    assert stamp["version"] == "v1.37.2"
    assert "built in" in out.getvalue()
    assert "downloaded 1 modules (latest example.com/dep v1.0.0)" in out.getvalue()
    assert "go: downloading" not in out.getvalue()  # summarised, not one line per module
    assert (root / f"etcd-{gomodules.ETCD.version()}" / "build.log").read_text().count("$ ") >= 3

    before = len(calls(tmp_path))
    assert build.ensure_binaries(root=root) == binaries
    assert build.installed_binaries(root) == binaries
    assert len(calls(tmp_path)) == before  # nothing ran: not even `go env`


def test_each_kubernetes_version_builds_once_into_its_own_directory(
    fake_go: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cache"
    newest = build.ensure_binaries(root=root)
    before = len(calls(tmp_path))
    older = build.ensure_binaries(root=root, kube_version="v1.35.4")
    builds = [c for c in calls(tmp_path)[before:] if c.startswith("build")]
    assert len(builds) == 1 and "gitVersion=v1.35.4" in builds[0]  # etcd and kwok reused
    assert older.kube_version == "v1.35.4"
    assert older.kubectl == root / "kube-v1.35.4" / "bin" / "kubectl"
    assert (older.etcd, older.kwokctl) == (newest.etcd, newest.kwokctl)
    assert not (root / "kube-v1.36.3").exists()  # never chosen, never built
    assert build.installed_binaries(root, "1.37.2") == newest
    assert build.installed_binaries(root, "1.36.3") is None
    monkeypatch.setenv(gomodules.KUBE_VERSION_ENV, "1.35.4")
    assert build.installed_binaries(root) == older


def test_helm_is_built_only_when_asked_then_reused(fake_go: Path, tmp_path: Path) -> None:
    root = tmp_path / "cache"
    build.ensure_binaries(root=root)
    assert not any("helm.sh/" in c for c in calls(tmp_path))
    assert build.installed_tool(gomodules.HELM, root) is None

    out = io.StringIO()
    helm = build.ensure_tool(gomodules.HELM, progress.PlainReporter(out), root=root)
    assert helm.binary("helm") == root / f"helm-{gomodules.HELM.version()}" / "bin" / "helm"
    assert os.access(helm.binary("helm"), os.X_OK)
    builds = [c for c in calls(tmp_path) if c.startswith("build") and "helm.sh/" in c]
    assert len(builds) == 1 and "internal/version.version=v4." in builds[0]
    assert "/helm version --short\nversions" in helm.log_path.read_text()
    assert "built in" in out.getvalue()

    before = len(calls(tmp_path))
    assert build.ensure_tool(gomodules.HELM, root=root) == helm
    assert build.installed_tool(gomodules.HELM, root) == helm
    assert len(calls(tmp_path)) == before


def test_lws_manager_is_built_only_when_asked_under_its_own_name(
    fake_go: Path, tmp_path: Path
) -> None:
    root = tmp_path / "cache"
    build.ensure_binaries(root=root)
    assert not any("sigs.k8s.io/lws" in c for c in calls(tmp_path))
    assert build.installed_tool(gomodules.LWS, root) is None

    lws = build.ensure_tool(gomodules.LWS, root=root)
    # `go build` names the command `cmd` (sigs.k8s.io/lws/cmd); it is installed renamed.
    assert gomodules.LWS.binaries() == {"lws-manager": "sigs.k8s.io/lws/cmd"}
    assert os.access(lws.binary("lws-manager"), os.X_OK)
    assert not (lws.bin_dir / "cmd").exists()
    builds = [c for c in calls(tmp_path) if c.startswith("build") and "sigs.k8s.io/lws" in c]
    assert len(builds) == 1
    assert f"lws/pkg/version.GitVersion={gomodules.LWS.version()}" in builds[0]
    assert build.installed_tool(gomodules.LWS, root) == lws


def test_kueue_without_a_version_flag_is_checked_by_help_and_its_build_info(
    fake_go: Path, tmp_path: Path
) -> None:
    root = tmp_path / "cache"
    kueue = build.ensure_tool(gomodules.KUEUE, root=root)
    assert gomodules.KUEUE.binaries() == {"kueue": "sigs.k8s.io/kueue/cmd/kueue"}
    log = kueue.log_path.read_text()
    assert "/kueue --help\n" in log  # it runs (exit status 0)
    assert "version -m " in log and "v0.17.0" in log
    # Built from the patched copy: the metrics certificate directory comes from the environment.
    assert "patched cmd/kueue/main.go" in log
    builds = [c for c in calls(tmp_path) if c.startswith("build") and "sigs.k8s.io/kueue" in c]
    assert len(builds) == 1 and "kueue/pkg/version.GitVersion=v0.17.0" in builds[0]
    ms = build.ensure_tool(gomodules.METRICS_SERVER, root=root)
    assert os.access(ms.binary("metrics-server"), os.X_OK)
    assert "/metrics-server --version\nversions" in ms.log_path.read_text()


def test_patched_modules_build_from_a_patched_copy(fake_go: Path, tmp_path: Path) -> None:
    patched = [m for m in gomodules.cluster_modules(gomodules.DEFAULT_KUBE_VERSION) if m.patches]
    assert patched, "no module is patched any more: drop this test"
    root = tmp_path / "cache"
    build.ensure_binaries(root=root)
    for module in patched:
        builds = [c for c in calls(tmp_path) if c.startswith("build") and module.key in c]
        assert len(builds) == 1 and "-modfile=" in builds[0]
        modfile = Path(builds[0].split("-modfile=", 1)[1].split()[0])
        replace = modfile.read_text().splitlines()[-1]
        assert replace.startswith(f"replace {module.version_module} => ")
        copy = Path(replace.split(" => ", 1)[1])
        for patch in module.patches:
            text = (copy / patch.file).read_text()
            assert patch.new in text and patch.old not in text.replace(patch.new, "")


def test_a_patch_that_no_longer_applies_fails_the_build(fake_go: Path, tmp_path: Path) -> None:
    for path in (tmp_path / "modcache").rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    for target in (tmp_path / "modcache" / "src").rglob("*.go"):
        target.write_text("package x // upstream rewrote this file\n")
    with pytest.raises(BuildError, match="patch "):
        build.ensure_binaries(root=tmp_path / "cache")


def test_a_changed_pin_rebuilds_only_that_module(fake_go: Path, tmp_path: Path) -> None:
    root = tmp_path / "cache"
    build.ensure_binaries(root=root)
    stamp_path = root / f"kwok-{gomodules.KWOK.version()}" / "stamp.json"
    stamp = json.loads(stamp_path.read_text())
    stamp["fingerprint"] = "stale"
    stamp_path.write_text(json.dumps(stamp))
    assert build.installed_binaries(root) is None
    before = len(calls(tmp_path))
    build.ensure_binaries(root=root)
    builds = [c for c in calls(tmp_path)[before:] if c.startswith("build")]
    assert len(builds) == 1 and "sigs.k8s.io/kwok/cmd/kwokctl" in builds[0]


def test_a_failed_step_names_the_step_and_the_log(
    fake_go: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_GO_FAIL", "build")
    root = tmp_path / "cache"
    with pytest.raises(BuildError) as caught:
        build.ensure_binaries(root=root)
    error = caught.value
    assert error.step == "go build"
    assert error.log_path == root / f"kube-{KUBE.version()}" / "build.log"
    assert "410 Gone" in error.log_path.read_text()
    message = str(error)
    assert "failed at step 'go build'" in message
    assert str(error.log_path) in message
    assert "410 Gone" in message  # the tail of the log
    # Nothing half-built is left to be mistaken for a build.
    kube_dir = error.log_path.parent
    assert not (kube_dir / "bin").exists()
    assert not list(kube_dir.glob("bin.tmp-*"))
    assert build.installed_binaries(root) is None


def test_a_binary_that_does_not_report_its_version_fails_the_build(
    fake_go: Path, tmp_path: Path
) -> None:
    fake_go.write_text(
        fake_go.read_text().replace("v1.35.4 v1.36.3 v1.37.2 3.6.16", "v0.0.0-master 3.6.16")
    )
    with pytest.raises(BuildError, match="run kube-apiserver"):
        build.ensure_binaries(root=tmp_path / "cache")


def test_second_build_waits_for_the_lock_then_reuses(fake_go: Path, tmp_path: Path) -> None:
    root = tmp_path / "cache"
    kube = build.ModuleBuild(KUBE, KUBE.version(), root)
    root.mkdir()
    reports = io.StringIO()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            build.ensure_binaries(progress.PlainReporter(reports), root=root)
        except BaseException as exc:  # surfaced in the main thread
            errors.append(exc)

    with kube.lock_path.open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write("pid 4242\n")
        held.flush()
        worker = threading.Thread(target=run)
        worker.start()
        deadline = time.monotonic() + 10
        while "waiting for the build running in pid 4242" not in reports.getvalue():
            assert time.monotonic() < deadline, reports.getvalue()
            time.sleep(0.01)
        assert not any(c.startswith("build") for c in calls(tmp_path))
        fcntl.flock(held, fcntl.LOCK_UN)
    worker.join(timeout=30)
    assert not worker.is_alive() and not errors
    assert build.installed_binaries(root) is not None


def test_no_go_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLIQUES_GO", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GoNotFoundError) as caught:
        build.find_go(locations=[tmp_path / "nowhere" / "go"])
    message = str(caught.value)
    assert "no Go toolchain was found" in message
    assert "https://go.dev/dl/" in message
    assert "CLIQUES_GO" in message
    # a module that names its own toolchain (Kubernetes 1.38: Go 1.27) does not count: the
    # go command fetches that one itself
    own = [m for m in gomodules.all_modules() if not m.toolchain]
    needed = max(build.parse_go_version(m.go_version()) for m in own)
    assert f"Go {'.'.join(map(str, needed))}" in message


def test_cliques_go_must_be_executable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLIQUES_GO", str(tmp_path / "missing"))
    with pytest.raises(GoNotFoundError, match="not an executable"):
        build.find_go()


@pytest.mark.parametrize(
    ("version", "toolchain", "ok"),
    [
        ("go1.26.8", "auto", True),
        ("go1.24.3", "auto", True),  # Go fetches the newer toolchain as a module
        ("go1.24.3", "local", False),
        ("go1.19.2", "auto", False),
    ],
)
def test_go_version_check(
    fake_go: Path, monkeypatch: pytest.MonkeyPatch, version: str, toolchain: str, ok: bool
) -> None:
    monkeypatch.setenv("FAKE_GO_VERSION", version)
    monkeypatch.setenv("FAKE_GO_TOOLCHAIN", toolchain)
    if ok:
        assert build.check_go_version(fake_go) == version
    else:
        with pytest.raises(GoNotFoundError, match=r"needs Go \d+\.\d+"):
            build.check_go_version(fake_go)


def test_go_version_check_looks_at_the_modules_to_build(
    fake_go: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_GO_VERSION", "go1.25.5")
    monkeypatch.setenv("FAKE_GO_TOOLCHAIN", "local")
    older = gomodules.kube_module("1.35.4")
    assert older.go_version() == "1.25.0"
    assert build.check_go_version(fake_go, [older]) == "go1.25.5"
    with pytest.raises(GoNotFoundError, match=r"needs Go 1\.26"):
        build.check_go_version(fake_go, [gomodules.kube_module("1.37.2")])


def test_a_module_that_names_its_toolchain_gets_it_for_its_build_only(
    fake_go: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kubernetes 1.38 needs Go 1.27: its build, and only its, runs with
    GOTOOLCHAIN=go1.27.3, and the machine's Go 1.26 with GOTOOLCHAIN=local is enough."""
    monkeypatch.setenv("FAKE_GO_VERSION", "go1.26.8")
    monkeypatch.setenv("FAKE_GO_TOOLCHAIN", "local")
    monkeypatch.setenv("GOTOOLCHAIN", "local")
    beta = gomodules.kube_module("v1.38.0-beta.0")
    assert beta.go_version() == "1.27.0" and beta.toolchain == "go1.27.3"
    assert build.check_go_version(fake_go, [beta]) == "go1.26.8"
    assert build.go_environment(beta)["GOTOOLCHAIN"] == "go1.27.3"
    for other in (gomodules.kube_module("1.37.2"), gomodules.ETCD, gomodules.KWOK, None):
        assert build.go_environment(other)["GOTOOLCHAIN"] == "local"
    # the toolchain is part of what the build's stamp covers
    assert beta.fingerprint("") != gomodules.GoModule(
        key=beta.key, version_module=beta.version_module, subdir=beta.subdir
    ).fingerprint("")


def test_a_stand_in_is_made_from_the_module_it_names(tmp_path: Path) -> None:
    source = tmp_path / "src"
    api = source / "pkg/apis/x/v1"
    api.mkdir(parents=True)
    (api / "types.go").write_text('package v1\nimport "old.io/m/pkg/client/y"\n')
    (api / "types_test.go").write_text("package v1\n")
    (api / "conversion.go").write_text("package v1\n")
    (source / "pkg/other").mkdir()
    (source / "pkg/other/o.go").write_text("package other\n")
    standin = gomodules.StandIn(
        module="new.io/api",
        go="1.27.0",
        why="test",
        source="old.io/m@v0.1.0",
        directories=("pkg/apis/x/v1",),
        drop=("pkg/apis/x/v1/conversion.go",),
        rewrites=(("old.io/m/pkg/client", "new.io/api/pkg/client"),),
    )
    target = tmp_path / "out"
    build.make_standin(standin, source, target)
    assert (target / "go.mod").read_text() == "module new.io/api\n\ngo 1.27.0\n"
    made = sorted(p.relative_to(target).as_posix() for p in target.rglob("*.go"))
    assert made == ["pkg/apis/x/v1/types.go"]
    assert '"new.io/api/pkg/client/y"' in (target / "pkg/apis/x/v1/types.go").read_text()
    empty = gomodules.StandIn(module="new.io/empty", go="1.27.0", why="tests only")
    build.make_standin(empty, None, tmp_path / "empty")
    assert [p.name for p in (tmp_path / "empty").iterdir()] == ["go.mod"]


def test_a_stand_in_replaces_what_the_go_mod_pinned_it_to(tmp_path: Path) -> None:
    gomod = (
        "module m\n\nreplace (\n\tk8s.io/a => k8s.io/a v0.1.0\n\tk8s.io/b => k8s.io/b v0.1.0\n)\n"
    )
    out = build.standin_gomod(gomod, {"k8s.io/b": tmp_path / "b"})
    assert "k8s.io/b => k8s.io/b v0.1.0" not in out
    assert f"\tk8s.io/b => {tmp_path / 'b'}" in out
    assert "\tk8s.io/a => k8s.io/a v0.1.0" in out
    # 1.38's stand-ins are the two modules its release added that the proxy does not serve
    beta = gomodules.kube_module("1.38.0-beta.0")
    assert [s.module for s in beta.standins] == ["k8s.io/apiextensions-api", "k8s.io/ktesting"]
    assert not gomodules.kube_module("1.37.2").standins
    for standin in beta.standins:  # none of them is pinned to a version in its go.mod
        assert f"\t{standin.module} =>" not in beta.gomod_text()


def test_parse_go_version() -> None:
    assert build.parse_go_version("go1.26.8") == (1, 26, 8)
    assert build.parse_go_version("1.25.0") == (1, 25, 0)
    assert build.parse_go_version("go1.26rc1") == (1, 26)


def test_cache_root_honours_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLIQUES_CACHE_DIR", str(tmp_path / "c"))
    assert build.cache_root() == tmp_path / "c"
    monkeypatch.delenv("CLIQUES_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert build.cache_root() == tmp_path / "xdg" / "cliques"


def test_plain_progress_prints_a_line_per_tenth() -> None:
    out = io.StringIO()
    reporter = progress.PlainReporter(out)
    reporter.start("kube v1", "building")
    reporter.total("kube v1", 200)
    for done in range(1, 201):
        reporter.advance("kube v1", done, f"pkg{done}")
    reporter.finish("kube v1", True, "built")
    lines = out.getvalue().splitlines()
    assert lines[0] == "[build kube v1] building"
    compiled = [line for line in lines if "compiled" in line]
    assert len(compiled) == 10
    assert compiled[0].startswith("[build kube v1] compiled 20/200 packages (10%")
    assert lines[-1] == "[build kube v1] built"


def test_format_seconds() -> None:
    assert progress.format_seconds(5.2) == "5s"
    assert progress.format_seconds(75) == "1m15s"
    assert progress.format_seconds(3700) == "1h01m40s"


def test_rich_progress_runs_through_a_build() -> None:
    reporter = progress.RichReporter()
    reporter.step("kube v1", "waiting for the build running in pid 1 to finish")
    reporter.start("kube v1", "building")
    reporter.downloaded("kube v1", 1, "example.com/a v1.0.0")
    reporter.total("kube v1", 3)
    for done in range(1, 4):
        reporter.advance("kube v1", done, f"pkg{done}")
    reporter.finish("kube v1", True, "built")
    reporter.close()
    reporter.close()  # idempotent


def test_the_build_command_builds_helm_only_with_its_flag(
    fake_go: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from cliques.cli import build_parser

    monkeypatch.setenv("CLIQUES_CACHE_DIR", str(tmp_path / "cache"))
    args = build_parser().parse_args(["dev-cluster", "build"])
    assert args.func(args) == 0
    printed = capsys.readouterr().out.split()
    assert printed[-1].endswith("/kwokctl") and not any("helm" in p for p in printed)

    args = build_parser().parse_args(["dev-cluster", "build", "--kube-version", "v1.35.4"])
    assert args.func(args) == 0
    printed = capsys.readouterr().out.split()
    assert printed[0] == str(tmp_path / "cache" / "kube-v1.35.4" / "bin" / "kube-apiserver")

    args = build_parser().parse_args(["dev-cluster", "build", "--kube-version", "1.34.0"])
    assert args.func(args) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "supported are 1.35.4, 1.36.3, 1.37.2" in error

    args = build_parser().parse_args(["dev-cluster", "build", "--helm"])
    assert args.func(args) == 0
    helm = Path(capsys.readouterr().out.split()[-1])
    assert helm == tmp_path / "cache" / f"helm-{gomodules.HELM.version()}" / "bin" / "helm"
    assert os.access(helm, os.X_OK)

    args = build_parser().parse_args(["dev-cluster", "build", "--lws"])
    assert args.func(args) == 0
    lws = Path(capsys.readouterr().out.split()[-1])
    assert lws == tmp_path / "cache" / f"lws-{gomodules.LWS.version()}" / "bin" / "lws-manager"
    assert os.access(lws, os.X_OK)
