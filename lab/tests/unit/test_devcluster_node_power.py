"""The patch that powers a KWOK node off: another holder, a day long, renewed now."""

from __future__ import annotations

from datetime import UTC, datetime

from cliques_lab.devcluster import node_power


def test_power_off_patch_takes_the_lease_for_a_day() -> None:
    at = datetime(2026, 11, 28, 14, 30, 1, 250000, tzinfo=UTC)
    spec = node_power.power_off_patch(at)["spec"]
    assert spec["holderIdentity"] == node_power.POWERED_OFF_HOLDER
    assert spec["leaseDurationSeconds"] >= 3600
    # a MicroTime, as the API server wants for renewTime
    assert spec["renewTime"] == "2026-11-28T14:30:01.250000Z"
