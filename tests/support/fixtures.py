"""Fixtures shared by tests/integration and tests/e2e, imported by their conftest modules.

The session fixtures they build on (`kube_cluster`, `kubeconfig`, `namespace`) live in
tests/support/cluster_fixtures.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest


def mark_cluster(items: list[pytest.Item], directory: Path) -> None:
    """Mark every test under `directory` `cluster`: `-m "not cluster"` leaves them out."""
    for item in items:
        if directory in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(scope="session")
def crds(kubeconfig: str) -> str:
    """The CliqueSet and Clique CRDs, installed and Established; yields the kubeconfig."""
    from tests.support.harness import install_crds

    install_crds(str(kubeconfig))
    return str(kubeconfig)


@pytest.fixture
async def cluster(crds: str, namespace: str) -> AsyncIterator[Any]:
    """Typed reads of the test's namespace through the project's client, CliqueSet writes
    through kubernetes-asyncio (tests/support/harness.py)."""
    from tests.support.harness import connected

    async with connected(crds, namespace) as cluster:
        yield cluster
