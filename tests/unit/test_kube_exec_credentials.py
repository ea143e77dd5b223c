"""Exec plugin credentials with real plugin processes (small Python scripts): cached for
their lifetime, one run shared by concurrent requests, killed on timeout and on cancel,
failures retried by the callers, certificates rotated, and no secret in an error."""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from cliques.kube import errors, startup
from cliques.kube.cluster import Cluster
from cliques.kube.credentials import CredentialsUnavailable
from cliques.kube.exec_credentials import ExecFailed, ExecPlugin, ExecSpec
from tests.support import tls_files

V1 = "client.authentication.k8s.io/v1"


def _at(seconds_from_now: float, now: float) -> str:
    return datetime.datetime.fromtimestamp(now + seconds_from_now, datetime.UTC).isoformat()


def plugin(tmp_path: Path, body: str) -> ExecSpec:
    """A plugin running `body` (Python) after it has counted its run in `runs`; `n` is the
    run's number, `answer(status)` prints an ExecCredential."""
    script = tmp_path / "plugin.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import json, os, sys, time
            runs = {str(tmp_path / "runs")!r}
            with open(runs, "a") as f:
                f.write(os.environ["KUBERNETES_EXEC_INFO"] + "\\n")
            n = len(open(runs).read().splitlines())
            def answer(status):
                print(json.dumps({{"apiVersion": {V1!r}, "kind": "ExecCredential",
                                  "status": status}}))
            """
        )
        + textwrap.dedent(body)
    )
    return ExecSpec(sys.executable, (str(script),), (("EXTRA", "x"),), V1)


def runs(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "runs"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


async def _until(condition: Any, timeout: float = 10.0) -> None:
    """Poll `condition` (a process's state: nothing to wait on) until it holds."""
    async with asyncio.timeout(timeout):
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.02)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie still answers kill(0): look at its state.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] in "ZX"
    except (OSError, IndexError):
        return True


@pytest.mark.parametrize("lifetime", [3600.0, 300.0, 2.0])
def test_a_token_serves_every_request_until_near_its_expiry(
    tmp_path: Path, lifetime: float
) -> None:
    """A token living 5 minutes or less used to run the plugin on every request."""
    clock = Clock()
    # Run n's token expires `lifetime` after the (fake) time of that run.
    spec = plugin(
        tmp_path,
        f"""
        from datetime import datetime, UTC
        expiry = datetime.fromtimestamp({clock.now} + n * {lifetime}, UTC).isoformat()
        answer({{"token": f"tok-{{n}}", "expirationTimestamp": expiry}})
        """,
    )
    auth = ExecPlugin(spec, clock=clock)

    async def main() -> tuple[list[str | None], list[str | None]]:
        together = await asyncio.gather(*(auth.header() for _ in range(50)))
        one_by_one = [await auth.header() for _ in range(50)]
        return list(together), one_by_one

    together, one_by_one = asyncio.run(main())
    assert set(together) == set(one_by_one) == {"Bearer tok-1"}
    assert len(runs(tmp_path)) == 1
    # Renewed a tenth of its lifetime, at most a minute, before it expires.
    margin = min(60.0, lifetime / 10)
    clock.now += lifetime - margin - 0.5  # just before: still the same token
    assert asyncio.run(auth.header()) == "Bearer tok-1"
    assert len(runs(tmp_path)) == 1
    clock.now += 1.0
    assert asyncio.run(auth.header()) == "Bearer tok-2"
    assert len(runs(tmp_path)) == 2


def test_the_plugin_is_told_it_is_not_interactive_and_gets_its_env(tmp_path: Path) -> None:
    spec = plugin(tmp_path, "assert os.environ['EXTRA'] == 'x'\nanswer({'token': 't'})")
    cluster_info = {"server": "https://api:6443", "config": {"a": 1}}
    auth = ExecPlugin(spec)
    asyncio.run(auth.header())
    info = runs(tmp_path)[0]
    assert info == {"apiVersion": V1, "kind": "ExecCredential", "spec": {"interactive": False}}
    spec = ExecSpec(spec.command, spec.args, spec.env, V1, cluster_info)
    asyncio.run(ExecPlugin(spec).header())
    assert runs(tmp_path)[1]["spec"]["cluster"] == cluster_info


def test_a_hanging_plugin_times_out_and_is_killed_with_its_children(tmp_path: Path) -> None:
    spec = plugin(
        tmp_path,
        f"""
        import subprocess
        child = subprocess.Popen(["sleep", "300"])
        open({str(tmp_path / "pids")!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
        time.sleep(300)
        """,
    )
    auth = ExecPlugin(spec, timeout=3.0)  # long enough for the plugin to start its child
    started = time.monotonic()
    with pytest.raises(ExecFailed, match=r"exec plugin python\S* no answer within 3s \(killed\)"):
        asyncio.run(auth.header())
    assert time.monotonic() - started < 15
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    asyncio.run(_until(lambda: all(_gone(p) for p in pids)))


def test_a_cancelled_request_kills_the_plugin(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    spec = plugin(
        tmp_path, f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(300)"
    )
    auth = ExecPlugin(spec)

    async def main() -> int:
        task = asyncio.create_task(auth.header())
        await _until(lambda: pid_file.exists() and pid_file.read_text() != "")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        pid = int(pid_file.read_text())
        # Reaped by the time the cancelled request has ended: no zombie, no orphan.
        assert _gone(pid)
        return pid

    asyncio.run(main())


def test_a_failure_is_shared_by_the_waiting_requests_and_says_little(tmp_path: Path) -> None:
    lines = [f"line {i}" for i in range(20)] + [
        "token: eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl",
        "Authorization: Bearer s3cr3t-bearer-value",
    ]
    spec = plugin(
        tmp_path,
        f"time.sleep(0.3)\nsys.stderr.write({chr(10).join(lines)!r})\nanswer({{'token': 'x'}})"
        "\nsys.exit(7)",
    )
    auth = ExecPlugin(spec)

    async def main() -> list[BaseException | str | None]:
        return await asyncio.gather(*(auth.header() for _ in range(20)), return_exceptions=True)

    outcomes = asyncio.run(main())
    assert len(runs(tmp_path)) == 1
    assert all(isinstance(o, ExecFailed) for o in outcomes)
    text = str(outcomes[0])
    assert text.startswith("exec plugin python")
    assert text.endswith(
        "exited 7: line 17 | line 18 | line 19 | <redacted> | Authorization: <redacted>"
    )
    assert "eyJ" not in text and "s3cr3t" not in text and "line 16" not in text
    assert len(text) < 600 and "\n" not in text
    assert isinstance(outcomes[0], CredentialsUnavailable)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("print('SECRET-out not json')", "did not print an ExecCredential (not JSON)"),
        ("answer({'clientCertificateData': 'x'})", "clientCertificateData and clientKeyData"),
        ("answer({})", "neither a token nor a client certificate"),
        ("answer({'token': 'SECRET', 'expirationTimestamp': '2000-01-01T00:00:00Z'})",
         "printed a credential that has expired"),
        ("answer({'token': 'SECRET', 'expirationTimestamp': 'soon'})", "not an RFC 3339 time"),
        ("print(json.dumps({'apiVersion': 'v9', 'kind': 'ExecCredential', "
         "'status': {'token': 'SECRET'}}))", "apiVersion 'v9' (want"),
    ],
)  # fmt: skip
def test_what_a_plugin_prints_wrong_is_a_retryable_failure(
    tmp_path: Path, body: str, message: str
) -> None:
    with pytest.raises(ExecFailed) as err:
        asyncio.run(ExecPlugin(plugin(tmp_path, body)).header())
    assert message in str(err.value) and "SECRET" not in str(err.value)


def test_a_refused_token_is_renewed_before_the_next_request(tmp_path: Path) -> None:
    auth = ExecPlugin(plugin(tmp_path, "answer({'token': f'tok-{n}'})"))  # no expiry
    assert asyncio.run(auth.header()) == "Bearer tok-1"
    assert asyncio.run(auth.header()) == "Bearer tok-1"
    auth.refused("Bearer some-older-token")  # a 401 to an older token changes nothing
    assert asyncio.run(auth.header()) == "Bearer tok-1"
    auth.refused("Bearer tok-1")
    assert asyncio.run(auth.header()) == "Bearer tok-2"


def test_client_certificates_from_the_plugin_are_used_and_rotated(tmp_path: Path) -> None:
    first, second = tls_files.make(tmp_path / "one"), tls_files.make(tmp_path / "two")
    clock = Clock()
    expiry = _at(600, clock.now)
    spec = plugin(
        tmp_path,
        f"""
        d = {str(tmp_path)!r} + ("/one" if n == 1 else "/two")
        answer({{"clientCertificateData": open(d + "/client.crt").read(),
                 "clientKeyData": open(d + "/client.key").read(),
                 "expirationTimestamp": {expiry!r}}})
        """,
    )
    auth = ExecPlugin(spec, clock=clock)
    cluster = Cluster("https://api:6443", auth=auth)
    assert asyncio.run(auth.header()) is None  # no token: the certificate authenticates
    ctx = cluster.ssl_context()
    assert auth.client_cert() == (first.cert.read_bytes(), first.key.read_bytes())
    assert cluster.ssl_context() is ctx
    clock.now += 590
    asyncio.run(auth.header())
    assert auth.client_cert() == (second.cert.read_bytes(), second.key.read_bytes())
    rotated = cluster.ssl_context()
    assert rotated is not ctx and cluster.ssl_context() is rotated
    assert len(runs(tmp_path)) == 2


def test_a_plugin_certificate_that_cannot_be_used_is_retryable(tmp_path: Path) -> None:
    spec = plugin(tmp_path, "answer({'clientCertificateData': 'x', 'clientKeyData': 'SECRET'})")
    auth = ExecPlugin(spec)
    cluster = Cluster("https://api:6443", auth=auth)
    asyncio.run(auth.header())
    with pytest.raises(CredentialsUnavailable, match="client certificate and key cannot") as e:
        cluster.ssl_context()
    assert "SECRET" not in str(e.value)


@pytest.mark.parametrize("failures", [errors.API_FAILURES, startup.TRANSIENT])
def test_every_caller_retries_a_plugin_failure(failures: tuple[type[BaseException], ...]) -> None:
    """The informers, the runner, the executor, the shard leases and the event recorder
    retry `errors.API_FAILURES`; start-up calls wait out `startup.TRANSIENT`."""
    assert issubclass(ExecFailed, failures)


def test_a_start_up_call_waits_out_a_failing_plugin() -> None:
    calls = 0

    async def call() -> str:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise ExecFailed("exec plugin p exited 1")
        return "ok"

    assert asyncio.run(startup.patiently("discovery", call, first_delay=0.01)) == "ok"
    assert calls == 3
