"""`cliques demo`: the whole product on the local control plane, end to end.

Brings up (or reuses) the dev cluster, installs the CRDs, starts the operator, applies the
example CliqueSet, waits until it is Available and prints `kubectl get cqs,cliques,pods`.
Each step says what it is doing; a failure says which step and where its log is.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cliques import data
from cliques_lab.devcluster import session
from cliques_lab.devcluster.errors import DevClusterError

if TYPE_CHECKING:  # the API types need msgspec, which `cliques hash` installs do without
    from cliques.api.cliqueset import CliqueSet
    from cliques.api.meta import Condition


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "demo",
        help="local control plane + CRDs + operator + an example CliqueSet",
        description="Start (or reuse) the dev cluster, install the CRDs, run the operator, "
        "apply an example CliqueSet, wait until it is Available and print its objects.",
    )
    p.add_argument("--cluster", default="cliques", help="dev cluster name (default: cliques)")
    p.add_argument("--nodes", type=int, default=4, help="fake nodes (default: 4)")
    p.add_argument(
        "--example",
        type=Path,
        default=None,
        help="CliqueSet manifest to apply (default: the llama example shipped with cliques, "
        "deploy/examples/llama.yaml in the source tree)",
    )
    p.add_argument("--namespace", default="demo", help="namespace for the example")
    p.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for Available")
    p.add_argument(
        "--keep-operator",
        action="store_true",
        help="leave the operator running in the foreground after printing the status",
    )
    p.set_defaults(func=run)


def _step(msg: str) -> None:
    print(f"==> {msg}", flush=True)


def run(args: argparse.Namespace) -> int:
    if args.example is not None and not args.example.is_file():
        print(f"cliques demo: --example {args.example}: no such file", file=sys.stderr)
        return 2
    with contextlib.ExitStack() as stack:
        crds = stack.enter_context(data.as_path(data.CRDS))
        if args.example is None:
            args.example = stack.enter_context(data.as_path(data.EXAMPLES, data.DEFAULT_EXAMPLE))
        return _demo(args, crds)


def _demo(args: argparse.Namespace, crds: Path) -> int:
    _step(
        f"dev cluster {args.cluster!r} (built from Go modules on first use; this can take "
        "several minutes once)"
    )
    try:
        env = session.start(args.cluster, args.nodes)
    except DevClusterError as exc:
        print(f"cliques demo: {exc}", file=sys.stderr)
        return 1
    kubeconfig = env["KUBECONFIG"]

    def kubectl(*kargs: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["kubectl", *kargs], env=env, capture_output=True, text=True, check=False
        )
        if check and done.returncode != 0:
            sys.stderr.write(done.stderr)
            raise SystemExit(f"cliques demo: kubectl {' '.join(kargs)} failed")
        return done

    _step("installing the CRDs")
    try:
        session.install_crds(env, crds)
    except DevClusterError as exc:
        print(f"cliques demo: {exc}", file=sys.stderr)
        return 1
    kubectl("create", "namespace", args.namespace, check=False)

    log_path = Path(kubeconfig).parent / "demo-operator.log"
    _step(f"starting the operator (log: {log_path})")
    with open(log_path, "ab") as log:
        operator = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cliques",
                "operator",
                "--kubeconfig",
                kubeconfig,
                "--metrics-port",
                "0",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        _step(f"applying {args.example} in namespace {args.namespace}")
        kubectl("apply", "--server-side", "-n", args.namespace, "-f", str(args.example))
        name = _name_of(
            kubectl("get", "-n", args.namespace, "-f", str(args.example), "-o", "json").stdout
        )
        _step(f"waiting for CliqueSet {name} to be Available")
        if not _wait_available(kubectl, args.namespace, name, args.timeout, operator):
            print(
                f"cliques demo: {name} not Available after {args.timeout:.0f}s; "
                f"operator log: {log_path}",
                file=sys.stderr,
            )
            print(kubectl("get", "cqs,cliques,pods", "-n", args.namespace, check=False).stdout)
            return 1
        print(kubectl("get", "cqs,cliques,pods", "-n", args.namespace, "-o", "wide").stdout)
        _step(
            f'done. kubectl: eval "$(cliques dev-cluster env --name {args.cluster})"; '
            f"tear down: cliques dev-cluster down --name {args.cluster}"
        )
        if args.keep_operator:
            _step("operator keeps running; Ctrl-C stops it")
            operator.wait()
        return 0
    finally:
        if operator.poll() is None:
            operator.terminate()
            try:
                operator.wait(timeout=30)
            except subprocess.TimeoutExpired:
                operator.kill()


def _name_of(get_json: str) -> str:
    doc = json.loads(get_json)
    items = doc.get("items", [doc])
    for item in items:
        if item.get("kind") == "CliqueSet":
            return str(item["metadata"]["name"])
    raise SystemExit("cliques demo: the example holds no CliqueSet")


def _available(cqs: CliqueSet) -> Condition | None:
    """The CliqueSet's Available condition, if it reports one."""
    return _condition(cqs, "Available")


def _condition(cqs: CliqueSet, type_: str) -> Condition | None:
    from cliques.api.meta import find_condition

    return None if cqs.status is None else find_condition(cqs.status.conditions, type_)


def progress_line(cqs: CliqueSet) -> str:
    """One line on how far a CliqueSet has come."""
    if cqs.status is None:
        return "    waiting for the operator's first status"
    avail = _available(cqs)
    message = f" ({avail.message})" if avail and avail.message else ""
    shown = f"{avail.status}{message}" if avail else "not reported yet"
    line = f"    gangs ready {cqs.status.ready_replicas}/{cqs.spec.replicas}, Available={shown}"
    refused = _condition(cqs, "ReplicaFailure")
    if refused is not None and refused.status == "True":
        line += f"\n    the API server refuses writes ({refused.reason}): {refused.message}"
    return line


def _wait_available(
    kubectl: Any, ns: str, name: str, timeout: float, operator: subprocess.Popen[bytes]
) -> bool:
    import msgspec

    from cliques.api.cliqueset import CliqueSet

    decode = msgspec.json.Decoder(CliqueSet).decode
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if operator.poll() is not None:
            print(
                f"cliques demo: the operator exited with code {operator.returncode}",
                file=sys.stderr,
            )
            return False
        done = kubectl("get", "cqs", name, "-n", ns, "-o", "json", check=False)
        if done.returncode == 0:
            cqs = decode(done.stdout)
            line = progress_line(cqs)
            if line != last:
                print(line, flush=True)
                last = line
            avail = _available(cqs)
            if avail is not None and avail.status == "True":
                return True
        time.sleep(1.0)
    return False
