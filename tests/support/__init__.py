"""Helpers shared by the integration and end-to-end tests (both run against the local
control plane): `kubectl` (kubectl as a user drives it), `harness` (an in-process operator,
a typed client of the test's namespace, waiting on conditions) and `fixtures` (the
`crds` and `cluster` fixtures, imported by the conftest of each tier)."""
