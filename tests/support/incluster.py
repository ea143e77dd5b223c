"""The operator image run as a kubelet would run it, for tests/e2e/test_in_cluster.py.

- `build_image()` runs scripts/build_image.py (what `make image` runs; it reuses its cached
  layers when the sources are unchanged) and `unpack()` turns the OCI archive back into a
  root file system and the runtime config (`umoci unpack`).
- `shipped_rbac()` reads an install's RBAC manifests with the namespace (and the names of
  cluster-scoped objects) adapted to a test namespace; `can_i()` asks the API server.
- `ImageOperator` starts the image's entrypoint, user, environment and the shipped
  Deployment's arguments in a mount namespace: the root file system read-only, a tmpfs on
  `/tmp`, a minimal `/dev`, and the ServiceAccount token, CA and namespace bind-mounted at
  `/var/run/secrets/kubernetes.io/serviceaccount`; `KUBERNETES_SERVICE_HOST/PORT` name the
  API server on loopback (the process shares the host's network namespace).
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

REPO = Path(__file__).resolve().parents[2]
SA_DIR = "run/secrets/kubernetes.io/serviceaccount"  # /var/run is a link to /run
SHIPPED_NAMESPACE = "cliques-system"
BUILD_TIMEOUT = 900
# The host's chroot, by path: `env -i` below searches the image's PATH.
CHROOT = shutil.which("chroot", path="/usr/sbin:/usr/bin:/sbin:/bin") or "/usr/sbin/chroot"


@dataclass(frozen=True)
class Image:
    archive: Path
    tag: str
    info: dict[str, Any]


def build_image(out: Path) -> Image:
    """Build (or reuse) the image with the script `make image` runs."""
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts/build_image.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, f"the image build failed:\n{done.stdout}\n{done.stderr}"
    info = json.loads((out / "image.json").read_text())
    return Image(REPO / info["archive"], info["tags"][1], info)


def unpack(image: Image, dest: Path) -> tuple[Path, dict[str, Any]]:
    """The image's root file system and its OCI runtime config (process, user, env)."""
    layout = dest / "oci"
    with tarfile.open(image.archive) as tar:
        tar.extractall(layout, filter="tar")
    bundle = dest / "bundle"
    subprocess.run(
        ["umoci", "unpack", "--image", f"{layout}:{image.tag}", str(bundle)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    config = json.loads((bundle / "config.json").read_text())
    rootfs = bundle / "rootfs"
    (rootfs / SA_DIR).mkdir(parents=True, exist_ok=True)  # the mount point a kubelet makes
    return rootfs, config


def shipped_rbac(path: Path, namespace: str) -> list[dict[str, Any]]:
    """The RBAC documents of `path`, moved to `namespace`; cluster-scoped names get the
    namespace as a suffix, so that concurrent tests do not share them."""
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    for doc in docs:
        meta = doc["metadata"]
        if doc["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            meta["name"] = f"{meta['name']}-{namespace}"
        elif meta.get("namespace") == SHIPPED_NAMESPACE:
            meta["namespace"] = namespace
        if doc["kind"] == "ClusterRoleBinding":
            doc["roleRef"]["name"] = f"{doc['roleRef']['name']}-{namespace}"
        for subject in doc.get("subjects", []):
            if subject.get("namespace") == SHIPPED_NAMESPACE:
                subject["namespace"] = namespace
    return docs


def shipped_container(path: Path) -> dict[str, Any]:
    deployment = next(d for d in yaml.safe_load_all(path.read_text()) if d)
    container: dict[str, Any] = deployment["spec"]["template"]["spec"]["containers"][0]
    return container


def expand_args(args: list[str], env: dict[str, str]) -> list[str]:
    """`$(VAR)` in container args, as the kubelet expands them."""
    out = []
    for arg in args:
        expanded = arg
        for key, value in env.items():
            expanded = expanded.replace(f"$({key})", value)
        out.append(expanded)
    return out


def replace_flag(args: list[str], flag: str, value: str) -> list[str]:
    """`args` with `flag`'s value replaced (or the flag added)."""
    out = list(args)
    if flag in out:
        out[out.index(flag) + 1] = value
    else:
        out += [flag, value]
    return out


def can_i(kubectl: Any, account: str, checks: list[tuple[str, str, str]]) -> dict[Any, bool]:
    """Whether service account `account` (`system:serviceaccount:<ns>:<name>`) may do each
    (verb, resource as `kubectl auth can-i` names it, namespace or '' for all), asked with a
    SubjectAccessReview: unlike `can-i`, it needs no discovery of the resource's group, so
    rules for an API the cluster does not serve (Kueue's, say) are checked too."""
    _, _, ns_name = account.partition("system:serviceaccount:")
    account_ns = ns_name.split(":", 1)[0]
    groups = [
        "system:serviceaccounts",
        f"system:serviceaccounts:{account_ns}",
        "system:authenticated",
    ]

    def ask(check: tuple[str, str, str]) -> bool:
        verb, resource, ns = check
        name, _, sub = resource.partition("/")
        plural, _, group = name.partition(".")
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": account,
                "groups": groups,
                "resourceAttributes": {
                    "verb": verb,
                    "group": group,
                    "resource": plural,
                    "subresource": sub,
                    "namespace": ns,
                },
            },
        }
        done = kubectl("create", "-f", "-", "-o", "json", stdin=json.dumps(review), check=False)
        assert done.returncode == 0, f"SubjectAccessReview {check}: {done.stderr}"
        return bool(json.loads(done.stdout)["status"].get("allowed"))

    with ThreadPoolExecutor(8) as pool:
        return dict(zip(checks, pool.map(ask, checks), strict=True))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ImageOperator:
    """One operator pod: the image's entrypoint as its user, read-only, in-cluster config."""

    def __init__(
        self,
        rootfs: Path,
        runtime: dict[str, Any],
        *,
        server: str,
        secrets: Path,
        args: list[str],
        pod: str,
        namespace: str,
        log_path: Path,
    ) -> None:
        url = urlparse(server)
        self.metrics_port = free_port()
        args = replace_flag(args, "--metrics-port", str(self.metrics_port))
        args = replace_flag(args, "--metrics-bind-address", f"127.0.0.1:{self.metrics_port}")
        process = runtime["process"]
        user = process["user"]
        self.uid = int(user["uid"])
        env = [e for e in process["env"] if not e.startswith("HOSTNAME=")]
        env += [
            f"KUBERNETES_SERVICE_HOST={url.hostname}",
            f"KUBERNETES_SERVICE_PORT={url.port}",
            f"POD_NAME={pod}",
            f"POD_NAMESPACE={namespace}",
            f"HOSTNAME={pod}",
        ]
        r = shlex.quote(str(rootfs))
        sa = shlex.quote(str(secrets))
        script = f"""
set -e
mount --bind {r} {r}
mount --bind {sa} {r}/{SA_DIR}
mount -o remount,bind,ro {r}/{SA_DIR}
mount -t tmpfs -o mode=1777,size=256m,nosuid,nodev tmpfs {r}/tmp
mount -t proc -o nosuid,nodev,noexec proc {r}/proc
mount -t tmpfs -o mode=755,nosuid tmpfs {r}/dev
for d in null zero full random urandom tty; do
  touch {r}/dev/$d && mount --bind /dev/$d {r}/dev/$d
done
mkdir {r}/dev/shm && mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs {r}/dev/shm
ln -s /proc/self/fd {r}/dev/fd
mount -o remount,bind,ro {r}
exec env -i {" ".join(shlex.quote(e) for e in env)} \\
  {shlex.quote(CHROOT)} --userspec={user["uid"]}:{user["gid"]} --groups={user["gid"]} {r} \\
  {" ".join(shlex.quote(a) for a in [*process["args"][:1], *args])}
"""
        self.log_path = log_path
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen(
                ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def ready(self) -> bool:
        """What the shipped readinessProbe asks: GET /readyz answers 200."""
        if self.proc.poll() is not None:
            raise AssertionError(f"the operator exited ({self.proc.returncode}):\n{self.log()}")
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.metrics_port}/readyz", timeout=2
            ) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    def status(self, field: str) -> str:
        """A line of /proc/<pid>/status of the operator (the supervisor)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return line.split(":", 1)[1].strip()
        raise AssertionError(f"no {field} in /proc/{self.proc.pid}/status")

    def root_mount_options(self) -> list[str]:
        """The mount options of the operator's `/`, as it sees it."""
        for line in Path(f"/proc/{self.proc.pid}/mountinfo").read_text().splitlines():
            fields = line.split()
            if fields[4] == "/":
                return fields[5].split(",")
        raise AssertionError("no / in the operator's mountinfo")

    def stop(self, timeout: float = 60.0) -> int | None:
        """SIGTERM, as the kubelet sends it; the exit status (None if it had to be killed)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                return self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                return None
        return self.proc.returncode


def write_service_account(
    kubectl: Any, dest: Path, namespace: str, account: str, kubeconfig_ca: bytes
) -> None:
    """token, ca.crt and namespace, as the kubelet projects them."""
    token = kubectl("create", "token", account, "-n", namespace, "--duration=2h").stdout.strip()
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "token").write_text(token)
    (dest / "ca.crt").write_bytes(kubeconfig_ca)
    (dest / "namespace").write_text(namespace)
    for f in dest.iterdir():
        f.chmod(0o644)


def cluster_ca(kubectl: Any) -> bytes:
    """The API server's CA from the test kubeconfig (inline or as a file)."""
    view = json.loads(kubectl("config", "view", "--raw", "--minify", "-o", "json").stdout)
    cluster = view["clusters"][0]["cluster"]
    if "certificate-authority-data" in cluster:
        return base64.b64decode(cluster["certificate-authority-data"])
    return Path(cluster["certificate-authority"]).read_bytes()
