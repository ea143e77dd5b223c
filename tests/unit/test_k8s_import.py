"""kubernetes-asyncio as cliques loads it (`cliques.kube.k8s`): its kubeconfig loading and
connection pool without the ~800 generated API and model modules, each case in a fresh
interpreter (the import is once per process)."""

from __future__ import annotations

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


def test_the_operator_loads_a_kubeconfig_without_the_generated_modules(tmp_path: Path) -> None:
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
        from cliques.kube import k8s, kubeconfig

        async def main():
            cfg = await kubeconfig.load({str(config)!r})
            api = k8s.ApiClient(cfg)
            headers = {{}}
            await api.update_params_for_auth(headers, [], ["BearerToken"])
            await api.close()
            return cfg.host, headers

        host, headers = asyncio.run(main())
        print(host, headers["authorization"])
        loaded = [m for m in sys.modules if m.startswith("kubernetes_asyncio")]
        print(len(loaded), "kubernetes_asyncio.client.models.v1_pod" in sys.modules)
        try:
            k8s.config.kube_config.ApiClient  # what kube_config needs is there
            import kubernetes_asyncio.client as c
            c.CoreV1Api
        except AttributeError as exc:
            print("refused:", exc)
        """
    )
    first, second, third = out.splitlines()
    assert first == "https://127.0.0.1:6443 Bearer secret-token"
    count, models = second.split()
    assert int(count) < 30 and models == "False"
    assert third.startswith("refused: kubernetes_asyncio.client.CoreV1Api: cliques loads")


def test_a_process_that_imported_kubernetes_asyncio_first_keeps_it_whole() -> None:
    out = _run(
        """
        import kubernetes_asyncio.client
        from cliques.kube import k8s
        print(k8s.ApiClient is kubernetes_asyncio.client.ApiClient,
              hasattr(kubernetes_asyncio.client, "CoreV1Api"))
        """
    )
    assert out.split() == ["True", "True"]
