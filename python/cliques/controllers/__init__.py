"""The controllers: CliqueSet → Cliques (+ gang Services), Clique → Pods.

Each controller is split the same way: a pure planner (`*_planner`) turns a cache snapshot
and the spec into a `Plan` (actions + the status to report) and is unit-tested with tables;
the `executor` is the only code that writes to the API server; the `*_controller` modules
glue snapshot → plan → execute for one work-queue key. Layer: imports `cliques.kube` and
`cliques.api`, never `cliques.operator`.
"""
