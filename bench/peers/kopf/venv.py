"""Create (once) the kopf peer's own virtualenv and print its python.

    python bench/peers/kopf/venv.py            # -> /root/.cache/cliques/bench/kopf-venv/bin/python

The venv lives outside the repository, in `<cache>/bench/kopf-venv` (`<cache>` is
`$CLIQUES_CACHE_DIR`, else `$XDG_CACHE_HOME/cliques`, else `~/.cache/cliques`, as for the dev
cluster), or wherever `--venv` says. It is made with `python -m venv` by the interpreter that
runs this script, then `pip install -r requirements.txt` (next to this file) fills it. A
stamp file written last records the requirements' sha256 and the Python version, so a second
run does nothing; a changed requirements.txt re-runs pip, a different Python recreates the
venv. An exclusive `fcntl` lock keeps two callers (a benchmark and a test) from building it
at the same time: the second waits, then finds it done.

Progress goes to stderr; stdout carries only the venv's python path, so a caller can do
`py=$(python bench/peers/kopf/venv.py)`. Stdlib only: it must run before kopf exists.
The project's own .venv is never touched.
"""

from __future__ import annotations

import os
import sys

# This directory holds operator.py, which would shadow the standard library's `operator`
# module (imported by argparse, re, enum...) when this file runs as a script: drop it from
# the import path before anything else is imported.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import argparse  # noqa: E402
import fcntl  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "requirements.txt"
STAMP = "cliques-kopf-peer.json"


def cache_root() -> Path:
    explicit = os.environ.get("CLIQUES_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return (base / "cliques").resolve()


def default_venv() -> Path:
    return cache_root() / "bench" / "kopf-venv"


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _log(message: str) -> None:
    print(f"[kopf-venv] {message}", file=sys.stderr, flush=True)


def _wanted(requirements: Path) -> dict[str, str]:
    return {
        "requirements_sha256": hashlib.sha256(requirements.read_bytes()).hexdigest(),
        "python": platform.python_version(),
    }


def _stamp(venv: Path) -> dict[str, str] | None:
    try:
        data = json.loads((venv / STAMP).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _run(args: list[str]) -> None:
    _log("$ " + " ".join(args))
    # pip's progress goes to our stderr: stdout is reserved for the python path.
    done = subprocess.run(args, stdout=sys.stderr, stderr=sys.stderr, check=False)
    if done.returncode != 0:
        raise SystemExit(f"[kopf-venv] failed ({done.returncode}): {' '.join(args)}")


def ensure(venv: Path, requirements: Path = REQUIREMENTS, force: bool = False) -> Path:
    """Make sure `venv` exists with `requirements` installed; return its python."""
    venv = venv.expanduser().resolve()
    wanted = _wanted(requirements)
    python = venv_python(venv)
    if not force and _stamp(venv) == wanted and python.exists():
        _log(f"up to date: {venv}")
        return python

    venv.parent.mkdir(parents=True, exist_ok=True)
    lock_path = venv.parent / f"{venv.name}.lock"
    with lock_path.open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _log(f"another process is preparing {venv}; waiting for it")
            fcntl.flock(lock, fcntl.LOCK_EX)
        # Someone else may have finished it while we waited.
        stamp = _stamp(venv)
        if not force and stamp == wanted and python.exists():
            _log(f"up to date: {venv}")
            return python
        started = time.monotonic()
        (venv / STAMP).unlink(missing_ok=True)
        if not python.exists() or (stamp is not None and stamp.get("python") != wanted["python"]):
            _log(f"creating {venv} with Python {wanted['python']} ({sys.executable})")
            _run([sys.executable, "-m", "venv", "--clear", str(venv)])
        else:
            _log(f"updating {venv}")
        _run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-input",
                "--require-virtualenv",
                "-r",
                str(requirements),
            ]
        )
        _run([str(python), "-c", "import kopf, kubernetes"])
        (venv / STAMP).write_text(json.dumps(wanted, indent=2) + "\n")
        _log(f"ready in {time.monotonic() - started:.0f}s: {python}")
        return python


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, default=default_venv(), help="%(default)s")
    parser.add_argument("--requirements", type=Path, default=REQUIREMENTS, help="%(default)s")
    parser.add_argument("--force", action="store_true", help="re-run pip even if up to date")
    args = parser.parse_args(argv)
    python = ensure(args.venv, args.requirements, force=args.force)
    print(python, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
