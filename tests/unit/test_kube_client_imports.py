"""The operator talks to the API server without a generated Kubernetes client: importing
it and loading a kubeconfig load no `kubernetes_asyncio` module (its package imports ~800
generated API and model modules, ~30 MB of every worker; in a fresh interpreter, as
imports are once per process), and the package installs no module of its own making in
`sys.modules`."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_operator_loads_a_kubeconfig_without_a_generated_client(tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
                "users": [{"name": "u", "user": {"token": "secret-token"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    out = _run(
        f"""
        import asyncio, sys
        import cliques.operator.manager
        from cliques.kube.client import KubeClient

        async def main():
            client = await KubeClient.connect({str(config)!r})
            headers = await client._headers(None)
            await client.close()
            return client.host, headers["Authorization"]

        host, auth = asyncio.run(main())
        print(host, auth)
        print(sorted(m for m in sys.modules if m.startswith("kubernetes")))
        """
    )
    first, second = out.splitlines()
    assert first == "https://127.0.0.1:6443 Bearer secret-token"
    assert second == "[]"


#: A write to the interpreter's module table: a name bound to a module of one's making.
_MODULES_WRITE = re.compile(r"sys\.modules\[[^\]]*\]\s*=|sys\.modules\.(setdefault|update)\(")


def test_the_product_installs_no_module_of_its_own_making() -> None:
    package = Path(__file__).resolve().parents[2] / "python" / "cliques"
    writes = [
        f"{path.relative_to(package)}:{n}"
        for path in package.rglob("*.py")
        if path.relative_to(package).parts[0] not in ("bench", "devcluster")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if _MODULES_WRITE.search(line)
    ]
    assert writes == []
    assert _MODULES_WRITE.search('sys.modules["x"] = module')
