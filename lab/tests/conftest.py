"""cliques-lab's tests: the dev cluster, the demo, the benchmarks and the chaos harness.

unit/ needs no cluster; integration/ and e2e/ run against the real local control plane, with
the fixtures the product's tests use (`kube_cluster`, `kubeconfig`, `namespace`, `helm` from
tests/support/cluster_fixtures.py, loaded by the root conftest.py; `crds` and `cluster` from
tests/support/fixtures.py). This file marks every test of those two directories `cluster`,
so `-m "not cluster"` leaves them out and `-m cluster` selects them.

The directories are not packages (a `tests` package here would clash with the repository's
own): pytest imports each test module by its file name, so names are unique across lab/tests
and a module's helpers are imported by that name (`from test_devcluster_cluster import ...`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.fixtures import cluster, crds, mark_cluster

__all__ = ["cluster", "crds"]

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_cluster(items, _HERE / "integration")
    mark_cluster(items, _HERE / "e2e")
