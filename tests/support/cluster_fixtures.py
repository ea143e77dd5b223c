"""Test-wide fixtures: the local real control plane, shared by every test that needs one.

A pytest plugin, loaded by the repository's root conftest.py, so that both tests/ and
lab/tests/ have these fixtures (any test directory can use them; unit tests simply never
ask). cliques_lab is imported only inside the fixtures and hooks that need a dev cluster.

- `kube_cluster` (session): a `KubeCluster` - `kubeconfig` (Path), `server`, `kubectl` (the
  binary matching the cluster), `name` and `logs_dir` (None for an external cluster),
  `env()` and `kubectl_run(...)`. Starts the dev cluster `cliques-test` (4 KWOK GPU nodes,
  QPS limits off) through `cliques_lab.devcluster`, or reuses it if it already runs. Concurrent
  test sessions share it (a shared lock under <cache>/pytest/); the last session to finish
  stops it, unless a person started it (then it is left running).
- `kubeconfig` (session): `str(kube_cluster.kubeconfig)`.
- `namespace`: a fresh namespace per test (its default ServiceAccount exists, so pods can be
  created at once), deleted afterwards.
- `helm` (session): the path of a `helm` binary: `$CLIQUES_HELM`, else the one built from
  `gomod/helm` into the cache (built, if missing, beside the tests, like the cluster).

Tests marked `addons("kueue", ...)` run a dev cluster of their own with those add-ons
(tests/support/addon_cluster.py); the add-ons and the cluster's binaries are built, if
missing, beside the tests too (`addon_build_error` tells a failed build). Tests marked
`kube_version("1.38.0-beta.0")` as well run one of their own on that release, whose
binaries are built before the first test.

For the whole session `KUBECONFIG`, `KUBECACHEDIR` and `PATH` (kubectl first) point at the
test cluster, so that a stray `kubectl` in a test can never reach another cluster.

Environment:

- `CLIQUES_KUBECONFIG`: use that cluster instead of starting one (nothing is built).
- `CLIQUES_KUBECTL`: the kubectl to use with it (default: the cached build, else PATH).
- `CLIQUES_TEST_CLUSTER`: the dev cluster's name (default `cliques-test`).
- `CLIQUES_KUBE_VERSION`: the Kubernetes version of the dev cluster, one of
  `cliques_lab.devcluster.gomodules.KUBE_VERSIONS` (default 1.37.2; only that version is
  built). A running cluster of that name with another version (or other gates) is not
  reused: the tests fail, naming the command that removes it. `make test-compat` runs the
  gang tests on each other supported version (1.38.0-beta.0 too), each in a cluster of its
  own name.
- `CLIQUES_KEEP_CLUSTER=1`: leave the dev cluster running after the session (the next
  session reuses it in a second or so).
- `CLIQUES_HELM`: the helm binary to use (nothing is built for it).
- `CLIQUES_CACHE_DIR`, `CLIQUES_GO`: as for `cliques dev-cluster` (cache, Go toolchain).

The binaries are built, if missing, beside the tests (tests/support/background_builds.py:
started in `pytest_runtestloop`, never during collection, so `--collect-only` builds and
downloads nothing; the tests that need no build run first, and a test that needs one waits
for it before it starts), so pytest-timeout's per-test limit never counts the (long,
one-off) build; a failed build fails every test that needs it with the reason, it never
skips them. When such a test
fails, the control plane's component logs are copied to
`<pytest basetemp>/cluster-logs/<test>/` and the path is shown in the failure report.
"""

from __future__ import annotations

import fcntl
import io
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import pytest

from tests.support import background_builds

CLUSTER_FIXTURE = "kube_cluster"
HELM_FIXTURE = "helm"
CLUSTER_MARKER = "cluster"
ADDONS_MARKER = "addons"
KUBE_VERSION_MARKER = "kube_version"
DEFAULT_TEST_CLUSTER = "cliques-test"
KUBECTL_TIMEOUT = 60.0
NAMESPACE_READY_TIMEOUT = 60.0
LOG_COPY_BYTES = 4 * 2**20  # the last 4 MiB of each component log


@dataclass(frozen=True)
class KubeCluster:
    """The control plane the tests run against."""

    kubeconfig: Path
    server: str
    kubectl: Path
    name: str | None  # the dev cluster's name; None for CLIQUES_KUBECONFIG
    logs_dir: Path | None  # component logs of a dev cluster
    kube_cache: Path | None
    started_here: bool

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        env["KUBECONFIG"] = str(self.kubeconfig)
        env["PATH"] = os.pathsep.join([str(self.kubectl.parent), env.get("PATH", "")])
        if self.kube_cache is not None:
            env["KUBECACHEDIR"] = str(self.kube_cache)
        return env

    def kubectl_run(
        self, *args: str, stdin: str | None = None, check: bool = True, timeout: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this cluster; with `check`, fail the test on a non-zero exit."""
        done = subprocess.run(
            [str(self.kubectl), "--kubeconfig", str(self.kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            pytest.fail(f"kubectl {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
        return done


_CLUSTER_KEY = pytest.StashKey[KubeCluster]()
_BUILD_ERROR_KEY = pytest.StashKey[str]()
_HELM_ERROR_KEY = pytest.StashKey[str]()
_ADDONS_ERROR_KEY = pytest.StashKey[str]()
_LOGS_KEY = pytest.StashKey[Path]()
_BUILDS_KEY = pytest.StashKey[background_builds.Builds]()
#: Where a failed build step's reason goes: the fixture or test that needs it reads it there.
_ERROR_KEYS = {
    background_builds.CLUSTER: _BUILD_ERROR_KEY,
    background_builds.HELM: _HELM_ERROR_KEY,
    background_builds.ADDONS: _ADDONS_ERROR_KEY,
}


def _external() -> Path | None:
    value = os.environ.get("CLIQUES_KUBECONFIG")
    return Path(value).expanduser().resolve() if value else None


def _needs(fixture: str, items: list[pytest.Item]) -> bool:
    return any(fixture in getattr(item, "fixturenames", ()) for item in items)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """Start the builds the selected tests need and the machine lacks beside them, and
    order the tests so that those that need none of them run first
    (tests/support/background_builds.py): after collection
    (`--collect-only` builds nothing) and outside any test, so pytest-timeout's per-test
    limit never counts a build. Another release's binaries (`kube_version(...)` tests) are
    built here, before the first test. Returns None: pytest's own loop then runs the tests."""
    config = session.config
    if config.option.collectonly or (
        session.testsfailed and not config.option.continue_on_collection_errors
    ):
        return  # nothing will run (pytest's loop stops for collection errors first)
    versions = sorted(
        {
            v
            for item in session.items
            for m in item.iter_markers(KUBE_VERSION_MARKER)
            for v in m.args
        }
    )
    if versions:
        _build_versions(session, versions)
    steps = _missing_steps(session)
    if not steps:
        return  # nothing to build: the tests run in their collection order
    background_builds.reorder(session.items, _step_needs, {s.name for s in steps})
    builds = background_builds.Builds(steps, _terminal())
    config.stash[_BUILDS_KEY] = builds
    builds.start()


def _terminal() -> TextIO:
    """A stream to the session's real stderr that stays there: pytest's capture points fd 2
    at a file while each test runs, so the builds' progress, written from their thread or
    between tests, goes to a duplicate of fd 2 taken now (no capture is on during
    `pytest_runtestloop`)."""
    stream = sys.__stderr__ if sys.__stderr__ is not None else sys.stderr
    try:
        return os.fdopen(os.dup(stream.fileno()), "w", buffering=1)
    except (OSError, ValueError, io.UnsupportedOperation):
        return stream


def _addon_names(items: list[pytest.Item]) -> list[str]:
    return [name for item in items for m in item.iter_markers(ADDONS_MARKER) for name in m.args]


def _step_needs(item: pytest.Item) -> set[str]:
    """The build steps test `item` needs done before it starts."""
    needs: set[str] = set()
    names = getattr(item, "fixturenames", ())
    addons = any(m.args for m in item.iter_markers(ADDONS_MARKER))
    # A test marked `cluster` may bring up a dev cluster of its own (the audit log's test).
    own = item.get_closest_marker(CLUSTER_MARKER) is not None
    if CLUSTER_FIXTURE in names or own or addons:
        needs.add(background_builds.CLUSTER)
    if HELM_FIXTURE in names:
        needs.add(background_builds.HELM)
    if addons:
        needs.add(background_builds.ADDONS)
    return needs


def _missing_steps(session: pytest.Session) -> list[background_builds.Step]:
    """The build steps the selected tests need and the cache lacks (none for an external
    cluster's tests, or with `$CLIQUES_HELM` for helm); a version or add-on name that does
    not parse fails the tests that need it with the reason."""
    from cliques_lab.devcluster import addons, build, gomodules

    config = session.config
    logs = config._tmp_path_factory.getbasetemp() / "builds"  # type: ignore[attr-defined]
    try:
        version = gomodules.kube_version()
    except ValueError as exc:
        config.stash[_BUILD_ERROR_KEY] = f"{gomodules.KUBE_VERSION_ENV}: {exc}"
        return []
    names = _addon_names(session.items)
    try:
        wanted = addons.parse(names)
    except ValueError as exc:
        config.stash[_ADDONS_ERROR_KEY] = str(exc)
        wanted = []
    steps: list[background_builds.Step] = []
    cli = background_builds.dev_cluster_build
    beside = background_builds.BESIDE_TESTS_NICE

    def step(name: str, argv: list[str], nice: int) -> None:
        steps.append(background_builds.Step(name, argv, nice, logs / f"{name}.log"))

    cluster_tests = _external() is None and any(
        background_builds.CLUSTER in _step_needs(item) for item in session.items
    )
    if (cluster_tests or wanted) and build.installed_binaries(kube_version=version) is None:
        step(background_builds.CLUSTER, cli("--kube-version", version), 0)
    if (
        not os.environ.get("CLIQUES_HELM")
        and _needs(HELM_FIXTURE, session.items)
        and build.installed_tool(gomodules.HELM) is None
    ):
        step(background_builds.HELM, [sys.executable, "-c", background_builds.HELM_ONLY], beside)
    missing = [n for n in wanted if build.installed_tool(addons.ADDONS[n].module) is None]
    if missing:
        args = [a for n in missing for a in ("--with", n)]
        step(background_builds.ADDONS, cli("--kube-version", version, *args), beside)
    return steps


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    """Before a test starts (and before pytest-timeout's timer), wait for the builds it
    needs; a failed one is told to the fixtures, which fail the test with its reason."""
    builds = item.config.stash.get(_BUILDS_KEY, None)
    if builds is not None:
        errors = builds.wait(_step_needs(item))
        for name, error in errors.items():
            item.config.stash[_ERROR_KEYS[name]] = error
    return (yield)


def _build_versions(session: pytest.Session, versions: list[str]) -> None:
    """Build what the `kube_version(...)` tests' own clusters run: each release's binaries
    (before the first test: only `make test-compat` selects them)."""
    from cliques_lab.devcluster import build, progress
    from cliques_lab.devcluster.errors import DevClusterError

    stream = sys.__stderr__ if sys.__stderr__ is not None else sys.stderr
    reporter = progress.PlainReporter(stream)
    try:
        for version in versions:
            if build.installed_binaries(kube_version=version) is None:
                print(f"\nbuilding Kubernetes v{version} before the tests", file=stream)
                build.ensure_binaries(reporter, kube_version=version)
    except (DevClusterError, ValueError) as exc:
        session.config.stash[_ADDONS_ERROR_KEY] = str(exc)
        print(f"Kubernetes build failed:\n{exc}", file=stream, flush=True)


def addon_build_error(config: pytest.Config) -> str | None:
    """Why the add-ons of the `addons(...)` tests could not be built (None: they were)."""
    return config.stash.get(_ADDONS_ERROR_KEY, None)


@pytest.fixture(scope="session")
def helm(request: pytest.FixtureRequest) -> Path:
    """A helm binary: `$CLIQUES_HELM`, else the cached build of gomod/helm."""
    explicit = os.environ.get("CLIQUES_HELM")
    if explicit:
        return Path(explicit)
    failed = request.config.stash.get(_HELM_ERROR_KEY, None)
    if failed is not None:
        pytest.fail(f"helm could not be built:\n{failed}", pytrace=False)
    from cliques_lab.devcluster import build, gomodules

    return build.ensure_tool(gomodules.HELM).binary("helm")


@pytest.fixture(scope="session")
def kube_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KubeCluster]:
    """The control plane for this test session (see the module docstring)."""
    config = request.config
    failed_build = config.stash.get(_BUILD_ERROR_KEY, None)
    if failed_build is not None:
        pytest.fail(f"the dev cluster could not be built:\n{failed_build}", pytrace=False)
    config.stash[_LOGS_KEY] = tmp_path_factory.getbasetemp() / "cluster-logs"
    external = _external()
    if external is not None:
        cluster = _external_cluster(external)
        with _session_environment(cluster):
            config.stash[_CLUSTER_KEY] = cluster
            yield cluster
        return

    from cliques_lab.devcluster import build, gomodules
    from cliques_lab.devcluster import cluster as devcluster
    from cliques_lab.devcluster.errors import DevClusterError

    name = os.environ.get("CLIQUES_TEST_CLUSTER", DEFAULT_TEST_CLUSTER)
    version = gomodules.kube_version()  # checked before the build
    sessions = build.cache_root() / "pytest"
    owned_marker = sessions / f"{name}.owned"
    with _shared_by_sessions(sessions / f"{name}.sessions") as last_session:
        try:
            result = devcluster.up(
                name, disable_qps_limits=True, kube_version=version, timeout=180.0
            )
        except (DevClusterError, ValueError) as exc:
            pytest.fail(f"the dev cluster '{name}' did not start:\n{exc}", pytrace=False)
        if result.action != "reused":
            owned_marker.touch()
        info = result.info
        cluster = KubeCluster(
            kubeconfig=info.kubeconfig,
            server=info.server,
            kubectl=info.kubectl,
            name=name,
            logs_dir=info.logs_dir,
            kube_cache=info.kube_cache,
            started_here=result.action != "reused",
        )
        try:
            with _session_environment(cluster):
                config.stash[_CLUSTER_KEY] = cluster
                yield cluster
        finally:
            # A cluster some test session started goes down with the last session using it;
            # one a person started (no marker) stays up, and so does any with KEEP.
            keep = os.environ.get("CLIQUES_KEEP_CLUSTER") == "1"
            if owned_marker.exists() and not keep and last_session():
                devcluster.down(name)
                owned_marker.unlink(missing_ok=True)


@contextmanager
def _shared_by_sessions(path: Path) -> Iterator[Callable[[], bool]]:
    """Hold a shared lock on `path` for the session; the callable tells (by turning it into an
    exclusive lock, without waiting) whether this is the last session holding it. Another
    session that starts meanwhile waits for the exclusive holder, so it never reuses a cluster
    that is going down."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_SH)

        def last_session() -> bool:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            return True

        yield last_session


def _external_cluster(kubeconfig: Path) -> KubeCluster:
    if not kubeconfig.is_file():
        pytest.fail(f"CLIQUES_KUBECONFIG={kubeconfig} is not a file", pytrace=False)
    kubectl = _find_kubectl()
    done = subprocess.run(
        [
            str(kubectl),
            "--kubeconfig",
            str(kubeconfig),
            "config",
            "view",
            "--minify",
            "-o",
            "jsonpath={.clusters[0].cluster.server}",
        ],
        capture_output=True,
        text=True,
        timeout=KUBECTL_TIMEOUT,
        check=False,
    )
    return KubeCluster(
        kubeconfig=kubeconfig,
        server=done.stdout.strip(),
        kubectl=kubectl,
        name=None,
        logs_dir=None,
        kube_cache=None,
        started_here=False,
    )


def _find_kubectl() -> Path:
    explicit = os.environ.get("CLIQUES_KUBECTL")
    if explicit:
        return Path(explicit)
    from cliques_lab.devcluster import build

    binaries = build.installed_binaries()
    if binaries is not None:
        return binaries.kubectl
    on_path = shutil.which("kubectl")
    if on_path is None:
        pytest.fail(
            "CLIQUES_KUBECONFIG is set but no kubectl was found: set CLIQUES_KUBECTL, put "
            "kubectl on PATH, or run `cliques dev-cluster build`",
            pytrace=False,
        )
    return Path(on_path)


@contextmanager
def _session_environment(cluster: KubeCluster) -> Iterator[None]:
    """Point KUBECONFIG, KUBECACHEDIR and PATH at the test cluster; restore them after."""
    keys = ("KUBECONFIG", "KUBECACHEDIR", "PATH")
    saved = {key: os.environ.get(key) for key in keys}
    os.environ.update({k: v for k, v in cluster.env().items() if k in keys})
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def kubeconfig(kube_cluster: KubeCluster) -> str:
    """The path of the test cluster's kubeconfig."""
    return str(kube_cluster.kubeconfig)


def namespace_name(test_name: str, suffix: str) -> str:
    """`t-<test name as a DNS label>-<suffix>`, at most 63 characters."""
    slug = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")
    room = 63 - len("t--") - len(suffix)
    slug = slug[:room].rstrip("-") or "test"
    return f"t-{slug}-{suffix}"


@pytest.fixture
def namespace(kube_cluster: KubeCluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace for this test, ready for pods; deleted afterwards."""
    name = namespace_name(request.node.name, secrets.token_hex(3))
    kube_cluster.kubectl_run("create", "namespace", name)
    kube_cluster.kubectl_run("label", "namespace", name, "cliques.dev/test=true")
    deadline = time.monotonic() + NAMESPACE_READY_TIMEOUT
    while kube_cluster.kubectl_run(
        "get", "serviceaccount", "default", "-n", name, check=False
    ).returncode:
        if time.monotonic() > deadline:
            pytest.fail(
                f"namespace {name}: no default ServiceAccount after "
                f"{NAMESPACE_READY_TIMEOUT:.0f}s (is kube-controller-manager running?)"
            )
        time.sleep(0.1)
    try:
        yield name
    finally:
        kube_cluster.kubectl_run("delete", "namespace", name, "--wait=false", check=False)


# --- keeping the control plane's logs of a failing test -----------------------------------


def copy_component_logs(logs_dir: Path, dest: Path, limit: int = LOG_COPY_BYTES) -> list[Path]:
    """Copy (the last `limit` bytes of) every `*.log` in `logs_dir` into `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    copied: list[Path] = []
    for log in sorted(logs_dir.glob("*.log")):
        with log.open("rb") as source:
            source.seek(0, os.SEEK_END)
            source.seek(max(0, source.tell() - limit))
            data = source.read()
        target = dest / log.name
        target.write_bytes(data)
        copied.append(target)
    return copied


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[Any]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed and CLUSTER_FIXTURE in getattr(item, "fixturenames", ()):
        _keep_logs(item, report)
    return report


def _keep_logs(item: pytest.Item, report: pytest.TestReport) -> None:
    cluster = item.config.stash.get(_CLUSTER_KEY, None)
    base = item.config.stash.get(_LOGS_KEY, None)
    if cluster is None or cluster.logs_dir is None or base is None:
        return
    dest = base / re.sub(r"[^A-Za-z0-9_.-]+", "_", item.nodeid)[-120:] / report.when
    try:
        copied = copy_component_logs(cluster.logs_dir, dest)
    except OSError as exc:
        report.sections.append(("dev cluster logs", f"could not copy the logs: {exc}"))
        return
    names = ", ".join(p.name for p in copied)
    report.sections.append(("dev cluster logs", f"copied to {dest}: {names}"))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    base = config.stash.get(_LOGS_KEY, None)
    if base is not None and base.is_dir() and any(base.iterdir()):
        terminalreporter.write_line(f"control-plane logs of failed tests: {base}")
