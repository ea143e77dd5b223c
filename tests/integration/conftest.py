"""Integration tests: everything here runs against the real local control plane.

The fixtures (`kube_cluster`, `kubeconfig`, `namespace`) live in tests/conftest.py; this file
marks every test of this directory `cluster`, so `-m "not cluster"` leaves them out and
`-m cluster` selects them, and holds the operator tests' `crds` and `cluster` fixtures.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.cluster)


# -- shared by the operator tests ------------------------------------------------------------


@pytest.fixture(scope="session")
def crds(kubeconfig: str) -> str:
    """The CliqueSet and Clique CRDs, installed and Established; yields the kubeconfig."""
    from .operator_support import install_crds

    install_crds(str(kubeconfig))
    return str(kubeconfig)


@pytest.fixture
async def cluster(crds: str, namespace: str) -> AsyncIterator[Any]:
    """Typed reads and writes of the test's namespace through a real cliques client."""
    from cliques.kube.client import KubeClient

    from .operator_support import Cluster

    client = await KubeClient.connect(crds, qps=0, field_manager="cliques-tests")
    try:
        yield Cluster(client, namespace)
    finally:
        await client.close()
