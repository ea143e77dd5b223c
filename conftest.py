"""The test fixtures shared by both distributions' tests (tests/ and lab/tests/).

The local control plane (`kube_cluster`, `kubeconfig`, `namespace`, `helm`, the add-on
builds) is a plugin module, tests/support/cluster_fixtures.py, loaded here, at the root, so
that `pytest tests lab/tests` (or either alone) gets it once. It imports cliques-lab's dev
cluster only inside the fixtures and hooks that start or build one: the product's unit tests
(tests/unit) run without cliques-lab installed.

tests/support/asyncio_leaks.py fails a test that leaves an asyncio task running on the
session's event loop; tests/support/env_leaks.py one that leaves the process environment or
working directory changed.
"""

pytest_plugins = [
    "tests.support.cluster_fixtures",
    "tests.support.asyncio_leaks",
    "tests.support.env_leaks",
]
