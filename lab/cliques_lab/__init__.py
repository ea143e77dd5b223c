"""cliques_lab: the tools around the cliques operator, in a distribution of their own.

`cliques_lab.devcluster` (a local Kubernetes control plane built from Go modules, with its
add-ons), `cliques_lab.bench` (the benchmarks, the chaos harness and the peers they compare
against) and `cliques_lab.cli` (the `cliques dev-cluster`, `cliques demo` and `cliques bench`
commands, registered with the `cliques` command through the `cliques.commands` entry points).
The lab imports `cliques`; nothing in `cliques` imports the lab.
"""
