"""`kubectl cliques` as a command: the console script the package declares, its flags
where kubectl users put them, the namespace kubectl would use, and one-line errors with
their own exit codes (no cluster needed: the failures are made here)."""

from __future__ import annotations

import asyncio
import tomllib
from importlib import import_module
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cliques import kubectl
from cliques.kube import errors
from cliques.kubectl import exits, fetch

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_declares_the_kubectl_plugin_script() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, name = scripts["kubectl-cliques"].partition(":")
    assert callable(getattr(import_module(module), name))
    assert getattr(import_module(module), name) is kubectl.main


@pytest.mark.parametrize(
    "argv",
    [
        ["-n", "team", "--context", "c", "status", "llama"],
        ["status", "llama", "-n", "team", "--context", "c"],
        ["--namespace", "team", "status", "--context", "c", "llama"],
    ],
)
def test_kubectl_flags_go_before_or_after_the_command(argv: list[str]) -> None:
    args = kubectl.build_parser().parse_args(argv)
    assert (args.command, args.name, args.namespace, args.context) == (
        "status",
        "llama",
        "team",
        "c",
    )
    assert args.kubeconfig is None


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert kubectl.main([]) == exits.USAGE
    with pytest.raises(SystemExit) as exc:
        kubectl.main(["diff", "llama", "--revision", "two"])
    assert exc.value.code == exits.USAGE
    capsys.readouterr()


def _kubeconfig(tmp_path: Path, server: str, namespace: str | None = None) -> str:
    ctx: dict[str, Any] = {"cluster": "c", "user": "u"}
    if namespace:
        ctx["namespace"] = namespace
    path = tmp_path / "config"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: here\n"
        f"clusters: [{{name: c, cluster: {{server: '{server}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        f"contexts: [{{name: here, context: {ctx}}}, "
        "{name: other, context: {cluster: c, user: u, namespace: elsewhere}}]\n"
    )
    return str(path)


def test_the_namespace_is_the_flag_else_the_contexts_else_default(tmp_path: Path) -> None:
    config = _kubeconfig(tmp_path, "http://127.0.0.1:1", namespace="team")
    assert fetch.namespace("given", config, None) == "given"
    assert fetch.namespace(None, config, None) == "team"
    assert fetch.namespace(None, config, "other") == "elsewhere"
    plain = tmp_path / "plain"
    plain.mkdir()
    assert fetch.namespace(None, _kubeconfig(plain, "http://x"), None) == "default"


def test_a_kubeconfig_that_cannot_be_used_is_one_line_and_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "nope")
    assert kubectl.main(["status", "llama", "--kubeconfig", missing]) == exits.CLUSTER
    err = capsys.readouterr().err
    assert err == f"kubectl cliques status: kubeconfig {missing}: no such readable file\n"


def test_an_api_server_that_cannot_be_reached_is_one_line_and_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _kubeconfig(tmp_path, "http://127.0.0.1:1")
    assert kubectl.main(["diff", "llama", "--kubeconfig", config]) == exits.CLUSTER
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("kubectl cliques diff: cannot reach the API server at http://127.0.0.1:1")
    assert err.count("\n") == 1 and "Traceback" not in err


CLIENT = SimpleNamespace(host="https://api:6443")
PATH = "/apis/cliques.dev/v1alpha1/namespaces/ns/cliquesets/llama"


@pytest.mark.parametrize(
    ("raised", "code", "message"),
    [
        (
            errors.NotFound(404, "NotFound", 'cliquesets.cliques.dev "llama" not found', path=PATH),
            exits.NOT_FOUND,
            'CliqueSet "llama" not found in namespace "ns"',
        ),
        (
            errors.NotFound(
                404,
                "NotFound",
                "the server could not find the requested resource",
                verb="get",
                path=PATH,
            ),
            exits.NOT_FOUND,
            f"get {PATH}: 404 the server could not find the requested resource (are the cliques "
            "CRDs installed?)",
        ),
        (
            errors.Unauthorized(
                403,
                "Forbidden",
                'cliquesets.cliques.dev "llama" is forbidden: User "u" cannot get resource',
            ),
            exits.FORBIDDEN,
            'no permission: cliquesets.cliques.dev "llama" is forbidden: User "u" cannot get '
            "resource",
        ),
        (
            errors.Unauthorized(401, "Unauthorized", ""),
            exits.FORBIDDEN,
            "the API server at https://api:6443 refused the credentials (401 Unauthorized)",
        ),
        (
            TimeoutError("get: no answer within 30s"),
            exits.CLUSTER,
            "cannot reach the API server at https://api:6443: get: no answer within 30s",
        ),
        (
            errors.ServerError(503, "ServiceUnavailable", "etcd down", verb="get", path=PATH),
            exits.CLUSTER,
            f"the API server at https://api:6443: get {PATH}: 503 ServiceUnavailable: etcd down",
        ),
    ],
)
def test_failures_of_a_read_are_one_line_and_their_exit_code(
    raised: Exception, code: int, message: str
) -> None:
    async def fail() -> None:
        raise raised

    with pytest.raises(exits.Failure) as exc:
        asyncio.run(fetch.guarded(CLIENT, fail, "ns", "llama"))  # type: ignore[arg-type]
    assert (exc.value.code, exc.value.message) == (code, message)


def test_the_exit_codes_are_distinct() -> None:
    codes = [
        exits.OK,
        exits.DIFFERENT,
        exits.USAGE,
        exits.CLUSTER,
        exits.NOT_FOUND,
        exits.FORBIDDEN,
    ]
    assert len(set(codes)) == len(codes)
