"""The lab's sub-commands of `cliques`: `dev-cluster`, `demo` and `bench`.

Each module exposes `register(subparsers)`, named by an entry point of the `cliques.commands`
group in lab/pyproject.toml; `cliques.cli.build_parser` calls it for every installed entry
point.
"""
