"""A simulator that runs the operator's real controllers and planners against a simulated
cluster on a simulated clock, checking the gang invariants after every step.

- `cluster`: the API server (objects as JSON, creates, graceful deletes, merge and JSON
  patches, the status subresource, resourceVersions, generations, a watch stream, garbage
  collection), nodes with a pod capacity, the scheduler and the kubelets;
- `groups`: the scheduling.k8s.io objects (Workloads, PodGroups, CompositePodGroups) as the
  real API server validates them, per version;
- `operator`: the real `CliqueSetController` and `CliqueController` wired to simulated
  informers, work queues and an API client, reconciling until quiescent at each instant;
- `invariants`: the ground-truth bookkeeping of gangs and the invariants (I1-I10);
- `scenarios`: scenario descriptions, the regression scenarios and hypothesis strategies;
- `simulation`: the run loop (world events, operator, invariants) and its summary;
- `python -m tests.sim`: long randomized runs (docs/simulator.md).
"""

from tests.sim.invariants import InvariantViolation
from tests.sim.scenarios import Event, Latency, Policy, Scenario
from tests.sim.simulation import Outcome, Simulation, run_scenario

__all__ = [
    "Event",
    "InvariantViolation",
    "Latency",
    "Outcome",
    "Policy",
    "Scenario",
    "Simulation",
    "run_scenario",
]
