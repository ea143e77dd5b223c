"""requirements/runtime.lock, the hash-pinned runtime dependencies the image installs, is in
sync with pyproject.toml: every runtime requirement (the base dependencies and the `operator`
extra) is locked at a version it allows, every locked file has a hash, and the lock holds
exactly the dependency closure of those requirements (read from the installed packages'
metadata, so the check needs no network). Regenerate it with the command in its header."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements" / "runtime.lock"
_ENTRY = re.compile(r"^([A-Za-z0-9_.-]+)==(\S+)\s*\\?$")


def runtime_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    texts = [*project["dependencies"], *project["optional-dependencies"]["operator"]]
    return [Requirement(t) for t in texts]


def parse_lock() -> dict[str, tuple[str, list[str]]]:
    """name -> (version, hashes)."""
    entries: dict[str, tuple[str, list[str]]] = {}
    current: str | None = None
    for line in LOCK.read_text().splitlines():
        match = _ENTRY.match(line)
        if match:
            current = canonicalize_name(match[1])
            entries[current] = (match[2], [])
        elif line.strip().startswith("--hash=") and current is not None:
            entries[current][1].append(line.strip().removeprefix("--hash=").rstrip(" \\"))
        elif line.strip() and not line.lstrip().startswith("#"):
            raise AssertionError(f"unexpected line in {LOCK.name}: {line!r}")
    return entries


def closure(roots: list[Requirement]) -> set[str]:
    """Names of `roots` and everything they need, from the installed distributions."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen:
            continue
        seen.add(name)
        for text in metadata.requires(req.name) or []:
            dep = Requirement(text)
            extras = req.extras or {""}
            if dep.marker is None or any(dep.marker.evaluate({"extra": e}) for e in extras):
                todo.append(dep)
    return seen


def test_every_runtime_requirement_is_locked_at_an_allowed_version() -> None:
    lock = parse_lock()
    for req in runtime_requirements():
        name = canonicalize_name(req.name)
        assert name in lock, f"{req} is not in {LOCK.name}"
        assert req.specifier.contains(lock[name][0], prereleases=True), (
            f"{LOCK.name} pins {name}=={lock[name][0]}, pyproject.toml wants {req}"
        )


def test_every_locked_package_has_sha256_hashes() -> None:
    for name, (_, hashes) in parse_lock().items():
        assert hashes, f"{name} has no --hash in {LOCK.name}"
        assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in hashes), (name, hashes)


def test_the_lock_holds_exactly_the_dependency_closure() -> None:
    locked = set(parse_lock())
    needed = closure(runtime_requirements())
    assert locked == needed, (
        f"missing from {LOCK.name}: {sorted(needed - locked)}; "
        f"not needed: {sorted(locked - needed)}"
    )


def test_the_lock_names_no_local_index_or_wheel_directory() -> None:
    text = LOCK.read_text()
    for option in ("--find-links", "--index-url", "--extra-index-url", "-f ", "-e "):
        assert f"\n{option}" not in text, option
