"""Build the dev-cluster binaries from the Go modules in `gomod/`, once per machine.

Nothing is downloaded but Go modules (through the ordinary Go proxy): each module a dev
cluster of the chosen Kubernetes version runs (`gomodules.cluster_modules`) is compiled with
`go build` into a cache directory keyed by its version, `<cache>/<key>-<version>/bin/`
(`kube-v1.37.2`, `etcd-v3.6.16`; a Kubernetes version is built only when it is chosen),
where `<cache>` is `$CLIQUES_CACHE_DIR`, else `$XDG_CACHE_HOME/cliques`, else
`~/.cache/cliques`. A `stamp.json` written last marks a complete build of exactly the
pinned `go.mod`/`go.sum` and link flags; the next run reuses it. An exclusive `fcntl` lock
per module keeps two processes from building it at once (the second waits, then reuses the
first one's result). Each build writes its log to `<cache>/<key>-<version>/build.log`; a
failure names the failing step and that log.

`ensure_binaries(kube_version=...)` is the entry point (used by `cluster.up`, the test
fixture and `cliques dev-cluster build`); `installed_binaries()` only looks; both default
to `gomodules.kube_version()` ($CLIQUES_KUBE_VERSION, else the default). `ensure_tool()` and
`installed_tool()` do the same for one module of `gomodules.TOOLS` (helm, lws-manager, the
add-ons kueue and metrics-server), which a dev cluster does not need and is built only when
asked for. A binary without a version flag (kueue) is checked by `--help` and by the version
`go version -m` reads from it.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from cliques_lab.devcluster import gomodules
from cliques_lab.devcluster.errors import BuildError, DevClusterError, GoNotFoundError
from cliques_lab.devcluster.gomodules import GoModule, StandIn
from cliques_lab.devcluster.progress import QuietReporter, Reporter, format_seconds

# Go that can switch to a newer toolchain by itself (GOTOOLCHAIN=auto) when a go.mod asks.
_MIN_GO = (1, 21)
_PACKAGE_LINE = re.compile(r"^[A-Za-z0-9_.~\-]+(/[A-Za-z0-9_.~\-+]+)*$")
_LOG_TAIL_LINES = 25
# How each binary reports its version (default: `--version`).
_VERSION_ARGS = {"kubectl": ("version", "--client"), "helm": ("version", "--short")}
# Binaries without a version flag: they must answer `--help` (exit status 0), and the
# version is looked for in what `go version -m` reads from them (the -ldflags that stamp it).
_NO_VERSION_FLAG = frozenset({"kueue"})


def cache_root() -> Path:
    """Where builds and clusters live: outside the repository, shared by checkouts."""
    explicit = os.environ.get("CLIQUES_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return (base / "cliques").resolve()


@dataclass(frozen=True)
class ModuleBuild:
    """Where one module's build of one version lives in the cache."""

    module: GoModule
    version: str
    root: Path

    @property
    def label(self) -> str:
        return f"{self.module.key} {self.version}"

    @property
    def directory(self) -> Path:
        return self.root / f"{self.module.key}-{self.version}"

    @property
    def bin_dir(self) -> Path:
        return self.directory / "bin"

    @property
    def stamp_path(self) -> Path:
        return self.directory / "stamp.json"

    @property
    def log_path(self) -> Path:
        return self.directory / "build.log"

    @property
    def lock_path(self) -> Path:
        return self.root / f"{self.module.key}-{self.version}.lock"

    @property
    def ldflags(self) -> str:
        return gomodules.ldflags_for(self.module, self.version)

    def binary(self, name: str) -> Path:
        return self.bin_dir / name

    def expected_stamp(self) -> str:
        return self.module.fingerprint(self.ldflags)

    def is_complete(self) -> bool:
        """A finished build of the pinned go.mod/go.sum with every binary in place."""
        try:
            stamp = json.loads(self.stamp_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        if not isinstance(stamp, dict) or stamp.get("fingerprint") != self.expected_stamp():
            return False
        return all(os.access(self.binary(name), os.X_OK) for name in self.module.binaries())

    def stamp(self) -> dict[str, object]:
        try:
            data = json.loads(self.stamp_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}


def module_builds(root: Path | None = None, kube_version: str | None = None) -> list[ModuleBuild]:
    """The builds a dev cluster of `kube_version` needs (None: `gomodules.kube_version()`)."""
    base = root if root is not None else cache_root()
    modules = gomodules.cluster_modules(gomodules.kube_version(kube_version))
    return [ModuleBuild(m, m.version(), base) for m in modules]


@dataclass(frozen=True)
class Binaries:
    """Absolute paths of every binary a dev cluster runs."""

    kube_version: str
    etcd_version: str
    kwok_version: str
    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kubectl: Path
    etcd: Path
    kwok: Path
    kwokctl: Path

    @property
    def kube_bin_dir(self) -> Path:
        """The directory to put on PATH for `kubectl`."""
        return self.kubectl.parent


def _binaries_from(builds: Sequence[ModuleBuild]) -> Binaries:
    by_key = {b.module.key: b for b in builds}
    kube, etcd, kwok = by_key["kube"], by_key["etcd"], by_key["kwok"]
    return Binaries(
        kube_version=kube.version,
        etcd_version=etcd.version,
        kwok_version=kwok.version,
        kube_apiserver=kube.binary("kube-apiserver"),
        kube_controller_manager=kube.binary("kube-controller-manager"),
        kube_scheduler=kube.binary("kube-scheduler"),
        kubectl=kube.binary("kubectl"),
        etcd=etcd.binary("etcd"),
        kwok=kwok.binary("kwok"),
        kwokctl=kwok.binary("kwokctl"),
    )


def installed_binaries(
    root: Path | None = None, kube_version: str | None = None
) -> Binaries | None:
    """The cached binaries of `kube_version` if every module is built, else None (never
    builds)."""
    builds = module_builds(root, kube_version)
    if not all(b.is_complete() for b in builds):
        return None
    return _binaries_from(builds)


def ensure_binaries(
    reporter: Reporter | None = None,
    *,
    root: Path | None = None,
    force: bool = False,
    kube_version: str | None = None,
) -> Binaries:
    """Build whatever module of a `kube_version` cluster is missing from the cache (all of
    them if `force`)."""
    report = reporter if reporter is not None else QuietReporter()
    builds = module_builds(root, kube_version)
    missing = [b for b in builds if force or not b.is_complete()]
    if missing:
        go = find_go()
        check_go_version(go, [b.module for b in missing])
        for build in missing:
            build_module(build, go, report, force=force)
    return _binaries_from(builds)


def ensure_tool(
    module: GoModule,
    reporter: Reporter | None = None,
    *,
    root: Path | None = None,
    force: bool = False,
) -> ModuleBuild:
    """Build one tool module (e.g. `gomodules.HELM`) into the cache unless it is there."""
    base = root if root is not None else cache_root()
    tool = ModuleBuild(module, module.version(), base)
    if force or not tool.is_complete():
        go = find_go()
        check_go_version(go, [module])
        build_module(tool, go, reporter if reporter is not None else QuietReporter(), force=force)
    return tool


def installed_tool(module: GoModule, root: Path | None = None) -> ModuleBuild | None:
    """The cached build of a tool module if it is complete, else None (never builds)."""
    base = root if root is not None else cache_root()
    tool = ModuleBuild(module, module.version(), base)
    return tool if tool.is_complete() else None


# --- the Go toolchain -------------------------------------------------------------------


def default_go_locations() -> list[Path]:
    """Where Go usually is when it is not on PATH (the official installer, `go install`)."""
    home = Path.home()
    found = [Path("/usr/local/go/bin/go"), home / "go" / "bin" / "go"]
    found.extend(sorted((home / "sdk").glob("go*/bin/go"), reverse=True))
    return found


def find_go(locations: Sequence[Path] | None = None) -> Path:
    """`$CLIQUES_GO`, else `go` on PATH, else the first of `locations` that exists."""
    explicit = os.environ.get("CLIQUES_GO")
    if explicit:
        path = Path(explicit).expanduser()
        if path.is_file() and os.access(path, os.X_OK):
            return path
        raise GoNotFoundError(f"CLIQUES_GO={explicit} is not an executable file.")
    on_path = shutil.which("go")
    if on_path:
        return Path(on_path)
    for candidate in default_go_locations() if locations is None else locations:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise GoNotFoundError(go_missing_message())


def go_missing_message() -> str:
    modules = [m for m in gomodules.all_modules() if not m.toolchain]
    needed = max(modules, key=lambda m: parse_go_version(m.go_version())).go_version()
    return (
        "The dev cluster's binaries are built from source with Go, and no Go toolchain was "
        "found (looked at $CLIQUES_GO, `go` on PATH, /usr/local/go/bin and ~/sdk).\n"
        f"Install Go {needed} or newer from https://go.dev/dl/ (or your package manager, "
        "e.g. `brew install go`), make sure `go` is on PATH (or set CLIQUES_GO=/path/to/go), "
        "and run the command again. No Docker is needed."
    )


def parse_go_version(text: str) -> tuple[int, ...]:
    """`go1.26.8` / `1.25.0` / `go1.26rc1` -> (1, 26, 8) / (1, 25, 0) / (1, 26)."""
    match = re.match(r"(?:go)?(\d+(?:\.\d+)*)", text.strip())
    if match is None:
        raise ValueError(f"not a Go version: {text!r}")
    return tuple(int(part) for part in match.group(1).split("."))


def check_go_version(go: Path, modules: Sequence[GoModule] | None = None) -> str:
    """The toolchain's version; an error a person can act on if it cannot build `modules`
    (default: every module under gomod/)."""
    try:
        out = subprocess.run(
            [str(go), "env", "GOVERSION", "GOTOOLCHAIN"],
            capture_output=True,
            text=True,
            timeout=120,
            env=go_environment(),
            check=True,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError) as exc:
        raise GoNotFoundError(f"{go} does not run (`go env` failed: {exc}).") from exc
    version = out[0] if out else "unknown"
    toolchain = out[1] if len(out) > 1 else "auto"
    wanted = gomodules.all_modules() if modules is None else modules
    # a module that names its toolchain (`GoModule.toolchain`) is built with that one, which
    # the go command fetches as a module whatever the machine's Go: only Go 1.21+ counts
    own = [m for m in wanted if not m.toolchain]
    needed = max((parse_go_version(m.go_version()) for m in own), default=_MIN_GO)
    have = parse_go_version(version) if version.startswith("go") else (0,)
    needed_text = ".".join(map(str, needed))
    if have < _MIN_GO or (have < needed and toolchain == "local"):
        raise GoNotFoundError(
            f"{go} is {version}; the dev cluster needs Go {needed_text} or newer "
            f"(or Go 1.21+ with GOTOOLCHAIN=auto, which fetches go{needed_text} as a module). "
            "Install a newer Go from https://go.dev/dl/."
        )
    return version


def go_environment(module: GoModule | None = None) -> dict[str, str]:
    """The caller's environment, minus what would redirect our pinned modules; for a
    `module` that names a toolchain (Kubernetes 1.38: `GOTOOLCHAIN=go1.27.3`), that one,
    for its build only."""
    env = dict(os.environ)
    env["GO111MODULE"] = "on"
    env["GOWORK"] = "off"  # a go.work around the checkout must not take over
    if module is not None and module.toolchain:
        env["GOTOOLCHAIN"] = module.toolchain
    return env


def module_source(module: GoModule, go: Path | None = None) -> Path:
    """The source directory of `module`'s upstream module at its pinned version, in the Go
    module cache (`go mod download`: fetched through the proxy when missing, checked
    against the module's go.sum)."""
    go = go or find_go()
    target = f"{module.version_module}@{module.version()}"
    try:
        done = subprocess.run(
            [str(go), "mod", "download", "-json", target],
            check=False,
            cwd=module.directory,
            env=go_environment(module),
            capture_output=True,
            text=True,
            timeout=600,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DevClusterError(f"go mod download {target} failed: {exc}") from exc
    try:
        info = json.loads(done.stdout or "{}")
    except json.JSONDecodeError:
        info = {}
    directory = info.get("Dir") if isinstance(info, dict) else None
    if done.returncode != 0 or not directory:
        detail = (info.get("Error") if isinstance(info, dict) else None) or done.stderr.strip()
        raise DevClusterError(f"go mod download {target} failed: {detail}")
    return Path(directory)


# --- building one module ----------------------------------------------------------------


@contextmanager
def _exclusive(lock_path: Path, label: str, report: Reporter) -> Iterator[None]:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            report.step(label, f"waiting for the build running in {holder} to finish")
            fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_module(build: ModuleBuild, go: Path, report: Reporter, *, force: bool = False) -> None:
    """Compile one module's binaries into its cache directory (under its lock)."""
    with _exclusive(build.lock_path, build.label, report):
        if not force and build.is_complete():  # built by whoever held the lock before us
            report.step(build.label, f"reusing {build.bin_dir}")
            return
        build.directory.mkdir(parents=True, exist_ok=True)
        staging = build.directory / f"bin.tmp-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        names = build.module.binaries()
        report.start(
            build.label,
            f"building {', '.join(names)} with {go} (the first build takes many minutes); "
            f"log: {build.log_path}",
        )
        started = time.monotonic()
        try:
            with build.log_path.open("w", encoding="utf-8") as log:
                _run_build(build, go, staging, log, report)
            _install(build, staging, go, time.monotonic() - started)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            report.finish(build.label, False, f"failed; log: {build.log_path}")
            raise
        report.finish(
            build.label,
            True,
            f"built in {format_seconds(time.monotonic() - started)} into {build.bin_dir}",
        )


def _run_build(build: ModuleBuild, go: Path, staging: Path, log: IO[str], report: Reporter) -> None:
    packages = list(build.module.binaries().values())
    env = go_environment(build.module)
    if build.module.toolchain:
        log.write(f"# GOTOOLCHAIN={build.module.toolchain} (this module's build only)\n")
    cwd = build.module.directory
    mod_flags = ["-mod=readonly"]
    if build.module.tags:
        mod_flags.append("-tags=" + ",".join(build.module.tags))
    if build.module.patches:
        mod_flags.append(f"-modfile={_patched_source(build, go, staging.parent, env, log)}")
    elif build.module.standins:
        mod_flags.append(f"-modfile={_standin_modfile(build, go, staging.parent, env, log)}")

    report.step(build.label, "resolving modules and packages (downloads through the Go proxy)")
    listed: list[str] = []
    downloads = 0

    def on_resolve(line: str) -> None:
        nonlocal downloads
        if line.startswith("go: downloading "):
            downloads += 1
            report.downloaded(build.label, downloads, line.removeprefix("go: downloading "))
        else:
            report.step(build.label, line)

    _stream(
        build,
        "resolve packages",
        [str(go), "list", *mod_flags, "-deps", "-f", "{{.ImportPath}}", *packages],
        cwd,
        env,
        log,
        on_stdout=listed.append,
        on_stderr=on_resolve,
    )
    if downloads:
        report.step(build.label, f"downloaded {downloads} modules")
    report.total(build.label, len(listed))

    report.step(build.label, f"compiling {len(listed)} packages")
    compiled = 0

    def on_compile(line: str) -> None:
        nonlocal compiled
        if _PACKAGE_LINE.match(line):
            compiled += 1
            report.advance(build.label, min(compiled, len(listed)), line)

    staging.mkdir(parents=True)
    _stream(
        build,
        "go build",
        [
            str(go),
            "build",
            *mod_flags,
            "-v",
            "-trimpath",
            "-buildvcs=false",
            f"-ldflags={build.ldflags}",
            "-o",
            f"{staging}/",
            *packages,
        ],
        cwd,
        env,
        log,
        on_stderr=on_compile,
    )
    for default_name, installed_name in build.module.renames:
        (staging / default_name).rename(staging / installed_name)

    report.step(build.label, "checking the binaries run")
    for name in build.module.binaries():
        _verify_binary(build, staging / name, log, go)


def _patched_source(
    build: ModuleBuild, go: Path, workdir: Path, env: dict[str, str], log: IO[str]
) -> Path:
    """Copy the upstream module, apply the module's patches, and return a go.mod (next to
    the copy) that replaces the module with the patched copy."""
    module = build.module
    version = module.version()
    out = subprocess.run(
        [str(go), "mod", "download", "-json", f"{module.version_module}@{version}"],
        cwd=module.directory,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    log.write(out.stdout + out.stderr)
    if out.returncode != 0:
        raise BuildError(build.label, "download the module to patch", build.log_path, out.stderr)
    source = Path(json.loads(out.stdout)["Dir"])
    patched = workdir / f"src-{module.key}-patched"
    shutil.rmtree(patched, ignore_errors=True)
    shutil.copytree(source, patched)
    for path in patched.rglob("*"):
        path.chmod(path.stat().st_mode | 0o200)
    for patch in module.patches:
        target = patched / patch.file
        text = target.read_text()
        if text.count(patch.old) != 1:
            raise BuildError(
                build.label,
                f"patch {patch.file}",
                build.log_path,
                f"expected the patched line exactly once in {target}; upstream changed?",
            )
        target.write_text(text.replace(patch.old, patch.new))
        log.write(f"patched {patch.file}: {patch.why}\n")
    modfile = workdir / f"go-{module.key}-patched.mod"
    modfile.write_text(module.gomod_text() + f"\nreplace {module.version_module} => {patched}\n")
    shutil.copyfile(module.directory / "go.sum", modfile.with_suffix(".sum"))
    return modfile


def _download(build: ModuleBuild, go: Path, target: str, env: dict[str, str], log: IO[str]) -> Path:
    """`go mod download` of `target` (`module@version`): its directory in the module cache."""
    out = subprocess.run(
        [str(go), "mod", "download", "-json", target],
        cwd=build.module.directory,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    log.write(out.stdout + out.stderr)
    if out.returncode != 0:
        raise BuildError(build.label, f"download {target}", build.log_path, out.stderr)
    return Path(json.loads(out.stdout)["Dir"])


def make_standin(standin: StandIn, source: Path | None, target: Path) -> None:
    """Write `standin`'s module into `target` (made anew) from `source`, the directory of
    `standin.source` (None for an empty module)."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    (target / "go.mod").write_text(f"module {standin.module}\n\ngo {standin.go}\n")
    if source is None:
        return
    for directory in standin.directories:
        shutil.copytree(source / directory, target / directory)
    for path in sorted(target.rglob("*")):
        if path.is_dir():
            path.chmod(path.stat().st_mode | 0o700)
            continue
        path.chmod(path.stat().st_mode | 0o200)
        relative = path.relative_to(target).as_posix()
        if relative.endswith("_test.go") or relative in standin.drop:
            path.unlink()
        elif path.suffix == ".go":
            text = path.read_text(encoding="utf-8")
            for old, new in standin.rewrites:
                text = text.replace(f'"{old}', f'"{new}')
            path.write_text(text, encoding="utf-8")
    for relative, text in standin.extra:
        (target / relative).write_text(text, encoding="utf-8")


def standin_gomod(gomod: str, replacements: Mapping[str, Path]) -> str:
    """`gomod` with each module of `replacements` replaced by its directory instead of what
    the go.mod replaced it by (two replacements of one module are an error)."""
    kept = []
    for line in gomod.splitlines():
        words = line.split()
        if len(words) >= 3 and words[1] == "=>" and words[0] in replacements:
            continue
        kept.append(line)
    lines = [f"\t{module} => {path}" for module, path in sorted(replacements.items())]
    return "\n".join(kept) + "\n\nreplace (\n" + "\n".join(lines) + "\n)\n"


def _standin_modfile(
    build: ModuleBuild, go: Path, workdir: Path, env: dict[str, str], log: IO[str]
) -> Path:
    """Make the module's stand-ins (`GoModule.standins`) under `workdir` and return a go.mod
    (next to them) that replaces each module by its stand-in."""
    module = build.module
    made: dict[str, Path] = {}
    for standin in module.standins:
        source = _download(build, go, standin.source, env, log) if standin.source else None
        target = workdir / f"standin-{standin.module.replace('/', '_')}"
        make_standin(standin, source, target)
        log.write(f"stand-in {standin.module} from {standin.source or 'nothing'}: {standin.why}\n")
        made[standin.module] = target
    modfile = workdir / f"go-{module.key}-standins.mod"
    modfile.write_text(standin_gomod(module.gomod_text(), made))
    shutil.copyfile(module.directory / "go.sum", modfile.with_suffix(".sum"))
    return modfile


def _stream(
    build: ModuleBuild,
    step: str,
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    log: IO[str],
    *,
    on_stdout: Callable[[str], None] | None = None,
    on_stderr: Callable[[str], None] | None = None,
) -> None:
    """Run one step, copying its output to the log and to the callbacks line by line.

    With `on_stdout`, stdout is data (a package list) kept out of the log and stderr is
    read on a second thread; without it both streams go to the log and `on_stderr`.
    """
    log.write(f"$ (cd {cwd} && {' '.join(argv)})\n")
    log.flush()
    lock = threading.Lock()

    def pump(stream: IO[str], to_log: bool, callback: Callable[[str], None] | None) -> None:
        for line in stream:
            with lock:
                if to_log:
                    log.write(line)
                if callback is not None:
                    callback(line.rstrip("\n"))

    with subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if on_stdout is None else subprocess.PIPE,
        text=True,
        bufsize=1,
    ) as proc:
        assert proc.stdout is not None
        reader: threading.Thread | None = None
        try:
            if on_stdout is not None:
                assert proc.stderr is not None
                reader = threading.Thread(target=pump, args=(proc.stderr, True, on_stderr))
                reader.start()
                pump(proc.stdout, False, on_stdout)
            else:
                pump(proc.stdout, True, on_stderr)
            code = proc.wait()
        except BaseException:
            proc.kill()
            raise
        finally:
            if reader is not None:
                reader.join()
    log.write(f"# exit status {code}\n")
    log.flush()
    if code != 0:
        raise BuildError(build.label, step, build.log_path, _tail(build.log_path))


def _verify_binary(build: ModuleBuild, binary: Path, log: IO[str], go: Path) -> None:
    if binary.name in _NO_VERSION_FLAG:
        code, _ = _run_logged(build, binary, [str(binary), "--help"], log)
        _, output = _run_logged(build, binary, [str(go), "version", "-m", str(binary)], log)
    else:
        argv = [str(binary), *_VERSION_ARGS.get(binary.name, ("--version",))]
        code, output = _run_logged(build, binary, argv, log)
    version = build.version.removeprefix("v")
    if code != 0 or version not in output:
        log.write(f"# expected exit 0 and version {version} in the output\n")
        log.flush()
        raise BuildError(build.label, f"run {binary.name}", build.log_path, _tail(build.log_path))


def _run_logged(build: ModuleBuild, binary: Path, argv: list[str], log: IO[str]) -> tuple[int, str]:
    """Run `argv` on a freshly built `binary` (it, or `go version -m` on it): its exit
    status and output, which go to the log too."""
    log.write(f"$ {' '.join(argv)}\n")
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        log.write(f"{exc}\n")
        log.flush()
        raise BuildError(
            build.label, f"run {binary.name}", build.log_path, _tail(build.log_path)
        ) from exc
    output = (result.stdout + result.stderr).strip()
    log.write(output + "\n")
    log.flush()
    return result.returncode, output


def _install(build: ModuleBuild, staging: Path, go: Path, seconds: float) -> None:
    """Swap the staged binaries into place, then write the stamp that marks them complete."""
    build.stamp_path.unlink(missing_ok=True)
    # Two renames, so that the binaries are missing only for an instant (running processes
    # keep their files either way).
    retired = build.directory / f"bin.old-{os.getpid()}"
    if build.bin_dir.exists():
        build.bin_dir.rename(retired)
    staging.rename(build.bin_dir)
    shutil.rmtree(retired, ignore_errors=True)
    stamp = {
        "fingerprint": build.expected_stamp(),
        "module": build.module.version_module,
        "version": build.version,
        "go": str(go),
        "build_seconds": round(seconds, 1),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    tmp = build.stamp_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
    tmp.replace(build.stamp_path)


def _tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def disk_usage(path: Path) -> int:
    """Bytes used by the files under `path` (symlinks not followed)."""
    total = 0
    for dirpath, _dirnames, filenames in os.walk(path):
        for name in filenames:
            try:
                total += (Path(dirpath) / name).lstat().st_size
            except OSError:
                continue
    return total


__all__ = [
    "Binaries",
    "BuildError",
    "DevClusterError",
    "GoNotFoundError",
    "ModuleBuild",
    "cache_root",
    "ensure_binaries",
    "ensure_tool",
    "find_go",
    "installed_binaries",
    "installed_tool",
]
