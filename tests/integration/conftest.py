"""Integration tests: everything here runs against the real local control plane.

The fixtures (`kube_cluster`, `kubeconfig`, `namespace`) live in tests/conftest.py; this file
only marks every test of this directory `cluster`, so `-m "not cluster"` leaves them out
and `-m cluster` selects them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.cluster)
