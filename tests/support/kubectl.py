"""`kubectl` as a user drives it, for the integration tests that go through the CLI."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

CALL_TIMEOUT = 60  # seconds for one kubectl call; `kubectl wait` gets its own --timeout


class Kubectl:
    """`kubectl` with the test cluster's kubeconfig (and a namespace, if given)."""

    def __init__(self, kubeconfig: str, namespace: str | None = None) -> None:
        self.env = {**os.environ, "KUBECONFIG": kubeconfig}
        self.namespace = namespace

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        ns = ["-n", self.namespace] if self.namespace else []
        return subprocess.run(
            ["kubectl", *ns, *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=CALL_TIMEOUT,
            check=False,
        )

    def ok(self, *args: str, stdin: str | None = None) -> str:
        done = self.run(*args, stdin=stdin)
        assert done.returncode == 0, f"kubectl {' '.join(args)} failed:\n{done.stderr}"
        return done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args, "-o", "json"))

    def refused(self, *args: str, stdin: str | None = None) -> str:
        """Run a command that the API server must refuse; return its error text."""
        done = self.run(*args, stdin=stdin)
        assert done.returncode != 0, f"kubectl {' '.join(args)} was accepted:\n{stdin}"
        return done.stderr

    def items(self, kind: str) -> list[dict[str, Any]]:
        return list(self.json("get", kind)["items"])

    def get(self, kind: str, name: str) -> dict[str, Any]:
        return dict(self.json("get", kind, name))
