"""What a controller declares and is handed, so that a process can run it without knowing it.

A controller class declares its `NAME` (its work queue, its expectations and its
runner), its `WATCHES` (`kube.watches.Watch`: the informers it needs, their resources,
selection and indexes) and builds itself with `wired` from the informers of its watches,
by name (a watch the cluster does not serve is left out), and the process's `Wiring`.
Its fairness group is its work queue's (`WorkQueue.group`), set where it is defined.
The time a controller stamps (the `now` of its planners' snapshots) is the `Wiring`'s
`clock`: the wall clock in a process, the simulated one in the gang simulator (tests/sim).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from cliques.api.meta import format_now
from cliques.controllers.base.executor import Executor
from cliques.controllers.base.revision import Hasher
from cliques.kube.expectations import Expectations
from cliques.kube.gangapi import GangAPI
from cliques.kube.runner import Result
from cliques.kube.watches import Watch
from cliques.kube.workqueue import WorkQueue

#: The current time as a status stamps it (a `metav1.Time`, whole seconds).
Clock = Callable[[], str]


@dataclass(frozen=True)
class Wiring:
    """What every controller of a process is handed besides its informers."""

    #: writes for this controller (its own, with its expectations)
    executor: Executor
    expectations: Expectations
    hasher: Hasher
    #: whether this process handles the CliqueSet (namespace, name)
    owns: Callable[[str, str], bool]
    #: what the cluster serves for gang scheduling
    gang_api: GangAPI
    #: longest a progress-only status is held back, s
    status_hold: float
    #: the image of the start gate's init container (`start_gate`)
    gate_image: str
    #: the pods of a gang restart prefer the nodes it ran on (`same_nodes`)
    same_nodes: bool = True
    #: the current time, for what the controllers stamp (their planners' `now`)
    clock: Clock = format_now


class Controller(Protocol):
    """A controller as a process runs it: its queue, fed by its informers' handlers, and
    its reconcile of one key."""

    NAME: ClassVar[str]
    WATCHES: ClassVar[tuple[Watch, ...]]
    queue: WorkQueue

    async def reconcile(self, key: str) -> Result: ...


class ControllerClass(Protocol):
    """A controller class: what it declares, and how it is built."""

    NAME: str
    WATCHES: tuple[Watch, ...]

    def wired(self, informers: Mapping[str, Any], wiring: Wiring) -> Controller: ...
