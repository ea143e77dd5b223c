"""The controllers: CliqueSet → Cliques (+ gang Services), Clique → Pods.

Each controller is split the same way: a pure planner (`*_planner`) turns a cache snapshot
and the spec into a `Plan` (actions + the status to report) and is unit-tested with tables;
the `executor` is the only code that writes to the API server; the `*_controller` modules
glue snapshot → plan → `plan_runner` (execute, report refused writes, write the status) for
one work-queue key. The CliqueSet planner leaves the rollout (`cliqueset_rollout`) and the
status (`cliqueset_status`) to modules of their own; `builders` builds every body either
controller creates. Layer: imports `cliques.kube` and `cliques.api`, never
`cliques.operator`.
"""
