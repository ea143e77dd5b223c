"""The check that no test leaves the process environment or working directory changed
(tests/support/env_leaks.py), run by pytest itself on a small test file (pytester, in a
subprocess)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
TESTS = """
import os

import pytest


@pytest.fixture(scope="session")
def session_env():
    os.environ["CLIQUES_TEST_SESSION_VAR"] = "kept for the session"
    yield
    del os.environ["CLIQUES_TEST_SESSION_VAR"]


def test_sets_a_proxy(session_env):
    os.environ["HTTPS_PROXY"] = "http://env-proxy:3128"


def test_the_leftover_was_put_back(session_env):
    assert "HTTPS_PROXY" not in os.environ
    assert os.environ["CLIQUES_TEST_SESSION_VAR"] == "kept for the session"


def test_monkeypatch_undoes_itself(monkeypatch, tmp_path):
    monkeypatch.setenv("HTTPS_PROXY", "http://env-proxy:3128")
    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.chdir(tmp_path)


def test_moves_away(tmp_path):
    os.chdir(tmp_path)


def test_removes_a_variable():
    del os.environ["CLIQUES_TEST_OUTER_VAR"]


def test_the_variable_is_back():
    assert os.environ["CLIQUES_TEST_OUTER_VAR"] == "outer"
"""


@pytest.fixture
def leaky(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pythonpath = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(pythonpath))
    monkeypatch.setenv("CLIQUES_TEST_OUTER_VAR", "outer")
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    pytester.makeconftest('pytest_plugins = ["tests.support.env_leaks"]\n')
    pytester.makepyfile(test_leaky=TESTS)
    return pytester


def test_a_test_that_leaves_the_process_changed_fails_and_is_undone(
    leaky: pytest.Pytester,
) -> None:
    result = leaky.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=6, errors=3)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_sets_a_proxy*",
            "test_leaky.py::test_sets_a_proxy left the process changed*",
            "  the environment variable HTTPS_PROXY",
        ]
    )
    result.stdout.fnmatch_lines(["  the working directory (was *"])
    result.stdout.fnmatch_lines(["  the environment variable CLIQUES_TEST_OUTER_VAR"])
    result.stdout.no_fnmatch_line("*env-proxy*")  # values are never shown
    result.stdout.no_fnmatch_line("*CLIQUES_TEST_SESSION_VAR*")
    result.stdout.no_fnmatch_line("*test_monkeypatch_undoes_itself left*")
