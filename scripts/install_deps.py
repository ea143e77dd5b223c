"""Install the project's pinned Python dependencies (every extra) into the running venv.

Reads them from pyproject.toml, and lab/pyproject.toml for cliques-lab's own (cliques
itself left out: it is this checkout), so the pins live in one place; `make dev` calls this
before `maturin develop` builds the extension in place and `pip install --no-deps -e lab`
adds the lab.
"""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _is_cliques(requirement: str) -> bool:
    """`cliques`, `cliques[operator]`, `cliques>=0.1`: this checkout, not a PyPI package."""
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower() == "cliques"


def main() -> int:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        reqs.extend(extra)
    lab = tomllib.loads((ROOT / "lab" / "pyproject.toml").read_text())["project"]
    reqs.extend(r for r in lab["dependencies"] if not _is_cliques(r))
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", *reqs]
    return subprocess.call(cmd)


if __name__ == "__main__":
    raise SystemExit(main())
