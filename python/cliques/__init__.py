"""cliques: a Kubernetes operator for gangs of pods.

The package has three faces: the operator (`cliques.operator`), the pip-installable
hashing module (`cliques.hashing`, which needs no Kubernetes client), and the `cliques`
command (`cliques.cli`). The Rust core is the extension module `cliques._core`.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("cliques")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0"

__all__ = ["__version__"]
