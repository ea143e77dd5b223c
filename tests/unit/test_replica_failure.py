"""The ReplicaFailure condition (pure parts): which write failures are worth reporting,
how a Clique and a CliqueSet show them, and the memo that keeps one per generation."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

from cliques.api.clique import CliqueStatus
from cliques.api.meta import Condition, find_condition
from cliques.controllers.base import failures
from cliques.controllers.base.actions import Create, Delete, Patch, Plan
from cliques.controllers.base.executor import ExecutionError, Executor, NameInTransition
from cliques.controllers.clique import planner as clique_planner
from cliques.controllers.clique.planner import CliqueSnapshot
from cliques.controllers.cliqueset import planner as cliqueset_planner
from cliques.controllers.cliqueset.planner import CliqueSetSnapshot
from cliques.kube import errors
from cliques.kube.events import ObjectRef
from cliques.kube.expectations import Expectations
from cliques.kube.resources import PODS

from .planner_fixtures import NOW, clique, cliqueset, pod

REFUSED = failures.Failure("FailedCreate", 'Pod "llama-0-worker-0" is invalid: bad name')


def api_error(status: int, message: str = "no") -> errors.ApiError:
    return errors.from_response(status, msgspec.json.encode({"message": message}))


@pytest.mark.parametrize(
    ("first", "reportable"),
    [
        (api_error(422), True),  # invalid pod
        (api_error(403), True),  # quota exceeded, RBAC
        (api_error(400), True),  # admission webhook denial
        (api_error(404), True),  # namespace being deleted
        (api_error(409), False),  # conflict: re-read and retry
        (api_error(429), False),  # throttled
        (api_error(500), False),  # the server's trouble
        (TimeoutError("no answer"), False),
        (KeyError("bug"), False),
    ],
)
def test_only_refusals_a_person_must_fix_are_reportable(
    first: BaseException, reportable: bool
) -> None:
    exc = ExecutionError("1 write(s) failed", reason="FailedCreate", first=first)
    assert exc.reportable is reportable


def test_the_detail_is_the_api_servers_message_cut_to_a_kilobyte() -> None:
    exc = ExecutionError("x", reason="FailedCreate", first=api_error(422, "é" * 5000))
    assert exc.detail == "é" * 1024
    assert ExecutionError("x", reason="FailedDelete", first=OSError("reset")).detail == "reset"


def clique_snap(**kw: Any) -> CliqueSnapshot:
    c = clique(0, "worker", replicas=1, ready=False)
    kw.setdefault("template_hash", "h1")
    return CliqueSnapshot(clique=c, pods=[pod(c, 0, ready=False)], now=NOW, **kw)


def test_a_clique_reports_its_failure_and_drops_it_once_cleared() -> None:
    status = clique_planner.plan(clique_snap(failure=REFUSED)).status
    assert status is not None
    cond = find_condition(status.conditions, "ReplicaFailure")
    assert cond is not None
    assert (cond.status, cond.reason, cond.message) == ("True", REFUSED.reason, REFUSED.message)
    assert [c.type for c in status.conditions] == ["Started", "Ready", "ReplicaFailure"]
    without = clique_planner.plan(clique_snap()).status or CliqueStatus()
    assert find_condition(without.conditions, "ReplicaFailure") is None


def test_a_failure_appearing_or_clearing_is_news_not_progress() -> None:
    held = clique_planner.plan(clique_snap()).status
    failing = clique_planner.plan(clique_snap(failure=REFUSED)).status
    assert held is not None and failing is not None
    assert clique_planner.progress_only(held, held)  # the hold applies to plain progress
    assert not clique_planner.progress_only(held, failing)
    assert not clique_planner.progress_only(failing, held)


def failing_clique(gang: int, role: str, message: str) -> Any:
    c = clique(gang, role, replicas=1, ready=False)
    c.status.conditions.append(
        Condition(
            type="ReplicaFailure",
            status="True",
            reason="FailedCreate",
            message=message,
            last_transition_time=NOW,
        )
    )
    return c


def set_status(cliques: list[Any], **kw: Any) -> Any:
    snap = CliqueSetSnapshot(
        cliqueset=cliqueset(replicas=2),
        cliques=cliques,
        hashes={"leader": "h1", "worker": "h1"},
        now=NOW,
        **kw,
    )
    return cliqueset_planner.plan(snap).status


def test_a_cliqueset_names_its_first_refused_clique_and_counts_the_rest() -> None:
    cliques = [
        clique(0, "leader"),
        failing_clique(0, "worker", "bad name 0"),
        clique(1, "leader"),
        failing_clique(1, "worker", "bad name 1"),
    ]
    cond = find_condition(set_status(cliques).conditions, "ReplicaFailure")
    assert cond is not None and (cond.status, cond.reason) == ("True", "FailedCreate")
    assert cond.message == "llama-0-worker: bad name 0 (and 1 more Cliques)"


def test_a_cliquesets_own_refused_write_comes_first() -> None:
    own = failures.Failure("FailedCreate", 'services "llama-1" is forbidden: exceeded quota')
    cliques = [clique(0, "leader"), failing_clique(0, "worker", "bad name 0")]
    cond = find_condition(set_status(cliques, failure=own).conditions, "ReplicaFailure")
    assert cond is not None and cond.message == own.message


def test_a_healthy_cliqueset_has_no_replica_failure() -> None:
    cliques = [clique(g, r, replicas=1) for g in (0, 1) for r in ("leader", "worker")]
    assert find_condition(set_status(cliques).conditions, "ReplicaFailure") is None


def test_the_memo_keeps_one_failure_per_key_for_its_generation() -> None:
    memo = failures.FailureMemo()
    assert memo.record("ns/a", 1, REFUSED) is True
    assert memo.record("ns/a", 1, REFUSED) is False, "the same failure is reported once"
    other = failures.Failure("FailedCreate", "quota")
    assert memo.record("ns/a", 1, other) is True
    assert memo.current("ns/a", 1) == other
    assert memo.current("ns/a", 2) is None, "a new spec starts clean"
    memo.clear("ns/a")
    assert memo.current("ns/a", 1) is None


class Refusing:
    """A client whose every write is refused with `error` (the executor's bookkeeping is
    what is tested here; the real refusal is in tests/e2e/test_operator_status)."""

    def __init__(self, error: errors.ApiError) -> None:
        self.error = error

    async def create(self, *a: Any, **kw: Any) -> Any:
        raise self.error

    async def delete(self, *a: Any, **kw: Any) -> Any:
        raise self.error

    async def patch(self, *a: Any, **kw: Any) -> Any:
        raise self.error


@pytest.mark.parametrize(
    ("plan", "reason"),
    [
        (Plan(creates=[Create(PODS, "p-0", {}, "uid")]), "FailedCreate"),
        (Plan(deletes=[Delete(PODS, "p-0", "pod-uid", "uid")]), "FailedDelete"),
        (Plan(patches=[Patch(PODS, "p-0", {})]), "FailedUpdate"),
    ],
    ids=["create", "delete", "patch"],
)
def test_the_executor_names_the_kind_of_write_that_failed(plan: Plan, reason: str) -> None:
    refused = api_error(403, "exceeded quota")
    executor = Executor(Refusing(refused), Expectations("test"), None)  # type: ignore[arg-type]
    ref = ObjectRef("cliques.dev/v1alpha1", "Clique", "ns", "p", "uid")
    with pytest.raises(ExecutionError) as err:
        asyncio.run(executor.execute(plan, ref))
    assert (err.value.reason, err.value.first, err.value.detail) == (
        reason,
        refused,
        "exceeded quota",
    )
    assert err.value.reportable


class Holding:
    """A client whose creates answer AlreadyExists because `held` holds every name."""

    def __init__(self, held: dict[str, Any], owner_uid: str = "uid") -> None:
        self.held = held
        self.owner_uid = owner_uid  # the UID of the owner the API server holds by its name
        self.patches: list[Any] = []
        self.deletes: list[tuple[str, str | None]] = []

    async def create(self, *a: Any, **kw: Any) -> Any:
        raise errors.from_response(
            409, msgspec.json.encode({"reason": "AlreadyExists", "message": "exists"})
        )

    async def get(self, resource: Any, ns: str, name: str, type_: type[Any]) -> Any:
        if resource.kind == OURS["kind"] and name == OURS["name"]:  # the owner, alive
            return msgspec.convert({"metadata": {"name": name, "uid": self.owner_uid}}, type_)
        return msgspec.convert(self.held, type_)

    async def delete(self, resource: Any, ns: str, name: str, *, uid: str | None = None) -> None:
        self.deletes.append((name, uid))

    async def patch(self, resource: Any, ns: str, name: str, patch: Any, *a: Any) -> Any:
        self.patches.append(patch)


OURS = {"apiVersion": "cliques.dev/v1alpha1", "kind": "Clique", "name": "c", "uid": "uid"}
WANT = {
    "metadata": {
        "labels": {"cliques.dev/clique": "worker", "cliques.dev/pod-index": "0"},
        "ownerReferences": [{**OURS, "controller": True, "blockOwnerDeletion": True}],
    }
}


@pytest.mark.parametrize(
    ("meta", "outcome"),
    [
        ({"ownerReferences": [{**OURS, "controller": True}]}, "ours"),
        ({"labels": WANT["metadata"]["labels"], "resourceVersion": "7"}, "adopted"),
        (
            {"labels": {"cliques.dev/clique": "worker", "cliques.dev/pod-index": "1"}},
            "NameConflict",
        ),
        ({"labels": {}}, "NameConflict"),
        (
            {
                "labels": WANT["metadata"]["labels"],
                "ownerReferences": [{**OURS, "uid": "other", "controller": True}],
            },
            "FailedCreate",
        ),
        ({"labels": {}, "deletionTimestamp": NOW}, "FailedCreate"),
    ],
    ids=["ours", "orphan", "other-index", "foreign", "predecessor", "orphan-deleting"],
)
def test_a_taken_name_is_ours_adopted_or_a_conflict(meta: dict[str, Any], outcome: str) -> None:
    client = Holding({"metadata": {"name": "c-0", **meta}})
    executor = Executor(client, Expectations("test"), None)  # type: ignore[arg-type]
    ref = ObjectRef("cliques.dev/v1alpha1", "Clique", "ns", "c", "uid")
    plan = Plan(creates=[Create(PODS, "c-0", WANT, "uid")])
    if outcome in ("ours", "adopted"):
        asyncio.run(executor.execute(plan, ref))
        assert len(client.patches) == (outcome == "adopted")
        if client.patches:
            patch = client.patches[0]["metadata"]
            assert patch["resourceVersion"] == "7"
            assert patch["ownerReferences"] == WANT["metadata"]["ownerReferences"]
        return
    with pytest.raises(ExecutionError) as err:
        asyncio.run(executor.execute(plan, ref))
    assert err.value.reason == outcome
    assert err.value.reportable == (outcome == "NameConflict")
    assert not client.patches


PREDECESSOR = {
    "uid": "pod-of-old",
    "labels": WANT["metadata"]["labels"],
    "ownerReferences": [{**OURS, "uid": "old", "controller": True}],
}


def test_a_pod_of_another_owner_of_the_same_name_is_waited_for_not_deleted() -> None:
    """A Clique deleted and made again: its predecessor's pod holds the name until the
    garbage collector deletes it, or orphans it (the Clique deleted with the Orphan
    policy) to be adopted. Not a name conflict, and not the operator's to delete while
    that predecessor still exists (being deleted, or this view is the stale one): the
    create is retried."""
    client = Holding({"metadata": {"name": "c-0", **PREDECESSOR}}, owner_uid="old")
    executor = Executor(client, Expectations("test"), None)  # type: ignore[arg-type]
    ref = ObjectRef("cliques.dev/v1alpha1", "Clique", "ns", "c", "uid")
    plan = Plan(creates=[Create(PODS, "c-0", WANT, "uid")])
    with pytest.raises(ExecutionError) as err:
        asyncio.run(executor.execute(plan, ref))
    assert err.value.reason == "FailedCreate" and not err.value.reportable
    assert isinstance(err.value.first, NameInTransition)
    assert client.deletes == [] and client.patches == []


@pytest.mark.parametrize("terminating", [False, True])
def test_a_pod_whose_owner_is_gone_for_good_is_collected_then_waited_for(
    terminating: bool,
) -> None:
    """Its owner's name now holds another UID (ours): the predecessor is gone for good,
    and a dependent still naming it is one the garbage collector would delete (an owner
    deleted with Orphan outlives its dependents' orphaning). The operator deletes it, UID
    precondition, once, as the collector may have missed it; then waits for it to go."""
    held = {**PREDECESSOR} | ({"deletionTimestamp": NOW} if terminating else {})
    client = Holding({"metadata": {"name": "c-0", **held}}, owner_uid="uid")
    executor = Executor(client, Expectations("test"), None)  # type: ignore[arg-type]
    ref = ObjectRef("cliques.dev/v1alpha1", "Clique", "ns", "c", "uid")
    plan = Plan(creates=[Create(PODS, "c-0", WANT, "uid")])
    with pytest.raises(ExecutionError) as err:
        asyncio.run(executor.execute(plan, ref))
    assert isinstance(err.value.first, NameInTransition) and not err.value.reportable
    assert client.deletes == ([] if terminating else [("c-0", "pod-of-old")])
    assert client.patches == []


class Vanishing:
    """A client whose name is held by a foreign object that is deleted between the 409 and
    the read of it, `times` times (then the create goes through)."""

    def __init__(self, times: int) -> None:
        self.times = times
        self.creates = 0

    async def create(self, *a: Any, **kw: Any) -> Any:
        self.creates += 1
        if self.creates <= self.times:
            raise errors.from_response(
                409, msgspec.json.encode({"reason": "AlreadyExists", "message": "exists"})
            )

    async def get(self, *a: Any, **kw: Any) -> Any:
        raise errors.from_response(404, msgspec.json.encode({"reason": "NotFound"}))


def test_a_name_freed_between_the_conflict_and_the_read_is_created_at_once() -> None:
    """The holder (a foreign Service, say) is outside the operator's watches: its deletion
    brings no event, so the create is sent again in the same reconcile, not left to one
    that never comes."""
    client = Vanishing(times=1)
    expectations = Expectations("test")
    executor = Executor(client, expectations, None)  # type: ignore[arg-type]
    ref = ObjectRef("cliques.dev/v1alpha1", "Clique", "ns", "c", "uid")
    asyncio.run(executor.execute(Plan(creates=[Create(PODS, "c-0", WANT, "uid")]), ref))
    assert client.creates == 2
    assert not expectations.satisfied("uid")  # the second create awaits its watch event


def test_a_name_that_keeps_changing_hands_is_retried_with_backoff() -> None:
    client = Vanishing(times=10)
    expectations = Expectations("test")
    executor = Executor(client, expectations, None)  # type: ignore[arg-type]
    ref = ObjectRef("cliques.dev/v1alpha1", "Clique", "ns", "c", "uid")
    with pytest.raises(ExecutionError) as err:
        asyncio.run(executor.execute(Plan(creates=[Create(PODS, "c-0", WANT, "uid")]), ref))
    assert isinstance(err.value.first, NameInTransition) and not err.value.reportable
    assert client.creates == 3
    assert expectations.satisfied("uid")  # nothing is left awaited


class RefusingPatches:
    """A client that answers every patch with `error` and records the creates it takes."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.created: list[str] = []

    async def create(self, resource: Any, ns: str, body: Any, *a: Any) -> Any:
        self.created.append(body["metadata"]["name"])

    async def patch(self, *a: Any, **kw: Any) -> Any:
        raise self.error


@pytest.mark.parametrize(
    ("error", "created"),
    [
        (api_error(422, "Pod QOS Class may not change"), ["c-1"]),  # refused: holds itself
        (api_error(403, "denied by policy"), ["c-1"]),
        (api_error(409), []),  # a stale cache: everything waits for the retry
        (api_error(500), []),
        (TimeoutError("no answer"), []),
    ],
    ids=["invalid", "forbidden", "conflict", "server-error", "timeout"],
)
def test_a_refused_patch_holds_only_itself(error: BaseException, created: list[str]) -> None:
    client = RefusingPatches(error)
    expectations = Expectations("test")
    executor = Executor(client, expectations, None)  # type: ignore[arg-type]
    ref = ObjectRef("cliques.dev/v1alpha1", "Clique", "ns", "c", "uid")
    body = {"metadata": {"name": "c-1"}}
    plan = Plan(
        patches=[Patch(PODS, "c-0", [], patch_type="json", sub="resize")],
        creates=[Create(PODS, "c-1", body, "uid")],
    )
    with pytest.raises(Exception) as err:
        asyncio.run(executor.execute(plan, ref))
    assert client.created == created
    if isinstance(err.value, ExecutionError):
        assert err.value.reason == "FailedUpdate" and err.value.first is error
    # a create not sent is not expected; one sent waits for its watch event
    assert expectations.satisfied("uid") is (not created)
