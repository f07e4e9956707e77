"""Helpers for the end-to-end tests: a step recorder, /proc checks and a tmux driver.

The end-to-end tests drive the real console over a real SimBox (real processes,
real HTTP), once through Textual's Pilot and once in a real terminal (tmux).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tui.sim.procs import is_alive

SECRET = "sk-plantedsecret1234567890"
SECRET_ENV = "SERVEDECK_DEMO_KEY"
E2E_LOAD_S = 5.0


# ----------------------------------------------------------------- steps and keys


@dataclass
class Step:
    name: str
    keys: list[str] = field(default_factory=list)
    wall_s: float = 0.0


@dataclass
class DayLog:
    """Keystrokes and wall time of each step of the operator's day."""

    title: str
    steps: list[Step] = field(default_factory=list)

    @contextmanager
    def step(self, name: str, started_s: float | None = None) -> Iterator[Step]:
        """Time a step from now (or from started_s, a time.monotonic() reading)."""
        step = Step(name)
        self.steps.append(step)
        started = time.monotonic() if started_s is None else started_s
        try:
            yield step
        finally:
            step.wall_s = time.monotonic() - started

    def table(self) -> str:
        rows = [("#", "step", "keys", "n", "wall s")]
        for number, step in enumerate(self.steps, 1):
            keys = " ".join(step.keys) or "-"
            rows.append((str(number), step.name, keys, str(len(step.keys)), f"{step.wall_s:.1f}"))
        total_keys = sum(len(step.keys) for step in self.steps)
        total_s = sum(step.wall_s for step in self.steps)
        rows.append(("", "total", "", str(total_keys), f"{total_s:.1f}"))
        widths = [max(len(row[i]) for row in rows) for i in range(5)]
        lines = [f"{self.title}"]
        for index, row in enumerate(rows):
            lines.append(
                " | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
            )
            if index == 0:
                lines.append("-+-".join("-" * width for width in widths))
        return "\n".join(lines)

    def report(self, folder: Path) -> Path:
        """Write the table next to the test's files and print it (visible with -s or on failure)."""
        path = folder / "day.txt"
        path.write_text(self.table() + "\n")
        print("\n" + self.table())
        return path


# ----------------------------------------------------------------- processes


def cmdline(pid: int) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""


def process_argvs() -> Iterator[tuple[int, list[bytes]]]:
    """(pid, argv) of every process whose command line can be read now."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        yield int(entry.name), argv


def pids_mentioning(text: str) -> list[int]:
    """Live (non-zombie) processes whose command line contains text."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and text in cmdline(int(entry.name)) and is_alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def started_processes(state_dir: Path) -> list[tuple[int, int, str]]:
    """(pid, start ticks, role) of every simulator process a box's state dir recorded."""
    found = []
    log = state_dir / "pids.log"
    for line in log.read_text().splitlines() if log.exists() else []:
        pid, ticks, role = line.split(" ", 2)
        if ticks.isdigit():
            found.append((int(pid), int(ticks), role))
    return found


def survivors(started: list[tuple[int, int, str]], state_dir: Path) -> list[str]:
    """What is still running of a box: its recorded pids, or anything naming its state dir."""
    left = [f"{pid} {role}" for pid, ticks, role in started if is_alive(pid, ticks)]
    left += [f"{pid} {cmdline(pid)}" for pid in pids_mentioning(str(state_dir))]
    return left


def wait_for(
    predicate: Callable[[], object], timeout_s: float, what: str, poll_s: float = 0.1
) -> object:
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(poll_s)


# ----------------------------------------------------------------- tmux


def require_tmux() -> str:
    """tmux's path; skip without it, but fail in CI (where .ci/run installs it)."""
    path = shutil.which("tmux")
    if path is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("tmux is missing in CI (.ci/run installs it)")
        pytest.skip("tmux is not installed (apt-get install tmux)")
    return path


class Tmux:
    """One detached tmux session on a private server socket, driven like a person would."""

    def __init__(self, width: int = 120, height: int = 36) -> None:
        self.tmux = require_tmux()
        self.socket = f"servedeck-e2e-{uuid.uuid4().hex[:8]}"
        self.width, self.height = width, height
        self.pane_pid: int | None = None

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.tmux, "-L", self.socket, *args], capture_output=True, text=True, timeout=30
        )

    def start(self, command: str, env: dict[str, str]) -> int:
        """Run the command in a new session; returns the pane's process id (the console).

        The session starts on a placeholder and the command is respawned into it once the
        window has its size: a program started with the session itself can read the
        default 80x24 before tmux applies -x/-y, and then never hears of the change.
        COLUMNS and LINES (pytest's own, inherited by the tmux server) would override
        the pane's real size, so they are removed.
        """
        exports = " ".join(f"{key}={value}" for key, value in env.items())
        created = self._run(
            "-f", "/dev/null", "new-session", "-d", "-x", str(self.width), "-y", str(self.height),
            "sleep 600",
            # Keep the pane after the console exits, so the exit is observable.
            ";", "set-option", "-g", "remain-on-exit", "on",
        )  # fmt: skip
        assert created.returncode == 0, created.stderr
        size = f"{self.width}x{self.height}"
        wait_for(lambda: self._display("#{window_width}x#{window_height}") == size, 10, size)
        respawned = self._run(
            "respawn-pane", "-k", "-t", "0", f"exec env -u COLUMNS -u LINES {exports} {command}"
        )
        assert respawned.returncode == 0, respawned.stderr
        self.pane_pid = int(self._display("#{pane_pid}"))
        return self.pane_pid

    def _display(self, fmt: str) -> str:
        return self._run("display-message", "-p", "-t", "0", fmt).stdout.strip()

    def send(self, *keys: str) -> None:
        """tmux key names: 'S', 'BTab' (shift+tab), 'Enter', 'q'."""
        for key in keys:
            assert self._run("send-keys", "-t", "0", key).returncode == 0
            time.sleep(0.15)

    def screen(self) -> str:
        result = self._run("capture-pane", "-p", "-t", "0")
        return result.stdout if result.returncode == 0 else ""

    def pane_dead(self) -> bool:
        result = self._run("display-message", "-p", "-t", "0", "#{pane_dead}")
        return result.returncode != 0 or result.stdout.strip() == "1"

    def wait_screen(self, predicate: Callable[[str], object], timeout_s: float, what: str) -> str:
        last = ""

        def check() -> object:
            nonlocal last
            last = self.screen()
            return predicate(last)

        try:
            wait_for(check, timeout_s, what, poll_s=0.25)
        except AssertionError as error:
            raise AssertionError(f"{error}; the screen was:\n{last}") from None
        return last

    def close(self) -> None:
        self._run("kill-server")
