"""Install the project's pinned Python dependencies (every extra) into the running venv.

Reads them from pyproject.toml so the pins live in one place; `make dev` calls this before
`maturin develop` builds the extension in place.
"""

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        reqs.extend(extra)
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", *reqs]
    return subprocess.call(cmd)


if __name__ == "__main__":
    raise SystemExit(main())
