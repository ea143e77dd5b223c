"""The controllers: CliqueSet → Cliques (+ gang Services), Clique → Pods.

Four packages, layered: `base` (the plan's actions, conditions, the executor: the only
code that writes to the API server, the plan runner, what a controller is wired with,
template hashes, the bodies every part shares), below `features` (the gang features, each
pure: gang scheduling, placement, claims, Kueue, scaling groups, in-place updates, DNS
layout, start gates, failure policy), below the two controllers, `cliqueset` and
`clique`. Each controller is split the same way: a pure planner turns a cache snapshot and
the spec into a `Plan` (actions + the status to report) and is unit-tested with tables;
its `controller` module glues snapshot → plan → `plan_runner` (execute, report refused
writes, write the status) for one work-queue key. Layer: imports `cliques.kube` and
`cliques.api`, never `cliques.operator`.
"""
