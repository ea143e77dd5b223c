"""No test leaves the process environment or working directory changed (a pytest plugin,
loaded by the root conftest.py).

The tests share one process: a variable a test sets in `os.environ` and never restores
reaches every test after it, and every process they start. A proxy variable left by a unit
test once sent the operator of every later cluster test to a proxy that does not exist; it
went unseen while those tests happened to run first. After each test's teardown the
environment and the working directory are compared with what they were before its setup:
a difference fails the test, at teardown, naming each variable (values are not shown: they
may be secrets), and the environment and directory are then put back, so that the next
test starts clean. Use `monkeypatch.setenv`, `delenv` and `chdir`, which undo themselves.

What a fixture of wider scope (module, session) changes while it is set up belongs to that
fixture, not to the test that first asked for it (the dev cluster's session environment:
`KUBECONFIG`, `PATH`), and is never counted.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

_BEFORE_KEY = pytest.StashKey[tuple[dict[str, str], str]]()
#: Variables a wider fixture changed during its setup: theirs, not the tests'. pytest itself
#: names the running test in PYTEST_CURRENT_TEST.
_owned: set[str] = {"PYTEST_CURRENT_TEST"}


def _changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: Any) -> Generator[None]:
    if fixturedef.scope == "function":
        return (yield)
    before = dict(os.environ)
    try:
        return (yield)
    finally:
        _owned.update(_changed(before, dict(os.environ)))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None]:
    item.stash[_BEFORE_KEY] = (dict(os.environ), os.getcwd())
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    result = yield
    saved = item.stash.get(_BEFORE_KEY, None)
    if saved is None:
        return result
    before, cwd = saved
    now = dict(os.environ)
    changed = sorted(_changed(before, now) - _owned)
    moved = os.getcwd() != cwd
    for name in changed:  # put back what the test left, so the next one starts clean
        if name in before:
            os.environ[name] = before[name]
        else:
            os.environ.pop(name, None)
    if moved:
        os.chdir(cwd)
    if changed or moved:
        what = [f"  the environment variable {name}" for name in changed]
        if moved:
            what.append(f"  the working directory (was {cwd})")
        pytest.fail(
            f"{item.nodeid} left the process changed (use monkeypatch.setenv, delenv and "
            "chdir, which undo themselves):\n" + "\n".join(what),
            pytrace=False,
        )
    return result
