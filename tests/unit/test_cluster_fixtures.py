"""The cluster fixtures' helpers (tests/support/cluster_fixtures.py), without a cluster:
namespace names are DNS labels, a failing test keeps the tail of each component log, and
collecting the tests builds and downloads nothing (the dev cluster's binaries and helm are
built before the first test that needs them, never during collection)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cluster_fixtures import copy_component_logs, namespace_name

ROOT = Path(__file__).resolve().parents[2]
PYTEST = (sys.executable, "-m", "pytest", "-p", "no:cacheprovider")


@pytest.mark.parametrize(
    ("test_name", "expected_prefix"),
    [
        ("test_gpu_pod_runs", "t-test-gpu-pod-runs-"),
        ("test_x[param-A/B]", "t-test-x-param-a-b-"),
        ("___", "t-test-"),
    ],
)
def test_namespace_names_are_dns_labels(test_name: str, expected_prefix: str) -> None:
    name = namespace_name(test_name, "abc123")
    assert name.startswith(expected_prefix) and name.endswith("-abc123")
    assert len(name) <= 63


def test_long_test_names_are_cut_to_63_characters() -> None:
    name = namespace_name("test_" + "x" * 200, "abc123")
    assert len(name) == 63 and name.endswith("-abc123")


def test_copy_component_logs_keeps_the_tail(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "kube-apiserver.log").write_bytes(b"a" * 100 + b"TAIL")
    (logs / "etcd.log").write_bytes(b"small")
    (logs / "ignored.txt").write_bytes(b"x")
    copied = copy_component_logs(logs, tmp_path / "out", limit=10)
    assert [p.name for p in copied] == ["etcd.log", "kube-apiserver.log"]
    assert (tmp_path / "out" / "kube-apiserver.log").read_bytes() == b"aaaaaaTAIL"
    assert (tmp_path / "out" / "etcd.log").read_bytes() == b"small"


def test_collecting_the_tests_builds_and_downloads_nothing(tmp_path: Path) -> None:
    # Without cliques-lab there is nothing to build (the builds are its dev cluster's).
    pytest.importorskip("cliques_lab")
    cache = tmp_path / "cache"
    cache.mkdir()
    env = dict(os.environ, CLIQUES_CACHE_DIR=str(cache), CLIQUES_GO="/nonexistent")
    for name in ("CLIQUES_KUBECONFIG", "CLIQUES_HELM"):
        env.pop(name, None)  # nothing may be skipped for an external cluster or helm
    done = subprocess.run(
        [
            *PYTEST,
            "--collect-only",
            "-q",
            "tests",
            "lab/tests",
            "-m",
            "cluster or lws or not cluster",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "tests/e2e/" in done.stdout and "lab/tests/e2e/" in done.stdout
    assert "building" not in done.stderr, done.stderr
    assert list(cache.iterdir()) == []


def test_a_missing_build_runs_beside_the_tests_that_need_none_and_fails_its_own(
    tmp_path: Path,
) -> None:
    # A real session on an empty cache and no Go: the cluster's build starts beside the
    # tests, the test that needs nothing runs first (the build fails while it runs), and
    # the one that needs the cluster waits for the build and errors with its reason (it is
    # not skipped).
    pytest.importorskip("cliques_lab")
    cache = tmp_path / "cache"
    cache.mkdir()
    tests = tmp_path / "t"
    tests.mkdir()
    (tests / "test_session.py").write_text(
        "import time\n\nimport pytest\n\n\n"
        "def test_needs_the_cluster(kube_cluster):\n    pass\n\n\n"
        "@pytest.mark.cluster\n"
        "def test_makes_a_cluster_of_its_own():\n    pass\n\n\n"
        "def test_needs_nothing():\n    time.sleep(3)\n"
    )
    env = dict(os.environ, CLIQUES_CACHE_DIR=str(cache), CLIQUES_GO="/nonexistent")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    for name in ("CLIQUES_KUBECONFIG", "CLIQUES_HELM", "CLIQUES_KUBE_VERSION"):
        env.pop(name, None)
    done = subprocess.run(
        [
            *PYTEST,
            "-p",
            "tests.support.cluster_fixtures",
            "-v",
            "--basetemp",
            str(tmp_path / "basetemp"),
            str(tests),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 1, out[-3000:] + done.stderr[-3000:]
    first = out.index("test_needs_nothing PASSED")
    assert first < out.index("test_needs_the_cluster ERROR")
    # A test marked `cluster` without the fixture waits for the build too.
    assert first < out.index("test_makes_a_cluster_of_its_own")
    assert "the dev cluster could not be built" in out
    assert "CLIQUES_GO=/nonexistent" in out
    # Told on the real stderr though the build ended while a test ran under capture.
    assert "[builds] cluster: failed" in done.stderr
    assert (tmp_path / "basetemp" / "builds" / "cluster.log").is_file()
