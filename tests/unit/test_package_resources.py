"""The installed package reads no file of the source checkout.

The CRDs and the examples are package data (`cliques.data`, read through
`importlib.resources`); `deploy/crds/` and `deploy/examples/` are copies of those files and
must stay byte-identical. No module finds files by climbing out of the package from its own
`__file__` (`parents[3] / "deploy"`): in a wheel installed in site-packages there is nothing
above it. (The same of cliques-lab, `cliques demo` and `cliques bench` outside a checkout:
lab/tests/unit/test_lab_package_resources.py.)
"""

from __future__ import annotations

import ast
from importlib import resources
from pathlib import Path

import pytest
import yaml

from cliques import data
from tests.support.checkout_paths import CLIMBING, checkout_paths, climbing_out

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "cliques"
# (package data directory, a copy of it in the source tree)
COPIES = [
    (data.CRDS, ROOT / "deploy" / "crds"),
    (data.CRDS, ROOT / "deploy" / "helm" / "cliques" / "crds"),
    (data.EXAMPLES, ROOT / "deploy" / "examples"),
]


# -- the resources ------------------------------------------------------------------------


def test_the_crds_load_through_importlib_resources() -> None:
    crds = resources.files("cliques.data").joinpath("crds")
    names = sorted(p.name for p in crds.iterdir() if p.name.endswith(".yaml"))
    assert names == sorted(data.CRD_FILES)
    for name in data.CRD_FILES:
        crd = yaml.safe_load(data.read(data.CRDS, name))
        assert crd["kind"] == "CustomResourceDefinition"
        assert crd["metadata"]["name"] == name.removesuffix(".yaml")


def test_the_default_example_is_a_cliqueset() -> None:
    docs = list(yaml.safe_load_all(data.read(data.EXAMPLES, data.DEFAULT_EXAMPLE)))
    assert [d["kind"] for d in docs if d] == ["CliqueSet"]


def test_as_path_gives_files_kubectl_can_read() -> None:
    with data.as_path(data.CRDS) as crds:
        assert sorted(p.name for p in crds.glob("*.yaml")) == sorted(data.CRD_FILES)
    with data.as_path(data.EXAMPLES, data.DEFAULT_EXAMPLE) as example:
        assert example.is_file()


@pytest.mark.parametrize(
    ("directory", "copy"), COPIES, ids=[str(c.relative_to(ROOT)) for _, c in COPIES]
)
def test_the_deploy_copies_are_identical(directory: str, copy: Path) -> None:
    packaged = {
        p.name: p.read_bytes()
        for p in PACKAGE.joinpath("data", directory).iterdir()
        if p.suffix == ".yaml"
    }
    copied = {p.name: p.read_bytes() for p in copy.glob("*.yaml")}
    assert packaged, directory
    where = copy.relative_to(ROOT)
    fix = (
        "make crds"
        if directory == data.CRDS
        else f"cp python/cliques/data/{directory}/*.yaml {where}/"
    )
    assert copied == packaged, (
        f"python/cliques/data/{directory}/ and {where}/ must be the same files: {fix}"
    )


# -- no module reads the checkout -----------------------------------------------------------


def test_no_module_climbs_out_of_the_package() -> None:
    assert climbing_out(PACKAGE) == []


def test_the_check_catches_the_old_way() -> None:
    old = 'REPO = Path(__file__).resolve().parents[3]\ncrds = REPO / "deploy" / "crds"\n'
    assert CLIMBING.search(old)
    assert checkout_paths(ast.parse(old)) == ["line 2: 'deploy'"]


def test_the_packaged_alerts_are_the_charts() -> None:
    """The dev cluster's Prometheus loads the alert rules the chart ships, from the package
    (a wheel has no chart): `cp deploy/helm/cliques/files/alerts.yaml
    python/cliques/data/monitoring/` after a change of the chart's."""
    chart = ROOT / "deploy" / "helm" / "cliques" / "files" / data.ALERTS
    packaged = data.read(data.MONITORING, data.ALERTS)
    assert packaged == chart.read_text(encoding="utf-8")
