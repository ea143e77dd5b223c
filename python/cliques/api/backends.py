"""The gang-scheduling backends, as one type: what `spec.gangScheduling.backend` asks for
and the backend in effect for a CliqueSet (`controllers.workload.decide`).

`GangBackend` is a `StrEnum`: its members are the strings of the API (`"Auto"`,
`"Workload"`, `"None"`), so a spec's value compares equal to them and converts with
`GangBackend(value)`.
"""

from __future__ import annotations

import enum


class GangBackend(enum.StrEnum):
    #: `Workload` where the cluster serves a gang-scheduling API, else `None`
    AUTO = "Auto"
    #: through the scheduler's gang scheduling (a `scheduling.k8s.io` Workload or PodGroups)
    WORKLOAD = "Workload"
    #: pod by pod
    NONE = "None"
