"""Benchmarks behind `cliques bench` (python/cliques/cli/bench_cmd.py), one module each.

`hashbench`: the canonical template hash against pure Python and Kubernetes' Go
`DeepHashObject`, and `Selector.filter` against a Python loop. Benchmarks need a source
checkout (fixtures live in bench/, results are written to bench/results/) and are never
part of the normal test run.
"""
