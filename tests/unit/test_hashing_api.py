"""cliques.hashing as a library: its examples, error paths, `diff`, and that it imports with
only the base install."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from cliques import _core, hashing

# --- the public surface -------------------------------------------------------------------


def test_module_docstring_examples() -> None:
    result = doctest.testmod(hashing, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 5
    assert result.failed == 0


def test_functions_are_the_core_s() -> None:
    # Re-exported, not wrapped: no Python frame on the hot path.
    assert hashing.canonical_json is _core.canonical_json
    assert hashing.template_hash is _core.template_hash
    assert hashing.HASH_ALGORITHM_VERSION == _core.HASH_ALGORITHM_VERSION == 1


def test_all_names_exist() -> None:
    for name in hashing.__all__:
        assert hasattr(hashing, name), name


# --- errors carry paths --------------------------------------------------------------------


def containers(*items: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"containers": list(items)}}


@pytest.mark.parametrize(
    ("doc", "kind", "path", "detail"),
    [
        (
            containers({"name": "main"}, {"name": "main"}),
            "PodTemplateSpec",
            "spec.containers[1]",
            'duplicate key name="main"',
        ),
        (
            containers({"name": "a", "resources": {"limits": {"cpu": "abc"}}}),
            "PodTemplateSpec",
            "spec.containers[0].resources.limits.cpu",
            'invalid quantity "abc"',
        ),
        (
            {
                "spec": {
                    "initContainers": [
                        {"name": "i", "resources": {"requests": {"memory": "1e101"}}}
                    ]
                }
            },
            "PodTemplateSpec",
            "spec.initContainers[0].resources.requests.memory",
            "invalid quantity",
        ),
        (
            containers({"name": "a", "resources": {"limits": {"nvidia.com/gpu": "one"}}}),
            "PodTemplateSpec",
            "spec.containers[0].resources.limits.nvidia.com/gpu",
            "invalid quantity",
        ),
        (
            containers(
                {
                    "name": "a",
                    "ports": [{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}],
                }
            ),
            "PodTemplateSpec",
            "spec.containers[0].ports[1]",
            "duplicate key",
        ),
        (
            {"containers": [{"name": "a"}, {"name": "a"}]},
            "PodSpec",
            "containers[1]",
            "duplicate key",
        ),
        ({"spec": {"containers": "main"}}, "PodTemplateSpec", "spec.containers", "expected a list"),
        (
            {"spec": {"securityContext": 1}},
            "PodTemplateSpec",
            "spec.securityContext",
            "expected an object",
        ),
        (
            {"metadata": {"labels": ["a"]}},
            "PodTemplateSpec",
            "metadata.labels",
            "expected",
        ),
        (
            {"spec": {"volumes": [{"name": "v"}, None]}},
            "PodTemplateSpec",
            "spec.volumes[1]",
            "expected an object",
        ),
    ],
)
def test_errors_name_the_path(doc: dict[str, Any], kind: str, path: str, detail: str) -> None:
    for form in (doc, json.dumps(doc), json.dumps(doc).encode()):
        with pytest.raises(ValueError) as info:
            hashing.template_hash(form, kind)
        message = str(info.value)
        assert message.startswith(path + ": "), message
        assert detail in message, message


@pytest.mark.parametrize(
    "bad", [b"[1]", b"", b"{", b'{"a": 1} 2', b"\xff\xfe", "null", '"x"', b'{"spec": {"x": NaN}}']
)
def test_bad_documents_raise_value_error(bad: bytes | str) -> None:
    with pytest.raises(ValueError):
        hashing.canonical_json(bad)


def test_unknown_kind() -> None:
    with pytest.raises(ValueError, match="Pod"):
        hashing.canonical_json({}, "Deployment")


# --- diff ----------------------------------------------------------------------------------


def template(**container: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "main", "image": "app:1", **container}]}}


def test_diff_same() -> None:
    a = template(resources={"limits": {"cpu": "1000m", "memory": "1Gi"}})
    b = template(resources={"limits": {"memory": "1024Mi", "cpu": 1}})
    assert hashing.diff(a, b) is None
    assert hashing.diff(json.dumps(a), json.dumps(b).encode()) is None


@pytest.mark.parametrize(
    ("a", "b", "path", "left", "right"),
    [
        (template(), template(image="app:2"), "spec.containers[name=main].image", "app:1", "app:2"),
        (
            template(resources={"limits": {"cpu": "1"}}),
            template(resources={"limits": {"cpu": "1500m"}}),
            "spec.containers[name=main].resources.limits.cpu",
            "1",
            "1.5",
        ),
        (
            template(resources={"limits": {"nvidia.com/gpu": 1}}),
            template(resources={"limits": {"nvidia.com/gpu": 2}}),
            'spec.containers[name=main].resources.limits["nvidia.com/gpu"]',
            "1",
            "2",
        ),
        (
            template(),
            template(args=["x"]),
            "spec.containers[name=main].args",
            hashing.ABSENT,
            ["x"],
        ),
        (
            template(args=["a", "b"]),
            template(args=["a", "c"]),
            "spec.containers[name=main].args[1]",
            "b",
            "c",
        ),
        (
            template(env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]),
            template(env=[{"name": "A", "value": "1"}, {"name": "B", "value": "3"}]),
            "spec.containers[name=main].env[name=B].value",
            "2",
            "3",
        ),
        (
            template(env=[{"name": "A"}, {"name": "B"}]),
            template(env=[{"name": "B"}, {"name": "A"}]),
            "spec.containers[name=main].env[0].name",
            "A",
            "B",
        ),
        (
            template(ports=[{"containerPort": 80}]),
            template(ports=[{"containerPort": 80, "protocol": "TCP"}]),
            "spec.containers[name=main].ports[containerPort=80,protocol=TCP].protocol",
            hashing.ABSENT,
            "TCP",
        ),
        (
            template(volumeMounts=[{"name": "a", "mountPath": "/a"}]),
            template(volumeMounts=[{"name": "a", "mountPath": "/a", "readOnly": True}]),
            "spec.containers[name=main].volumeMounts[mountPath=/a].readOnly",
            hashing.ABSENT,
            True,
        ),
        (
            {"metadata": {"labels": {"app.kubernetes.io/name": "x"}}, **template()},
            {"metadata": {"labels": {"app.kubernetes.io/name": "y"}}, **template()},
            'metadata.labels["app.kubernetes.io/name"]',
            "x",
            "y",
        ),
        (template(), {"metadata": {}, **template()}, "metadata", hashing.ABSENT, {}),
    ],
)
def test_diff_names_the_first_difference(a: Any, b: Any, path: str, left: Any, right: Any) -> None:
    found = hashing.diff(a, b)
    assert found == hashing.Difference(path, left, right)
    swapped = hashing.diff(b, a)
    assert swapped == hashing.Difference(path, right, left)


def test_diff_added_and_removed_list_elements() -> None:
    one = {"spec": {"containers": [{"name": "a"}, {"name": "c"}]}}
    two = {"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}}
    found = hashing.diff(one, two)
    assert found is not None
    assert (found.path, found.left, found.right) == (
        "spec.containers[name=b]",
        hashing.ABSENT,
        {"name": "b"},
    )
    assert str(found) == 'spec.containers[name=b]: absent != {"name":"b"}'


def test_diff_str_and_validation() -> None:
    found = hashing.diff(template(), template(image="app:2"))
    assert str(found) == 'spec.containers[name=main].image: "app:1" != "app:2"'
    with pytest.raises(ValueError, match=r"spec\.containers\[1\]: duplicate key"):
        hashing.diff(template(), {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}})
    assert repr(hashing.ABSENT) == "absent"
    assert not hashing.ABSENT


def test_diff_podspec_kind() -> None:
    found = hashing.diff(
        {"containers": [{"name": "a", "image": "x"}]}, {"containers": [{"name": "a"}]}, "PodSpec"
    )
    assert found == hashing.Difference("containers[name=a].image", "x", hashing.ABSENT)


# --- the base install ----------------------------------------------------------------------

BLOCKED = (
    "kubernetes_asyncio",
    "msgspec",
    "uvloop",
    "rich",
    "prometheus_client",
    "matplotlib",
    "aiohttp",
)

_BLOCKER = textwrap.dedent(
    """
    import importlib.abc, sys
    BLOCKED = {blocked!r}

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"blocked for this test: {{name}}", name=name)
            return None

    for mod in list(sys.modules):
        if mod.split(".")[0] in BLOCKED:
            del sys.modules[mod]
    sys.meta_path.insert(0, Block())
    """
).format(blocked=BLOCKED)


def run_without_extras(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _BLOCKER + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_hashing_imports_with_only_the_base_install() -> None:
    proc = run_without_extras(
        """
        try:
            import msgspec
        except ModuleNotFoundError:
            pass
        else:
            raise SystemExit("the blocker does not work")
        from cliques import hashing
        digest = hashing.template_hash({"spec": {"containers": [{"name": "a"}]}})
        assert hashing.diff({"spec": {}}, {"spec": {}}) is None
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
        print(digest, loaded)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("[]")


def test_hash_command_runs_with_only_the_base_install(tmp_path: Any) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(
        "kind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: a, image: x}]\n"
    )
    proc = run_without_extras(
        f"""
        from cliques.cli import main
        code = main(["hash", {str(manifest)!r}])
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
        assert not loaded, loaded
        raise SystemExit(code)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "Pod/p" in proc.stdout
