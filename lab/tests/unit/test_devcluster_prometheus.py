"""The `prometheus` add-on as data: its Go module (the newest release the proxy served when
pinned, built without the cloud service discoveries), the version its binary reports, its
configuration and command line, and the rule file the chart's alerts become."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from cliques_lab.devcluster import addons, addons_up, cluster, gomodules, processes, prometheus


def test_the_module_pins_prometheus_3_16_without_cloud_discovery() -> None:
    module = gomodules.PROMETHEUS
    assert module.version() == "v0.316.0"
    assert module.binaries() == {"prometheus": "github.com/prometheus/prometheus/cmd/prometheus"}
    assert module.tags == ("remove_all_sd",)
    flags = gomodules.ldflags_for(module, "v0.316.0").split()
    assert "github.com/prometheus/common/version.Version=3.16.0" in flags
    # the build checks that `prometheus --version` names the module version
    assert "github.com/prometheus/common/version.Revision=module-v0.316.0" in flags
    untagged = gomodules.GoModule(key=module.key, version_module=module.version_module)
    assert module.fingerprint("x") != untagged.fingerprint("x")
    assert addons.ADDONS["prometheus"].module is module
    assert not addons.ADDONS["prometheus"].by_kwokctl  # it can join an existing cluster
    assert addons.plan(["kueue"], ["prometheus"]).add == ("prometheus",)


@pytest.mark.parametrize(
    ("module", "release"),
    [("v0.316.0", "3.16.0"), ("v0.303.1", "3.3.1"), ("v0.400.2", "4.0.2")],
)
def test_a_module_version_is_a_release(module: str, release: str) -> None:
    assert gomodules.prometheus_release(module) == release


def test_a_version_that_is_not_a_module_version_is_refused() -> None:
    with pytest.raises(ValueError, match="not a Prometheus module version"):
        gomodules.prometheus_release("v3.16.0")


def test_the_configuration_scrapes_the_targets_file_and_loads_the_rules(tmp_path: Path) -> None:
    cfg = prometheus.config(tmp_path / "t.json", [tmp_path / "a.yaml"], scrape_seconds=0.5)
    assert cfg["global"]["scrape_interval"] == "500ms"
    assert cfg["global"]["evaluation_interval"] == "500ms"
    assert cfg["rule_files"] == [str(tmp_path / "a.yaml")]
    (job,) = cfg["scrape_configs"]
    assert job["file_sd_configs"][0]["files"] == [str(tmp_path / "t.json")]
    assert yaml.safe_load(prometheus.config_text(cfg)) == cfg
    targets = json.loads(prometheus.targets_text(["127.0.0.1:8080"]))
    assert targets[0]["targets"] == ["127.0.0.1:8080"]
    argv = prometheus.argv(Path("/bin/p"), Path("/c.yml"), Path("/d"), 9999)
    assert "--web.listen-address=127.0.0.1:9999" in argv


def test_the_chart_alerts_are_a_rule_file_whose_waits_a_test_can_shorten() -> None:
    source = prometheus.alerts_file()
    assert source is not None and source.name == "alerts.yaml"
    text = prometheus.rules_with_for(source.read_text(), {"CliquesGangNotWhole": "5s"})
    rules = {r["alert"]: r for g in yaml.safe_load(text)["groups"] for r in g["rules"]}
    assert rules["CliquesGangNotWhole"]["for"] == "5s"
    assert rules["CliquesGangRestartsExhausted"]["for"] == "1m"
    with pytest.raises(ValueError, match="no such alert: Nope"):
        prometheus.rules_with_for(source.read_text(), {"Nope": "1s"})


def test_the_process_is_known_as_the_clusters(tmp_path: Path) -> None:
    """`status` and `down` find the add-on's process by its pid and its command line."""
    paths = cluster.ClusterPaths(root=tmp_path, name="mon")
    argv = addons_up.prometheus_command(paths, Path("/b/prometheus"), Path("/c.yml"), 9090)
    proc = processes.Proc(pid=1, stat="S", rss_kib=1, args=" ".join(argv))
    assert cluster._is_ours(proc, paths, "prometheus")
    other = cluster.ClusterPaths(root=tmp_path, name="other")
    assert not cluster._is_ours(proc, other, "prometheus")
