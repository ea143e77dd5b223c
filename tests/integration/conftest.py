"""Integration tests: the tools (client, informers, CRDs, dev cluster, benchmark peers and
floors) against the real local control plane. Tests that start the operator are in
tests/e2e.

The fixtures (`kube_cluster`, `kubeconfig`, `namespace`) live in
tests/support/cluster_fixtures.py (loaded by the root conftest.py), `crds` and `cluster` in
tests/support/fixtures.py; this file marks every test of this directory
`cluster`, so `-m "not cluster"` leaves them out and `-m cluster` selects them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fixtures import cluster, crds, mark_cluster

__all__ = ["cluster", "crds"]

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_cluster(items, _HERE)
