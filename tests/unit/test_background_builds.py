"""The test session's builds beside the tests (tests/support/background_builds.py): which
tests run first, what a test waits for, and how a failed build is told."""

from __future__ import annotations

import io
import sys
import threading
from pathlib import Path

from tests.support import background_builds as bb


def _step(tmp_path: Path, name: str) -> bb.Step:
    return bb.Step(
        name, bb.dev_cluster_build("--kube-version", "1.37.2"), 0, tmp_path / f"{name}.log"
    )


def test_tests_that_need_nothing_pending_come_first_and_the_order_is_otherwise_kept() -> None:
    needs = {
        "e2e_a": {bb.CLUSTER},
        "unit_a": set(),
        "helm_a": {bb.CLUSTER, bb.HELM},
        "kueue_a": {bb.CLUSTER, bb.ADDONS},
        "e2e_b": {bb.CLUSTER},
        "unit_b": set(),
        "helm_b": {bb.HELM},
    }
    items = list(needs)
    bb.reorder(items, needs.__getitem__, {bb.CLUSTER, bb.HELM, bb.ADDONS})
    assert items == ["unit_a", "unit_b", "e2e_a", "e2e_b", "helm_a", "helm_b", "kueue_a"]


def test_a_step_already_built_does_not_move_its_tests() -> None:
    needs = {"e2e": {bb.CLUSTER}, "helm": {bb.CLUSTER, bb.HELM}, "unit": set()}
    items = list(needs)
    bb.reorder(items, needs.__getitem__, {bb.HELM})  # only helm is missing
    assert items == ["e2e", "unit", "helm"]


def test_the_steps_run_in_order_and_a_test_waits_only_for_its_own(tmp_path: Path) -> None:
    ran: list[str] = []
    release_addons = threading.Event()

    def run(step: bb.Step) -> int:
        if step.name == bb.ADDONS:
            assert release_addons.wait(10)
        ran.append(step.name)
        return 0

    steps = [_step(tmp_path, n) for n in (bb.ADDONS, bb.HELM, bb.CLUSTER)]
    builds = bb.Builds(steps, io.StringIO(), run=run)
    builds.start()
    assert builds.wait([bb.CLUSTER, bb.HELM]) == {}  # add-ons still building
    assert builds.pending(bb.ADDONS)
    assert not builds.pending(bb.CLUSTER)
    release_addons.set()
    assert builds.wait([bb.ADDONS]) == {}
    assert ran == [bb.CLUSTER, bb.HELM, bb.ADDONS]


def test_a_step_the_session_does_not_build_is_not_waited_for(tmp_path: Path) -> None:
    builds = bb.Builds([_step(tmp_path, bb.HELM)], io.StringIO(), run=lambda step: 0)
    builds.start()
    assert builds.wait([bb.CLUSTER, bb.ADDONS]) == {}
    assert not builds.pending(bb.CLUSTER)


def test_a_failed_step_is_told_with_its_command_and_the_end_of_its_log(tmp_path: Path) -> None:
    def run(step: bb.Step) -> int:
        step.log.write_text("building helm\ngo: module lookup disabled\n")
        return 1 if step.name == bb.HELM else 0

    stream = io.StringIO()
    steps = [_step(tmp_path, bb.HELM), _step(tmp_path, bb.ADDONS)]
    builds = bb.Builds(steps, stream, run=run)
    builds.start()
    errors = builds.wait([bb.HELM, bb.ADDONS])
    assert list(errors) == [bb.HELM]
    assert "dev-cluster build --kube-version 1.37.2` exited 1" in errors[bb.HELM]
    assert "go: module lookup disabled" in errors[bb.HELM]
    assert str(tmp_path / "helm.log") in errors[bb.HELM]
    assert "helm: failed" in stream.getvalue()
    assert "add-ons: done" in stream.getvalue()


def test_after_the_cluster_build_fails_the_later_steps_are_not_tried(tmp_path: Path) -> None:
    tried: list[str] = []

    def run(step: bb.Step) -> int:
        tried.append(step.name)
        return 2

    steps = [_step(tmp_path, n) for n in bb.ORDER]
    builds = bb.Builds(steps, io.StringIO(), run=run)
    builds.start()
    errors = builds.wait(bb.ORDER)
    assert tried == [bb.CLUSTER]
    assert set(errors) == set(bb.ORDER)
    assert "the cluster build failed first" in errors[bb.ADDONS]


def test_a_step_runs_the_dev_cluster_build_command_niced_beside_the_tests(
    tmp_path: Path,
) -> None:
    argv = bb.dev_cluster_build("--with", "kueue")
    step = bb.Step(bb.ADDONS, argv, bb.BESIDE_TESTS_NICE, tmp_path / "a.log")
    argv = bb.build_argv(step)
    tail = [sys.executable, "-m", "cliques", "dev-cluster", "build", "--with", "kueue"]
    assert argv[-len(tail) :] == tail
    assert argv[:3] == [argv[0], "-n", str(bb.BESIDE_TESTS_NICE)]
    assert bb.build_argv(_step(tmp_path, bb.CLUSTER))[0] == sys.executable
