"""Errors of the dev cluster, each worded so that a person knows what to do next.

`DevClusterError` is the base the CLI catches and prints (exit status 1) and the test fixture
turns into a failure; its `str()` is the whole message. The subclasses carry the facts the
message is made of (the failing step, the log to read, a component's log tail), so callers
and tests can use them without parsing text.
"""

from __future__ import annotations

from pathlib import Path


class DevClusterError(RuntimeError):
    """Something a person can act on went wrong with the dev cluster or its build."""


class GoNotFoundError(DevClusterError):
    """No usable Go toolchain: the message says what to install."""


class BuildError(DevClusterError):
    """A `go` step failed; names the step and the log holding the whole output."""

    def __init__(self, label: str, step: str, log_path: Path, tail: str) -> None:
        self.label = label
        self.step = step
        self.log_path = log_path
        self.tail = tail
        message = f"building {label} failed at step '{step}'; the full log is {log_path}"
        if tail:
            message += "\nlast lines of the log:\n" + _indent(tail)
        super().__init__(message)


class ComponentError(DevClusterError):
    """A control-plane component did not come up; carries the tail of its log."""

    def __init__(self, cluster: str, component: str, reason: str, log_path: Path | None, tail: str):
        self.cluster = cluster
        self.component = component
        self.reason = reason
        self.log_path = log_path
        self.tail = tail
        message = f"dev cluster '{cluster}': {component} {reason}"
        if log_path is not None:
            message += f"; its log is {log_path}"
        if tail:
            message += f"\nlast lines of the {component} log:\n" + _indent(tail)
        super().__init__(message)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())
