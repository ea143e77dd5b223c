"""`cliques hash`: templates found in manifests, --json, --diff, and errors (exit code 2)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from cliques import hashing
from cliques.cli import main

CONTAINER = {"name": "main", "image": "app:1", "resources": {"limits": {"cpu": "1000m"}}}
TEMPLATE = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [CONTAINER]}}
HASH = hashing.template_hash(TEMPLATE)

MANIFESTS = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    metadata: {labels: {app: x}}
    spec:
      containers: [{name: main, image: "app:1", resources: {limits: {cpu: 1}}}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{port: 80}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  template:
    spec:
      containers: [{name: db, image: "pg:16"}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{name: job, image: busybox}]
---
apiVersion: cliques.dev/v1alpha1
kind: CliqueSet
metadata: {name: llm}
spec:
  template:
    cliques:
    - name: prefill
      template:
        spec:
          containers: [{name: server, image: "vllm:1", resources: {limits: {nvidia.com/gpu: 8}}}]
    - name: decode
      template:
        spec:
          containers: [{name: server, image: "vllm:1", resources: {limits: {nvidia.com/gpu: "4"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: web-0, labels: {app: x}, uid: abc}
spec:
  containers: [{name: main, image: "app:1", resources: {limits: {cpu: 1000m}}}]
"""


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["hash", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    path = tmp_path / "all.yaml"
    path.write_text(MANIFESTS)
    return path


def write(tmp_path: Path, name: str, doc: Any) -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def test_lists_every_template(manifests: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run([str(manifests)], capsys)
    assert code == 0, err
    lines = [line.split() for line in out.splitlines()]
    assert [(cols[1], cols[2]) for cols in lines] == [
        ("Deployment/web", "spec.template"),
        ("StatefulSet/db", "spec.template"),
        ("CronJob/nightly", "spec.jobTemplate.spec.template"),
        ("CliqueSet/llm", "spec.template.cliques[name=prefill].template"),
        ("CliqueSet/llm", "spec.template.cliques[name=decode].template"),
        ("Pod/web-0", "-"),
    ]
    assert all(cols[0] == str(manifests) for cols in lines)
    # The Deployment and the Pod made from it (same labels, "1" vs "1000m") hash alike.
    assert lines[0][3] == lines[5][3] == HASH


def test_json_output(manifests: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--json", str(manifests)], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["algorithm"] == hashing.HASH_ALGORITHM_VERSION
    prefill = doc["templates"][3]
    assert prefill == {
        "file": str(manifests),
        "document": 4,
        "kind": "CliqueSet",
        "name": "llm",
        "clique": "prefill",
        "path": "spec.template.cliques[name=prefill].template",
        "template_kind": "PodTemplateSpec",
        "hash": hashing.template_hash(
            {
                "spec": {
                    "containers": [
                        {
                            "name": "server",
                            "image": "vllm:1",
                            "resources": {"limits": {"nvidia.com/gpu": 8}},
                        }
                    ]
                }
            }
        ),
    }


def test_bare_templates_json_lists_and_stdin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = write(tmp_path, "t.json", TEMPLATE)
    spec = write(tmp_path, "s.json", TEMPLATE["spec"])
    listed = write(
        tmp_path,
        "l.json",
        [{"kind": "PodTemplate", "metadata": {"name": "pt"}, "template": TEMPLATE}],
    )
    kind_list = write(
        tmp_path,
        "k.yaml",
        json.dumps({"kind": "List", "items": [{"kind": "Job", "spec": {"template": TEMPLATE}}]}),
    )
    code, out, err = run([str(bare), str(spec), str(listed), str(kind_list)], capsys)
    assert code == 0, err
    rows = [line.split() for line in out.splitlines()]
    assert [r[1] for r in rows] == ["PodTemplateSpec", "PodSpec", "PodTemplate/pt", "Job"]
    assert rows[0][3] == rows[2][3] == rows[3][3] == HASH
    assert rows[1][3] == hashing.template_hash(TEMPLATE["spec"], "PodSpec")

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(MANIFESTS.encode())))
    code, out, _ = run(["-"], capsys)
    assert code == 0
    assert out.splitlines()[0].split()[:2] == ["<stdin>", "Deployment/web"]


def test_yaml_timestamps_and_strings_stay_strings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path,
        "d.yaml",
        "kind: Deployment\nspec:\n  template:\n    metadata: {annotations: {since: 2024-01-01}}\n"
        "    spec: {containers: [{name: a}]}\n",
    )
    code, out, err = run([str(path)], capsys)
    assert code == 0, err
    assert out.split()[-1] == hashing.template_hash(
        {
            "metadata": {"annotations": {"since": "2024-01-01"}},
            "spec": {"containers": [{"name": "a"}]},
        }
    )


# --- --diff --------------------------------------------------------------------------------


def test_diff_same(tmp_path: Path, manifests: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bare = write(tmp_path, "t.json", TEMPLATE)
    code, out, _ = run(["--diff", f"{manifests}#web", str(bare)], capsys)
    assert code == 0
    assert out == f"same desired state (hash {HASH})\n"
    # A Pod against the Deployment's template; a name picks by Kind/name too.
    code, out, _ = run(["--diff", f"{manifests}#Pod/web-0", f"{manifests}#Deployment/web"], capsys)
    assert code == 0


def test_diff_different(
    tmp_path: Path, manifests: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["--diff", f"{manifests}#prefill", f"{manifests}#decode"], capsys)
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "different"
    assert lines[1] == '  at spec.containers[name=server].resources.limits["nvidia.com/gpu"]'
    assert lines[2].split() == [f"{manifests}#prefill", '"8"']
    assert lines[3].split() == [f"{manifests}#decode", '"4"']
    assert "hashes:" in lines[4]

    code, out, _ = run(["--json", "--diff", f"{manifests}#prefill", f"{manifests}#decode"], capsys)
    assert code == 1
    doc = json.loads(out)
    assert doc["same"] is False
    assert doc["difference"] == {
        "path": 'spec.containers[name=server].resources.limits["nvidia.com/gpu"]',
        "a": "8",
        "b": "4",
    }
    assert doc["a"]["hash"] != doc["b"]["hash"]


def test_diff_lists_every_path_and_says_whether_pods_take_it_in_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = {
        "spec": {
            "containers": [
                {"name": "main", "image": "vllm:1"},
                {"name": "side", "image": "envoy:1"},
            ]
        }
    }
    images = json.loads(json.dumps(base).replace(":1", ":2"))
    env = json.loads(json.dumps(images))
    env["spec"]["containers"][1]["env"] = [{"name": "A", "value": "1"}]
    a, b, c = (write(tmp_path, f"{n}.json", d) for n, d in (("a", base), ("b", images), ("c", env)))
    code, out, _ = run(["--diff", str(a), str(b)], capsys)
    assert code == 1
    assert (
        "  2 path(s) differ: spec.containers[name=main].image, spec.containers[name=side].image"
        in out
    )
    assert "  in place: yes" in out
    code, out, _ = run(["--json", "--diff", str(a), str(c)], capsys)
    doc = json.loads(out)
    assert doc["paths"] == [
        "spec.containers[name=main].image",
        "spec.containers[name=side].env",
        "spec.containers[name=side].image",
    ]
    assert doc["inPlace"] is False
    assert hashing.changed_paths(base, base) == [] and not hashing.in_place([])


def test_diff_added_field_is_absent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path, "a.json", TEMPLATE)
    b = write(tmp_path, "b.json", {**TEMPLATE, "spec": {**TEMPLATE["spec"], "hostNetwork": True}})
    code, out, _ = run(["--diff", str(a), str(b)], capsys)
    assert code == 1
    assert "  at spec.hostNetwork" in out
    assert out.splitlines()[2].split() == [str(a), "absent"]


def test_diff_pod_spec_against_template(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = write(tmp_path, "s.json", TEMPLATE["spec"])
    tpl = write(tmp_path, "t.json", {"spec": TEMPLATE["spec"]})
    code, out, _ = run(["--diff", str(spec), str(tpl)], capsys)
    assert code == 0, out


# --- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("kind: Service\nmetadata: {name: s}\n", "no pod template found"),
        ("a: [1, 2\n", "bad YAML: line 2"),
        ('{"spec": ', "bad JSON at line 1"),
        (
            "kind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    spec:\n"
            "      containers: [{name: a}, {name: a}]\n",
            "Deployment/d: invalid template: "
            'spec.template.spec.containers[1]: duplicate key name="a"',
        ),
        (
            "kind: CliqueSet\nmetadata: {name: c}\nspec:\n  template:\n    cliques:\n"
            "    - name: w\n      template: {spec: {containers: [\n"
            "        {name: a, resources: {limits: {cpu: lots}}}]}}\n",
            "CliqueSet/c: invalid template: spec.template.cliques[name=w].template"
            '.spec.containers[0].resources.limits.cpu: invalid quantity "lots"',
        ),
        (
            "kind: Job\nmetadata: {name: j}\nspec: {template: [1]}\n",
            "Job/j: spec.template: expected a pod template",
        ),
        (b"\xff\xfe\x00".decode("latin-1"), "not UTF-8"),
    ],
)
def test_errors_exit_2_with_file_and_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, expected: str
) -> None:
    path = tmp_path / "in.yaml"
    path.write_bytes(content.encode("latin-1") if "\xff" in content else content.encode())
    code, out, err = run([str(path)], capsys)
    assert code == 2
    assert out == ""
    assert err.startswith(f"cliques hash: {path}: ")
    assert expected in err, err


def test_unreadable_file_and_partial_output(
    tmp_path: Path, manifests: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.yaml"
    code, out, err = run([str(missing), str(manifests), str(tmp_path)], capsys)
    assert code == 2
    assert len(out.splitlines()) == 6  # the good file is still listed
    assert f"{missing}: cannot read" in err
    assert f"{tmp_path}: cannot read" in err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["--diff", "{m}", "{m}"],
            "holds 6 templates (web, db, nightly, prefill, decode, web-0); pick one with",
        ),
        (["--diff", "{m}#nope", "{m}#web"], "no template named 'nope'"),
        (["--diff", "{m}#web", "{m}#web", "extra"], "--diff takes exactly two templates"),
        ([], "no FILE given"),
    ],
)
def test_usage_errors(
    manifests: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    code, _, err = run([a.format(m=manifests) for a in argv], capsys)
    assert code == 2
    assert expected in err, err


def test_help_lists_hash(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["hash", "--help"])
    assert info.value.code == 0
    assert "--diff A B" in capsys.readouterr().out
