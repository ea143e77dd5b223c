"""The dev cluster's KWOK stages that play the kubelet's in-place resize (cliques_lab's
`devcluster.kwok`): they act on running pods whose resources changed, the pod-ready stage
reports the resources, and a cluster made before them is told it misses them."""

from __future__ import annotations

import pytest

from cliques_lab.devcluster import kwok


def test_resize_stages_act_on_running_pods_whose_resources_changed() -> None:
    stages = {s["metadata"]["name"]: s["spec"] for s in kwok.resize_stages()}
    assert set(stages) == {
        "pod-resize-start",
        "pod-resize-done",
        "pod-resize-pending",
        "pod-resize-pending-cleared",
    }
    for name, spec in stages.items():
        keys = [e["key"] for e in spec["selector"]["matchExpressions"]]
        assert ".metadata.deletionTimestamp" in keys and ".status.phase" in keys, name
    assert stages["pod-resize-done"]["delay"]["durationMilliseconds"] == kwok.RESIZE_MS
    assert "$patch: delete" in stages["pod-resize-done"]["next"]["statusTemplate"]
    assert kwok.RESIZE_PENDING_ANNOTATION in str(stages["pod-resize-pending"])


def test_pod_ready_reports_resources_and_old_clusters_are_told() -> None:
    ready = {
        "kind": "Stage",
        "metadata": {"name": "pod-ready"},
        "spec": {
            "next": {
                "statusTemplate": "containerStatuses:\n{{ range .spec.containers }}\n"
                "- image: {{ .image | Quote }}\n  name: {{ .name | Quote }}\n{{ end }}\n"
            }
        },
    }
    out = kwok.with_resources(ready)
    text = out["spec"]["next"]["statusTemplate"]
    assert "resources: {{ toJson $res }}" in text and 'pick . "cpu" "memory"' in text
    assert "resources" not in ready["spec"]["next"]["statusTemplate"]  # a copy
    with pytest.raises(ValueError, match="pod-ready template changed"):
        kwok.with_resources({"spec": {"next": {"statusTemplate": "x"}}})
    assert "resizes" in kwok.stage_changes(kwok.config_text({}, [ready, *kwok.image_stages()]))
    assert "resizes" not in kwok.stage_changes(
        kwok.config_text({}, [out, *kwok.image_stages(), *kwok.resize_stages()])
    )
