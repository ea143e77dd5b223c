"""`cliques start-gate`: the init container's wait, with a fake clock and as a real process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cliques.cli import start_gate_cmd


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_waits_until_the_file_reads_open_and_says_what_it_waits_for(tmp_path: Path) -> None:
    state = tmp_path / "state"
    (tmp_path / "starts-after").write_text("llama-0-leader")
    state.write_text("closed")
    fake = FakeTime()
    lines: list[str] = []

    def sleep(seconds: float) -> None:
        fake.sleep(seconds)
        if fake.now >= 130:
            state.write_text("open\n")

    code = start_gate_cmd.wait(state, poll=1.0, clock=fake.clock, sleep=sleep, say=lines.append)
    assert code == 0
    assert lines[0] == "start gate closed: waiting for llama-0-leader to be Ready"
    assert [line for line in lines if line.startswith("still waiting")] == [
        "still waiting for llama-0-leader to be Ready (60s)",
        "still waiting for llama-0-leader to be Ready (120s)",
    ]
    assert lines[-1].startswith("start gate open after 130")


def test_an_open_gate_passes_at_once_and_a_timeout_fails(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.write_text("open")
    lines: list[str] = []
    assert start_gate_cmd.wait(state, say=lines.append, sleep=lambda s: None) == 0
    assert len(lines) == 1
    missing = tmp_path / "nothing"
    fake = FakeTime()
    code = start_gate_cmd.wait(
        missing, poll=1, timeout=5, clock=fake.clock, sleep=fake.sleep, say=lines.append
    )
    assert code == 1
    assert "not set" in lines[-1] and "giving up" in lines[-1]


def test_the_command_exits_when_its_file_opens(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.write_text("closed")
    proc = subprocess.Popen(
        [sys.executable, "-m", "cliques", "start-gate", "--file", str(state), "--poll", "0.05"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # printed once it is waiting
        assert "start gate closed" in first
        assert proc.poll() is None  # still closed: still waiting
        # the kubelet swaps the projected file; a rename is what a reader sees
        fresh = tmp_path / "state.new"
        fresh.write_text("open")
        fresh.rename(state)
        assert proc.wait(timeout=30) == 0
        assert "start gate open" in proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_bad_arguments_are_refused() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cliques", "start-gate", "--file", "x", "--poll", "0"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--poll" in done.stderr
