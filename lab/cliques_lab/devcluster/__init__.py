"""A local, real Kubernetes control plane for development, tests, the demo and benchmarks.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK's fake-node controller
run as plain processes on loopback, started by `kwokctl --runtime binary`. Every binary is
compiled from the Go modules kept in `gomod/` (never downloaded prebuilt) into a cache outside
the repository, once per machine.

Modules: `gomodules` (what each Go module builds, pure), `build` (the cached, locked Go
builds), `progress` (how a build shows progress), `kwok` (the kwokctl command lines and node
manifests, pure), `cluster` (up/down/status of named clusters), `node_power` (powering a
node off, as a lost machine), `errors` (what can go wrong, in words a person can act on).
The optional add-ons (`up --with kueue`, `--with metrics-server`): `addons` (which there are
and how a cluster records them), `kueue` and `metrics_server` (their configuration, CRDs and
webhooks, pure), `certs` (the webhook certificates, made with openssl) and `addons_up`
(building and starting them).
The `cliques dev-cluster` command (`cliques_lab.cli.devcluster_cmd`) and the pytest fixture in
tests/ are the two front ends.
"""
