"""Benchmarks behind `cliques bench` (`cliques_lab.cli.bench_cmd`), one module each.

`hashbench`: the canonical template hash against pure Python and Kubernetes' Go
`DeepHashObject`, and `Selector.filter` against a Python loop. Benchmarks need a source
checkout (fixtures live in bench/, results are written to bench/results/) and are never
part of the normal test run.
"""
