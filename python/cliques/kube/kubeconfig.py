"""Where the cluster is and how to authenticate: kubernetes-asyncio's configuration loaded
the way kubectl finds it, with one clear error when it cannot be loaded.

An explicit kubeconfig path wins; without one, the in-cluster service account is tried,
then $KUBECONFIG and ~/.kube/config. This module imports no metrics, so the operator's
command line can check the configuration before the supervisor sets up multiprocess
metrics and starts workers (which would otherwise crash-loop on a missing file).
"""

from __future__ import annotations

import os
from typing import Any

from cliques.kube import k8s


class ConfigError(Exception):
    """The cluster configuration cannot be loaded; the message says which and why."""


async def load(kubeconfig: str | None = None, context: str | None = None) -> Any:
    """A kubernetes-asyncio `Configuration` for `kubeconfig` (path) and `context`, or for
    the in-cluster service account / default kubeconfig when no path is given. Reads files
    only; nothing is sent to the API server."""
    cfg = k8s.Configuration()
    source = kubeconfig or "the default kubeconfig ($KUBECONFIG or ~/.kube/config)"
    try:
        if kubeconfig is None:
            try:
                k8s.config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
                return cfg
            except k8s.config.ConfigException:
                pass
        # The default path is resolved here, not by kubernetes-asyncio (which reads
        # $KUBECONFIG once, when it is imported).
        await k8s.config.load_kube_config(
            config_file=kubeconfig or os.pathsep.join(_default_paths()),
            context=context,
            client_configuration=cfg,
        )
    except (
        k8s.config.ConfigException,
        OSError,
        ValueError,
        TypeError,
        KeyError,
        AttributeError,
    ) as exc:
        # kubernetes-asyncio reports a missing file as "Invalid kube-config file. Expected
        # key current-context": say what is actually wrong when it is that simple.
        if kubeconfig is not None and not _readable(kubeconfig):
            raise ConfigError(f"kubeconfig {kubeconfig}: no such readable file") from None
        if kubeconfig is None and not any(map(_readable, _default_paths())):
            raise ConfigError(
                "no cluster configuration: not running in a pod, and no kubeconfig at "
                f"{' or '.join(_default_paths())} (pass --kubeconfig)"
            ) from None
        if isinstance(exc, (TypeError, AttributeError)):
            detail = "not a kubeconfig (a YAML mapping of clusters, users and contexts)"
        else:
            detail = str(exc)
        where = f" (context {context!r})" if context else ""
        raise ConfigError(f"cannot load {source}{where}: {detail}") from None
    return cfg


def _default_paths() -> list[str]:
    """Where kubectl (and kubernetes-asyncio) look without --kubeconfig."""
    env = os.environ.get("KUBECONFIG", "")
    return [p for p in env.split(os.pathsep) if p] or [os.path.expanduser("~/.kube/config")]


def _readable(path: str) -> bool:
    try:
        with open(path, "rb"):
            return True
    except OSError:
        return False
