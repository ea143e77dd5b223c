from tests.sim.scenarios import Scenario, Policy, Latency, Event
from tests.unit.test_gang_sim import run_scenario
s = Scenario(gangs=3, roles=(('leader', 1), ('worker', 3)), startup='InOrder', strategy='RollingUpdate',
 max_unavailable=1, max_surge=2, policy=Policy(restart_policy='RecreateGang', breach=0, max_restarts=4, initial=0, max_backoff=0),
 nodes=(5, 5, 3), used=(), latency=Latency('fixed', 1), grace=0, gang_scheduling=True, template_labels=(), template_annotations=(),
 events=(Event(at=181, kind='crash', target=0, value=299), Event(at=449, kind='image', target='*', value=0),
 Event(at=745, kind='node-loss', target=0, value=1), Event(at=903, kind='node-loss', target=0, value=4),
 Event(at=1205, kind='node-loss', target=0, value=1), Event(at=1509, kind='max-unavailable', target=0, value=0),
 Event(at=1510, kind='operator-restart', target=0, value=0)), interleave=False, lag=False, settle=1200, seed=0)
try:
    run_scenario(s)
    print("PASS")
except Exception as e:
    print("FAIL", str(e)[:600])
