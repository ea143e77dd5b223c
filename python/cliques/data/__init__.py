"""The manifests that ship inside the package: the three CRDs, the example CliqueSets and
the Prometheus alert rules of the Helm chart.

`cliques demo` and `cliques bench scale` (cliques-lab's commands) install the CRDs and apply
an example on a cluster; they read them from here, through `importlib.resources`, so an
installed wheel needs no source checkout::

    from cliques import data

    with data.as_path(data.CRDS) as crds:     # a directory kubectl can apply
        session.install_crds(env, crds)
    text = data.read(data.EXAMPLES, "llama.yaml")

The files in `crds/` are generated from the API types (`cliques.api.crdgen`, `make crds`),
like their copies `deploy/crds/` and `deploy/helm/cliques/crds/`. `monitoring/alerts.yaml`
is a copy of the chart's `files/alerts.yaml` (the dev cluster's Prometheus loads it). The
files in
`examples/` are the canonical copies; `deploy/examples/` in the source tree (what
`kubectl apply -k deploy/` installs) is a copy of them. `tests/unit/test_package_resources.py`
keeps every copy byte-identical.
This module imports nothing from the rest of `cliques`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

CRDS = "crds"
EXAMPLES = "examples"
MONITORING = "monitoring"
ALERTS = "alerts.yaml"
CRD_FILES = (
    "cliquesets.cliques.dev.yaml",
    "cliques.cliques.dev.yaml",
    "cliquescalinggroups.cliques.dev.yaml",
)
DEFAULT_EXAMPLE = "llama.yaml"


def files(directory: str) -> Traversable:
    """The packaged directory `crds`, `examples` or `monitoring`."""
    return resources.files(__name__).joinpath(directory)


def read(directory: str, name: str) -> str:
    """The text of one packaged manifest (`read(CRDS, "cliques.cliques.dev.yaml")`)."""
    return files(directory).joinpath(name).read_text(encoding="utf-8")


@contextlib.contextmanager
def as_path(directory: str, name: str | None = None) -> Iterator[Path]:
    """A file-system path to a packaged directory or file, for tools such as kubectl that
    read files. Installed wheels are unpacked, so this is the file in site-packages."""
    target = files(directory) if name is None else files(directory).joinpath(name)
    with resources.as_file(target) as path:
        yield path
