"""The start model of the dev cluster (`startmodel`, `podstart`): pulls cached per node and
image, loads at every start, durations from the pod else its node, the cache rebuilt from
the pods after a restart, and the stages that wait for `podstart`'s condition."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from cliques_lab.devcluster import kwok, podstart, startmodel
from cliques_lab.devcluster.startmodel import PodView, StartModel

PULL = startmodel.PULL_ANNOTATION
LOAD = startmodel.LOAD_ANNOTATION


def test_a_pull_is_paid_once_per_node_and_image_and_the_load_every_time() -> None:
    model = StartModel()
    first = model.start("n1", ["vllm:1"], pull=60, load=90, now=1000)
    assert (first.ready_at, first.pulled, first.reason) == (1150, ("vllm:1",), "Pull")
    # the same image on the same node, after the pull: the load only
    second = model.start("n1", ["vllm:1"], pull=60, load=90, now=2000)
    assert (second.ready_at, second.pulled, second.reason) == (2090, (), "Load")
    # another node pulls it again; another image on the first node too
    assert model.start("n2", ["vllm:1"], pull=60, load=90, now=2000).ready_at == 2150
    assert model.start("n1", ["vllm:2"], pull=60, load=90, now=2000).pulled == ("vllm:2",)


def test_a_start_during_the_first_pull_waits_for_that_pull() -> None:
    model = StartModel()
    model.start("n1", ["vllm:1"], pull=60, load=90, now=1000)  # there at 1060
    during = model.start("n1", ["vllm:1"], pull=60, load=90, now=1030)
    assert (during.ready_at, during.pulled) == (1150, ())


def test_several_images_are_pulled_at_once_and_each_once() -> None:
    model = StartModel()
    model.start("n1", ["side:1"], pull=10, load=0, now=0)
    start = model.start("n1", ["main:1", "side:1", "main:1"], pull=30, load=5, now=100)
    assert (start.ready_at, start.pulled) == (135, ("main:1",))


def test_an_in_place_restart_pays_the_load_and_the_pull_only_for_a_new_image() -> None:
    def pod(spec: list[str], reported: list[str], phase: str = "Running") -> podstart.Pod:
        return msgspec.convert(
            {
                "spec": {
                    "nodeName": "n1",
                    "containers": [{"name": f"c{i}", "image": im} for i, im in enumerate(spec)],
                },
                "status": {
                    "phase": phase,
                    "containerStatuses": [
                        {"name": f"c{i}", "image": im} for i, im in enumerate(reported)
                    ],
                },
            },
            podstart.Pod,
        )

    assert podstart.starting_images(pod(["a:1", "s:1"], [], "Pending")) == ["a:1", "s:1"]
    assert podstart.starting_images(pod(["a:2", "s:1"], ["a:1", "s:1"])) == ["a:2"]
    assert podstart.starting_images(pod(["a:1", "s:1"], ["a:1", "s:1"])) is None
    model = StartModel()
    model.start("n1", ["a:1", "s:1"], pull=60, load=90, now=0)
    # back to an image the node has: the load only; to a new one: pull and load
    assert model.start("n1", ["a:1"], pull=60, load=90, now=500).ready_at == 590
    assert model.start("n1", ["a:2"], pull=60, load=90, now=500).ready_at == 650


def test_durations_come_from_the_pod_else_its_node_else_zero() -> None:
    node = {PULL: "60", LOAD: "90"}
    assert startmodel.durations({}, node) == (60, 90)
    assert startmodel.durations({LOAD: "5"}, node) == (60, 5)
    assert startmodel.durations({PULL: "1.5", LOAD: "0"}, {}) == (1.5, 0)
    assert startmodel.durations({PULL: "soon", LOAD: "-3"}, node) == (60, 90)  # not numbers
    assert startmodel.durations({}, {}) == (0, 0)
    assert startmodel.modelled({LOAD: "5"}, every_pod=False)
    assert not startmodel.modelled({}, every_pod=False)
    assert startmodel.modelled({}, every_pod=True)


def test_the_cache_is_rebuilt_from_the_pods_on_the_nodes() -> None:
    pods = [
        # running without the model: its images are on the node
        PodView("n1", running_images=("old:1",)),
        # a start decided before the restart, ready at 1150 after a load of 90: the image
        # was there from 1060 (a pod starting at 1030 waits for it, not for a pull)
        PodView("n2", condition=("vllm:1,side:1", 1150.0), load=90),
        PodView("", running_images=("unbound:1",)),
    ]
    model = startmodel.rebuild(pods)
    assert model.images == {
        ("n1", "old:1"): 0.0,
        ("n2", "vllm:1"): 1060.0,
        ("n2", "side:1"): 1060.0,
    }
    assert model.start("n1", ["old:1"], pull=60, load=90, now=2000).ready_at == 2090
    assert model.start("n2", ["vllm:1"], pull=60, load=90, now=1030).ready_at == 1150
    assert model.start("n3", ["vllm:1"], pull=60, load=90, now=1030).ready_at == 1180


def _pod(annotations: dict[str, str], **status: Any) -> podstart.Pod:
    return msgspec.convert(
        {
            "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "annotations": annotations},
            "spec": {
                "nodeName": "kwok-node-0",
                "containers": [{"name": "main", "image": "vllm:1"}],
            },
            "status": {"phase": "Pending", **status},
        },
        podstart.Pod,
    )


def _controller(every_pod: bool = False, node: dict[str, str] | None = None) -> podstart.PodStart:
    ctl = podstart.PodStart.__new__(podstart.PodStart)
    ctl.every_pod = every_pod
    ctl.model = StartModel()
    ctl.decided = {}

    class Store:
        def get(self, name: str) -> podstart.Node | None:
            ann = {podstart.KWOK_NODE: "fake", **(node or {})}
            return podstart.Node(
                metadata=msgspec.convert({"annotations": ann}, podstart.ObjectMeta)
            )

    class Nodes:
        store = Store()

    ctl.nodes = Nodes()  # type: ignore[assignment]
    return ctl


def test_the_controller_decides_once_per_pod_and_images_and_waits_for_an_open_gate() -> None:
    ctl = _controller(node={LOAD: "7"})
    assert ctl.decide(_pod({}), now=100) is None  # not modelled
    assert ctl.decide(_pod({PULL: "5", podstart.START_GATE: "closed"}), now=100) is None
    cond = ctl.decide(_pod({PULL: "5"}), now=100)
    assert cond is not None
    assert (cond["type"], cond["reason"], cond["message"]) == (
        startmodel.CONDITION,
        "Pull",
        "vllm:1",
    )
    assert cond["lastProbeTime"] == startmodel.rfc3339(112)  # pull 5 + the node's load 7
    # the same start seen again (KWOK's write raced with ours): the same answer, no new pull
    assert ctl.decide(_pod({PULL: "5"}), now=150) == cond
    # a pod that shows the condition already is left alone
    shown = {
        "type": startmodel.CONDITION,
        "message": "vllm:1",
        "lastProbeTime": cond["lastProbeTime"],
    }
    assert ctl.decide(_pod({PULL: "5"}, conditions=[shown]), now=150) is None
    assert _controller(every_pod=True).decide(_pod({}), now=100) is not None


def test_a_restart_back_to_earlier_images_is_a_new_start() -> None:
    ctl = _controller()
    running = {"phase": "Running", "containerStatuses": [{"name": "main", "image": "vllm:2"}]}
    first = ctl.decide(_pod({LOAD: "5"}), now=100)
    # the pod ran vllm:2 meanwhile; back to vllm:1, which the node has: the load, from now
    back = ctl.decide(_pod({LOAD: "5"}, **running), now=500)
    assert first is not None and back is not None and back != first
    assert (back["reason"], back["lastProbeTime"]) == ("Load", startmodel.rfc3339(505))


def test_condition_times_are_whole_seconds_rounded_up() -> None:
    assert startmodel.rfc3339(0.2) == "1970-01-01T00:00:01Z"
    assert startmodel.rfc3339(5.0) == "1970-01-01T00:00:05Z"
    assert startmodel.parse_time("1970-01-01T00:00:05Z") == 5.0
    assert startmodel.parse_time("never") is None


def test_stages_keep_the_instant_starts_off_modelled_pods_and_wait_for_the_condition() -> None:
    ready = kwok._pod_stage(
        "pod-ready", [{"key": ".status.phase", "operator": "In", "values": ["Pending"]}], "x"
    )
    delayed = kwok._pod_stage(kwok.DELAYED_STAGE, [], "x")
    _, image_ready, _ = kwok.image_stages()
    stages = startmodel.with_start_model([ready, delayed, image_ready], every_pod=False)
    names = [s["metadata"]["name"] for s in stages]
    assert names == ["pod-ready", kwok.DELAYED_STAGE, "pod-image-ready", *startmodel.stage_names()]
    off = {"key": startmodel.modelled_expression(False), "operator": "In", "values": ["false"]}
    for stage in stages[:3]:
        assert stage["spec"]["selector"]["matchExpressions"][-1] == off
    for stage in stages[3:]:
        keys = [e["key"] for e in stage["spec"]["selector"]["matchExpressions"]]
        assert startmodel.modelled_expression(False) in keys
        assert any(startmodel.CONDITION in k for k in keys)
        assert stage["spec"]["delay"]["durationFrom"]["expressionFrom"].endswith(".lastProbeTime")
    assert stages[3]["spec"]["next"] == ready["spec"]["next"]
    assert stages[4]["spec"]["next"] == image_ready["spec"]["next"]
    assert ready["spec"]["selector"]["matchExpressions"][-1] != off  # the input is kept
    everything = startmodel.with_start_model([ready], every_pod=True)
    assert everything[0]["spec"]["selector"]["matchExpressions"][-1]["key"] == "true"
    assert "start model" in kwok.stage_changes(kwok.config_text({}, [ready]))


def test_node_defaults_are_recorded_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / startmodel.RECORD_FILE
    assert startmodel.read_record(path) == startmodel.Defaults()  # none recorded
    path.write_text(startmodel.record_text(startmodel.Defaults(60, 90.5)))
    defaults = startmodel.read_record(path)
    assert defaults == startmodel.Defaults(60, 90.5) and defaults.every_pod
    assert defaults.node_annotations() == {PULL: "60", LOAD: "90.5"}
    assert not startmodel.Defaults().every_pod
    path.write_text(json.dumps(["not", "a", "record"]))
    assert startmodel.read_record(path) == startmodel.Defaults()


@pytest.mark.parametrize("flags", [[], ["--pull-seconds", "60", "--load-seconds", "90"]])
def test_up_takes_the_node_defaults(flags: list[str]) -> None:
    from cliques.cli import build_parser
    from cliques_lab.cli import devcluster_cmd

    args = build_parser().parse_args(["dev-cluster", "up", *flags])
    want = startmodel.Defaults(60, 90) if flags else None
    assert devcluster_cmd._start_defaults(args) == want
