# The one entry point: `make dev`, `make test`, `make lint`, `make demo`, `make bench`,
# `make image`, `make test-compat`, `make crds`.
# Every target installs what it needs into .venv (and Go builds into ~/.cache/cliques) and
# reuses what is already there.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMPS := $(VENV)/.stamps
RUST_SOURCES := $(shell find rust/core/src rust/py/src -name '*.rs' 2>/dev/null) \
                Cargo.toml rust/core/Cargo.toml rust/py/Cargo.toml
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: dev test lint fmt crds unit integration cargo-test test-compat test-monitoring demo bench image clean

dev: $(STAMPS)/lab

$(STAMPS)/venv:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "cliques needs Python 3.11+"'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	mkdir -p $(STAMPS) && touch $@

$(STAMPS)/deps: $(STAMPS)/venv pyproject.toml lab/pyproject.toml
	$(PY) scripts/install_deps.py
	touch $@

$(STAMPS)/ext: $(STAMPS)/deps $(RUST_SOURCES)
	$(VENV)/bin/maturin develop --release
	$(PY) -c 'import cliques._core'
	touch $@

# cliques-lab (lab/): the dev cluster, the demo and the benchmarks, which add `cliques
# dev-cluster`, `cliques demo` and `cliques bench`. Its dependencies came with the others
# (scripts/install_deps.py); cliques itself is the editable install above.
$(STAMPS)/lab: $(STAMPS)/ext lab/pyproject.toml
	$(PY) -m pip install --quiet --no-deps --editable lab
	$(VENV)/bin/cliques dev-cluster --help > /dev/null
	touch $@

lint: dev
	$(VENV)/bin/ruff check python lab tests bench scripts conftest.py
	$(VENV)/bin/ruff format --check python lab tests bench scripts conftest.py
	$(VENV)/bin/mypy
	$(PY) -m mypy.stubtest cliques._core
	$(PY) scripts/gen_schema_table.py --check-committed
	$(PY) scripts/gen_names_table.py --check-committed
	$(PY) scripts/import_graph.py --check
	$(PY) -m cliques.api.crdgen --check $(CRD_DIRS)
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --quiet -- -D warnings

# The CRDs are generated from the API types (python/cliques/api; docs/install.md): one
# generation, written to every directory that ships a copy. `make lint` fails when a
# committed copy differs.
CRD_DIRS := python/cliques/data/crds deploy/crds deploy/helm/cliques/crds

crds: dev
	$(PY) -m cliques.api.crdgen $(CRD_DIRS)

fmt: dev
	$(VENV)/bin/ruff format python lab tests bench scripts conftest.py
	$(VENV)/bin/ruff check --fix python lab tests bench scripts conftest.py
	cargo fmt --all

cargo-test:
	cargo test --workspace --quiet

# Each distribution has its own tests: tests/ the product's (tests/unit needs cliques only),
# lab/tests cliques-lab's; the cluster fixtures of both are tests/support/cluster_fixtures.py
# (loaded by the root conftest.py).
unit: dev
	$(PY) -m pytest -q tests/unit lab/tests/unit

integration: dev
	$(PY) -m pytest -q tests/integration tests/e2e lab/tests/integration lab/tests/e2e

test: lint cargo-test
	$(PY) -m pytest -q tests lab/tests

# The gang end-to-end tests, and those of every feature (scaling groups, in-place updates,
# Kueue, drains and lost nodes, surge and partition, podReadiness, same-node restarts), on
# each Kubernetes version the dev cluster supports besides the
# default (not part of `make test`, which runs the default version only and builds only
# it): one dev cluster per version, its binaries built on first use
# (~/.cache/cliques/kube-v<version>; 1.38.0-beta.0 with GOTOOLCHAIN=go1.27.3, set by the
# build for that module only), removed afterwards. On 1.38, where CompositePodGroups are
# beta in v1beta1, the composite scaling tests run too. Then the tests marked
# `kube_version(V)`, which need a release of their own (EvictionRequests need 1.38's
# controller-manager) and are deselected from `make test`, whose cold build they would
# lengthen by 20 minutes.
COMPAT_TESTS := $(wildcard tests/e2e/test_gang*.py tests/e2e/test_placement*.py) \
	$(addprefix tests/e2e/test_,$(addsuffix .py,scaling_groups inplace_updates kueue \
	    node_drain lost_node rollout_surge operator_rollouts pod_readiness restart_same_nodes))
COMPAT_COMPOSITE_TESTS := tests/e2e/test_scaling_composite.py
COMPAT_CLUSTERS := 1.35.4:cliques-compat-135 1.36.3:cliques-compat-136 \
	1.38.0-beta.0:cliques-compat-138

test-compat: dev
	@failed=""; for pair in $(COMPAT_CLUSTERS); do \
	    version=$${pair%%:*}; name=$${pair##*:}; extra=""; \
	    case $$version in 1.38.*) extra="$(COMPAT_COMPOSITE_TESTS)";; esac; \
	    echo "== gang tests on Kubernetes $$version (dev cluster $$name)"; \
	    CLIQUES_KUBE_VERSION=$$version CLIQUES_TEST_CLUSTER=$$name \
	        $(PY) -m pytest -q $(COMPAT_TESTS) $$extra || failed="$$failed $$version"; \
	    $(VENV)/bin/cliques dev-cluster down --name $$name; \
	done; \
	echo "== tests of a release of their own (EvictionRequests: 1.38.0-beta.0)"; \
	$(PY) -m pytest -q -m kube_version tests/e2e || failed="$$failed kube_version"; \
	if [ -n "$$failed" ]; then echo "gang tests failed on Kubernetes$$failed"; exit 1; fi

# The chart's dashboard and alerts against a real Prometheus scraping the operator (not part
# of `make test`: Prometheus, built from gomod/prometheus into ~/.cache/cliques on first use,
# takes many minutes cold on two cores; see docs/devcluster.md).
test-monitoring: dev
	$(VENV)/bin/cliques dev-cluster build --with prometheus
	$(PY) -m pytest -q -m monitoring tests/e2e/test_monitoring.py lab/tests/e2e/test_prometheus_addon.py

demo: dev
	$(VENV)/bin/cliques demo

bench: dev
	$(VENV)/bin/cliques bench hash

# The operator's OCI image, without Docker, into dist/ (scripts/build_image.py; docs/install.md).
image: dev
	$(PY) scripts/build_image.py

clean:
	rm -rf $(VENV) target
