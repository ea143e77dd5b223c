"""`cliques operator` refuses a cluster configuration that cannot be used before it
connects or starts a worker: one line on stderr and exit code 3 (the real command, in a
subprocess; no cluster needed)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from cliques.cli import build_parser, operator_cmd
from cliques.operator import supervisor

CONFIG = """apiVersion: v1
kind: Config
current-context: c
clusters:
- name: c
  cluster: {{server: "https://127.0.0.1:{port}"{extra}}}
users: [{{name: u, user: {{token: sekret-token}}}}]
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
"""


def _operator(kubeconfig: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    return subprocess.run(
        [sys.executable, "-m", "cliques", "operator", "--kubeconfig", str(kubeconfig),
         "--workers", "1", "--metrics-port", "0"],
        check=False, capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip


def test_a_quoted_false_and_no_ca_does_not_connect(tmp_path: Path) -> None:
    """`insecure-skip-tls-verify: "false"` used to turn verification off; now the file is
    refused before anything connects to the server it names."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        port = server.getsockname()[1]
        kubeconfig = tmp_path / "kc.yaml"
        kubeconfig.write_text(CONFIG.format(port=port, extra=', insecure-skip-tls-verify: "false"'))
        proc = _operator(kubeconfig)
        with pytest.raises(BlockingIOError):
            server.accept()  # nobody connected
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr == (
        f'cliques operator: cannot load {kubeconfig}: cluster "c": insecure-skip-tls-verify '
        "must be true or false, not the string 'false'\n"
    )


@pytest.mark.parametrize(
    ("content", "ca", "says"),
    [
        ("clusters: [\n  - {name: c\n", None, "but found '-' at line 2, column 3)"),
        ("- just\n- a list\n", None, "not a kubeconfig"),
        (CONFIG.format(port=1, extra=", certificate-authority: ca.crt"), b"not PEM\n",
         "certificate-authority"),
        (CONFIG.format(port=1, extra=", certificate-authority: ca.crt"), None,
         "ca.crt: cannot be read"),
        (CONFIG.format(port=1, extra=", certificate-authority: ca.crt"),
         b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
         "not a PEM CA certificate"),
    ],
)  # fmt: skip
def test_a_broken_kubeconfig_or_ca_is_one_line_and_exit_3(
    tmp_path: Path, content: str, ca: bytes | None, says: str
) -> None:
    kubeconfig = tmp_path / "kc.yaml"
    kubeconfig.write_text(content)
    if ca is not None:
        (tmp_path / "ca.crt").write_bytes(ca)
    proc = _operator(kubeconfig)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith(f"cliques operator: cannot load {kubeconfig}: ")
    assert proc.stderr.count("\n") == 1 and says in proc.stderr
    assert "Traceback" not in proc.stderr and "sekret" not in proc.stderr


def test_exit_3_is_the_code_of_what_a_restart_cannot_fix() -> None:
    assert operator_cmd.EXIT_BAD_CONFIG == supervisor.EXIT_NEEDS_FIX == 3
    sub = next(a for a in build_parser()._actions if isinstance(a.choices, dict))
    assert isinstance(sub.choices, dict)
    help_text = " ".join(sub.choices["operator"].format_help().split())
    assert "3 something a restart cannot fix: a kubeconfig" in help_text
