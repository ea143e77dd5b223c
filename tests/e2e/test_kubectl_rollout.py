"""`kubectl cliques rollout history|undo` against the real control plane, run as a user
runs it (a process of its own, `-n` and `--kubeconfig`): after an image change the history
lists revisions 1 and 2 with the second current, and `diff --revision 1` names the image
that changed; `undo` brings every pod back to the old
image and the history then says revision 3 is current; an undo to a revision that does not
exist is one line and exit 4; an undo to the current one is skipped (exit 0)."""

from __future__ import annotations

import json

import pytest

from cliques.kubectl import exits
from cliques.kubectl.render import WIDTH
from tests.e2e.test_kubectl_status import plugin
from tests.support.harness import Cluster, cliqueset, running_operator, wait_for

pytestmark = pytest.mark.cluster


async def test_history_lists_the_revisions_and_undo_brings_the_old_image_back(
    cluster: Cluster, crds: str
) -> None:
    ns = cluster.namespace

    async def run(*args: str) -> tuple[int, str, str]:
        return await plugin(*args, kubeconfig=crds, namespace=ns)

    async def main_images() -> set[str]:
        return {
            c.image
            for p in await cluster.pods()
            if p.metadata.deletion_timestamp is None
            for c in p.spec.containers
            if c.name == "main"
        }

    async with running_operator(crds, ns):
        await cluster.apply(cliqueset("roll", replicas=2, workers=1))
        await cluster.wait_available("roll")
        await cluster.apply(cliqueset("roll", replicas=2, workers=1, image="busybox:1.37"))
        await cluster.wait_available("roll", timeout=120)

        async def two_revisions() -> dict[str, object] | None:
            code, out, _ = await run("rollout", "history", "roll", "-o", "json")
            doc = json.loads(out) if code == 0 else {}
            revs = doc.get("revisions", [])
            return doc if [r["revision"] for r in revs] == [1, 2] else None

        doc = await wait_for(two_revisions, timeout=60, what="revisions 1 and 2 recorded")
        revs = doc["revisions"]
        assert [r["current"] for r in revs] == [False, True], revs  # type: ignore[index]
        assert revs[0]["images"]["worker"][0] == "busybox:1.36"  # type: ignore[index]
        assert revs[1]["images"]["worker"][0] == "busybox:1.37"  # type: ignore[index]
        code, out, err = await run("rollout", "history", "roll")
        assert code == exits.OK, err
        lines = out.splitlines()
        assert lines[0] == "CliqueSet roll" and all(len(line) <= WIDTH for line in lines)
        assert any(line.startswith("2 ") and "*" in line for line in lines), out

        code, out, err = await run("diff", "roll", "--revision", "1")
        assert code == exits.DIFFERENT, (code, out, err)
        assert "busybox:1.36" in out and "busybox:1.37" in out, out

        code, out, err = await run("rollout", "undo", "roll", "--to-revision", "7")
        assert code == exits.NOT_FOUND and out == "", (code, out, err)
        assert len(err.strip().splitlines()) == 1 and "no revision 7" in err, err
        assert "revisions: 1, 2" in err, err

        code, out, err = await run("rollout", "undo", "roll", "--to-revision", "2")
        assert code == exits.OK and "skipped rollback" in out, (code, out, err)

        code, out, err = await run("rollout", "undo", "roll")
        assert code == exits.OK, err
        assert out.strip() == "cliqueset.cliques.dev/roll rolled back to revision 1", out

        async def back() -> bool:
            cqs = await cluster.cliqueset("roll")
            st = cqs.status
            done = st is not None and st.observed_generation == cqs.metadata.generation
            return done and await main_images() == {"busybox:1.36"}

        await wait_for(back, timeout=120, what="every pod back on busybox:1.36")
        await cluster.wait_available("roll", timeout=120)

        async def renumbered() -> dict[str, object] | None:
            code, out, _ = await run("rollout", "history", "roll", "-o", "json")
            revs = json.loads(out)["revisions"] if code == 0 else []
            now = [(r["revision"], r["current"]) for r in revs]
            return {"now": now} if now == [(2, False), (3, True)] else None

        await wait_for(renumbered, timeout=60, what="revision 1 renumbered 3 and current")


async def test_restart_replaces_every_pod_through_a_surge_gang(cluster: Cluster, crds: str) -> None:
    # `rollout restart` on a set with maxUnavailable 0 and maxSurge 1: every pod of gangs
    # 0-3 is made again (new UIDs, stamped with restartedAt), through surge gang 4, and the
    # whole gangs never fall below 4.
    from cliques.api import labels
    from cliques.rollout import restart
    from tests.support.harness import PodTracker

    ns = cluster.namespace
    body = cliqueset("again", replicas=4, workers=1, max_unavailable=0)
    body["spec"]["updateStrategy"]["maxSurge"] = 1
    async with running_operator(crds, ns):
        await cluster.apply(body)
        await cluster.wait_available("again")
        before = {p.metadata.name: p.metadata.uid for p in await cluster.pods()}
        assert len(before) == 8
        async with PodTracker(cluster.client, ns, pods_per_gang=2) as tracker:
            tracker.start_counting()
            code, out, err = await plugin(
                "rollout", "restart", "again", kubeconfig=crds, namespace=ns
            )
            assert code == exits.OK, err
            assert out.strip() == "cliqueset.cliques.dev/again restarted"

            async def replaced() -> bool:
                cqs = await cluster.cliqueset("again")
                st = cqs.status
                live = {
                    p.metadata.name: p
                    for p in await cluster.pods()
                    if p.metadata.deletion_timestamp is None
                }
                return (
                    st is not None
                    and st.observed_generation == cqs.metadata.generation
                    and st.available_replicas == 4
                    and st.updated_replicas == 4
                    and st.surge_replicas == 0
                    and sorted(live) == sorted(before)
                    and all(
                        p.is_ready
                        and p.metadata.uid != before[n]
                        and restart.RESTARTED_AT in p.metadata.annotations
                        for n, p in live.items()
                    )
                )

            await wait_for(replaced, timeout=180, what="every pod made again")
        surged = [n for n in tracker.added if n.startswith("again-4-")]
        gangs = {p.metadata.labels[labels.LABEL_GANG_INDEX] for p in await cluster.pods()}
    assert tracker.min_whole is not None and tracker.min_whole >= 4, tracker.min_whole
    assert surged, tracker.added
    assert gangs == {"0", "1", "2", "3"}
    code, _, err = await plugin("rollout", "restart", "absent", kubeconfig=crds, namespace=ns)
    assert code == exits.NOT_FOUND and "not found" in err, err
