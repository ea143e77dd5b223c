"""Start-up calls wait out a struggling API server and stop only for what waiting cannot
fix (`kube.startup.patiently`, `operator.preflight`)."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from cliques.kube import errors
from cliques.kube.startup import StartupError, Stopped, patiently
from cliques.operator import preflight


def failing_then(answer: str, failures: list[BaseException]):  # type: ignore[no-untyped-def]
    calls = {"n": 0}

    async def call() -> str:
        calls["n"] += 1
        if failures:
            raise failures.pop(0)
        return answer

    return call, calls


def starting() -> errors.ApiError:
    body = (
        b'{"reason": "ServiceUnavailable", "message": "the request has been made before all '
        b'known HTTP paths have been installed"}'
    )
    return errors.from_response(503, body, verb="get", path="/apis/scheduling.k8s.io")


def test_transient_failures_are_waited_out_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="cliques.kube.startup")
    throttled = errors.from_response(429, b"{}", verb="get", path="/apis")
    failures: list[BaseException] = [
        starting(),
        throttled,
        ConnectionRefusedError("connection refused"),
        TimeoutError("no answer"),
        starting(),
    ]
    call, calls = failing_then("served", failures)
    got = asyncio.run(patiently("discovery of x", call, first_delay=0.001, max_delay=0.002))
    assert got == "served" and calls["n"] == 6
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "waiting for the API server" in warnings[0].getMessage()
    assert "503" in warnings[0].getMessage() and not warnings[0].exc_info
    infos = [r for r in caplog.records if r.levelno == logging.INFO]
    assert len(infos) == 1 and "answered after 5 failed attempt(s)" in infos[0].getMessage()


@pytest.mark.parametrize(
    ("status", "says"),
    [(401, "refuses the operator's credentials"), (403, "lacks the RBAC for it")],
)
def test_refused_credentials_and_rbac_are_not_waited_for(status: int, says: str) -> None:
    refused = errors.from_response(
        status, b'{"message": "cannot list cliquesets"}', verb="list", path="/apis/cliques.dev"
    )
    call, calls = failing_then("never", [refused])
    with pytest.raises(StartupError, match=says) as info:
        asyncio.run(patiently("list of cliquesets", call, first_delay=0.001))
    assert calls["n"] == 1
    assert str(info.value).startswith("list of cliquesets: ")


def test_a_stop_ends_the_wait() -> None:
    async def scenario() -> None:
        stop = asyncio.Event()
        call, _ = failing_then("never", [starting() for _ in range(1000)])
        task = asyncio.create_task(patiently("x", call, stop=stop, first_delay=0.01))
        await asyncio.sleep(0.05)
        stop.set()
        with pytest.raises(Stopped):
            await asyncio.wait_for(task, timeout=5)

    asyncio.run(scenario())


def test_a_bug_is_raised_as_it_is() -> None:
    call, _ = failing_then("never", [KeyError("resources")])
    with pytest.raises(KeyError):
        asyncio.run(patiently("x", call, first_delay=0.001))


def test_missing_crds_say_what_to_install() -> None:
    served = {"cliquesets", "cliques", "cliquesets/status", "cliquescalinggroups"}
    assert preflight.missing_crds(served) == ""
    message = preflight.missing_crds({"cliquesets"})
    assert "cliques.cliques.dev" in message and "kubectl apply -f deploy/crds/" in message
    assert "cliquescalinggroups.cliques.dev" in message
    assert "cliquesets.cliques.dev" not in message
    everything = preflight.missing_crds(set())
    assert "cliquesets.cliques.dev, cliques.cliques.dev, cliquescalinggroups" in everything


class Discovery:
    """Stands in for the client's discovery calls: the cliques.dev group is served from
    the `after`-th call on (as after an API server restart), never if `after` is None."""

    def __init__(self, after: int | None) -> None:
        self.after = after
        self.calls = 0

    async def get_path(self, path: str) -> bytes:
        if path == "/apis/cliques.dev/v1alpha1":
            self.calls += 1
            if self.after is None or self.calls < self.after:
                raise errors.from_response(404, b"404 page not found", verb="get", path=path)
            names = ("cliquesets", "cliques", "cliquescalinggroups")
            return json.dumps({"resources": [{"name": n} for n in names]}).encode()
        raise errors.from_response(404, b"404 page not found", verb="get", path=path)

    async def list_page(self, *args: object, **kwargs: object) -> bytes:
        return b'{"items": []}'


def test_crds_missing_for_a_moment_are_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cliques.kube.startup.FIRST_DELAY", 0.001)
    client = Discovery(after=3)
    gang = asyncio.run(preflight.check(client))  # type: ignore[arg-type]
    assert client.calls == 3 and not gang.served


def test_crds_still_missing_after_the_grace_say_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(preflight, "CRD_GRACE", 0.05)
    client = Discovery(after=None)
    with pytest.raises(StartupError, match="install the CustomResourceDefinitions"):
        asyncio.run(preflight.check(client))  # type: ignore[arg-type]
    assert client.calls >= 2


class CompositeLister:
    """Lists CompositePodGroups, or answers 403 (an operator whose RBAC predates them)."""

    def __init__(self, allowed: bool) -> None:
        self.allowed = allowed
        self.asked: list[str] = []

    async def list_page(self, resource: object, namespace: object, **kwargs: object) -> bytes:
        self.asked.append(getattr(resource, "plural", ""))
        if not self.allowed:
            raise errors.from_response(403, b"{}", verb="list", path="/apis/scheduling.k8s.io")
        return b'{"items": []}'


@pytest.mark.parametrize("allowed", [True, False])
def test_composite_pod_groups_need_their_rbac(allowed: bool) -> None:
    from cliques.kube import gangapi

    found = gangapi.interpret(
        ["v1beta1", "v1alpha3"],
        {"v1beta1": ["podgroups", "workloads"], "v1alpha3": ["compositepodgroups"]},
    )
    assert found.composite
    client = CompositeLister(allowed)
    checked = asyncio.run(preflight._composite(client, found, "ns", "in ns", None))  # type: ignore[arg-type]
    assert client.asked == ["compositepodgroups"]
    assert checked.composite is allowed
    assert (gangapi.COMPOSITE in checked.features) is allowed
    assert checked.podgroups  # PodGroups stay: a gang is then one PodGroup
