"""The operator's whole day in a real terminal: tmux send-keys in, capture-pane out.

The same steps as tests/integration/test_e2e_day.py, but the console is `servedeck demo`
started as a person would start it (here with a short load and a demo profile
file that names an API key env var, whose planted value must never reach the
summary). Only the screen and the files servedeck writes are looked at. The
keystrokes and wall time of each step are printed (run with -s) and written to
day.txt in the test's tmp dir.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pytest

from tests.support.e2e_support import (
    E2E_LOAD_S,
    SECRET,
    SECRET_ENV,
    DayLog,
    Tmux,
    started_processes,
    survivors,
    wait_for,
)
from tui.bench.history import read_history
from tui.core import paths
from tui.core.audit import read_audit
from tui.sim.procs import is_alive

REPO = Path(__file__).resolve().parents[2]
PHASE_LABELS = (
    "starting",
    "loading weights",
    "compiling",
    "allocating KV cache",
    "capturing CUDA graphs",
    "serving",
)
PHASE_STARTS = tuple(f" {label}  " for label in PHASE_LABELS)  # the load strip's first line
TOTAL_MEMORY = re.compile(r"Σ.*?(\d+)/765G")


class Keys:
    def __init__(self, tmux: Tmux, day: DayLog) -> None:
        self.tmux = tmux
        self.day = day

    def press(self, *keys: str) -> None:
        self.day.steps[-1].keys.extend(keys)
        self.tmux.send(*keys)


def total_gib(screen: str) -> int | None:
    match = TOTAL_MEMORY.search(screen)
    return int(match.group(1)) if match else None


@pytest.mark.tmux
def test_operators_day_in_tmux(tmp_path: Path) -> None:
    tmux = Tmux(120, 36)
    day = DayLog("Operator's day (tmux send-keys / capture-pane, 120x36)")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    profile_file = tmp_path / "demo-with-key.toml"
    profile_file.write_text(
        (REPO / "profiles" / "demo.toml")
        .read_text()
        .replace('engine = "vllm"', f'engine = "vllm"\napi_key_env = "{SECRET_ENV}"')
    )
    env = {
        "TMPDIR": str(scratch),  # the demo's box makes its state dir here
        "PYTHONPATH": str(REPO),
        SECRET_ENV: SECRET,
        # The same config, data and log dirs as this test process (conftest's isolated_dirs).
        **{
            f"SERVEDECK_{n}_DIR": os.environ[f"SERVEDECK_{n}_DIR"]
            for n in ("CONFIG", "DATA", "LOG")
        },
    }
    keys = Keys(tmux, day)
    started: list[tuple[int, int, str]] = []
    state_dir: Path | None = None
    command = (
        f"{sys.executable} -m tui demo --stopped --load-seconds {E2E_LOAD_S:g} -p {profile_file}"
    )
    try:
        with day.step("open console, service stopped, GPUs idle"):
            tmux.start(command, env)
            screen = tmux.wait_screen(
                lambda s: "SIMULATED" in s and "inactive" in s and total_gib(s) is not None,
                60,
                "the idle console",
            )
            assert total_gib(screen) == 0, screen
            assert "not serving" in screen
            (state_dir,) = scratch.glob("servedeck-sim-*")

        with day.step("start (S, confirm); watch the load, no key"):
            keys.press("S")
            tmux.wait_screen(lambda s: "Start vllm-kimi-k25-int4.service?" in s, 20, "the ask")
            keys.press("BTab", "Enter")
            pressed = len(day.steps[-1].keys)
            phases: list[str] = []
            shards: set[str] = set()
            etas = 0
            memory: list[int] = []
            deadline = time.monotonic() + 40
            while True:
                screen = tmux.screen()
                strip = [line for line in screen.splitlines() if line.startswith(PHASE_STARTS)]
                label = next(
                    (p for p in PHASE_LABELS if strip and strip[0].startswith(f" {p}  ")), None
                )
                if label and (not phases or phases[-1] != label):
                    phases.append(label)
                shards.update(re.findall(r"shard (\d+/\d+) ", screen))
                etas += "ready in about " in screen
                if (gib := total_gib(screen)) is not None:
                    memory.append(gib)
                if "● ready" in screen:
                    break
                if time.monotonic() > deadline:
                    (tmp_path / "screen.txt").write_text(screen)
                    raise AssertionError(f"not ready in 40 s:\n{screen}")
                time.sleep(0.2)
            assert len(day.steps[-1].keys) == pressed  # watched, not driven
            ranks = [PHASE_LABELS.index(label) for label in phases]
            assert ranks == sorted(ranks) and len(ranks) >= 3, phases
            assert "loading weights" in phases, phases
            done = sorted(int(k.split("/")[0]) for k in shards)
            assert len(done) >= 2 and done[-1] > done[0], shards
            assert all(k.endswith("/64") for k in shards), shards
            assert etas, "a ready time was on screen while loading"
            # The GPU row can be a refresh older than ready: the plateau shows on the next one.
            plateau_deadline = time.monotonic() + 10
            while max(memory) <= 500 and time.monotonic() < plateau_deadline:
                time.sleep(0.2)
                if (gib := total_gib(tmux.screen())) is not None:
                    memory.append(gib)
            assert memory[0] < 100 and max(memory) > 500, memory

        with day.step("ready notification; live serving metrics"):
            screen = tmux.wait_screen(
                lambda s: "is ready" in s and "run " in s and "decode" in s, 30, "live metrics"
            )
            assert "serving" in screen
            started = started_processes(state_dir)

        with day.step("quick benchmark (b); results and history"):
            keys.press("b")
            screen = tmux.wait_screen(lambda s: "quick done" in s, 120, "the benchmark results")
            assert "TTFT" in screen and "out tok/s" in screen
            # `servedeck demo` keeps its records in the demo's own folders.
            with paths.demo_records():
                wait_for(lambda: len(read_history()) == 1, 10, "the run in the history")
                assert read_history()[0].preset == "quick"
            assert read_history() == []  # the real history stays clean

        with day.step("stop (X, confirm); leftovers show (3)"):
            keys.press("X")
            tmux.wait_screen(lambda s: "Stop vllm-kimi-k25-int4.service?" in s, 20, "the ask")
            keys.press("BTab", "Enter")
            tmux.wait_screen(lambda s: "inactive" in s, 30, "the unit to stop")
            orphans = wait_for(
                lambda: [pid for pid, t, _r in started_processes(state_dir) if is_alive(pid, t)],
                15,
                "the orphans",
            )
            assert len(orphans) == 2  # type: ignore[arg-type]
            keys.press("3")
            screen = tmux.wait_screen(
                lambda s: s.count("leftover") >= 2 and "press K to clean up" in s,
                30,
                "the leftovers in Processes",
            )
            assert all(str(pid) in screen for pid in orphans)  # type: ignore[union-attr]

        with day.step("clean up (K, focus Kill, enter)"):
            keys.press("K")
            tmux.wait_screen(lambda s: "End 2 process(es)" in s, 20, "the kill modal")
            keys.press("BTab", "Enter")
            tmux.wait_screen(lambda s: "2 terminated" in s, 40, "the kill report")
            assert not any(is_alive(pid) for pid in orphans)  # type: ignore[union-attr]
            with paths.demo_records():
                events = [record["event"] for record in read_audit()]
            assert "kill-request" in events and "kill-outcome" in events, events
            tmux.wait_screen(lambda s: "0 GPU process(es)" in s, 20, "an empty process list")

        with day.step("back to the Deck (1): GPU memory released"):
            keys.press("1")
            tmux.wait_screen(lambda s: total_gib(s) == 0, 20, "GPU memory to drop to 0")

        with day.step("export the summary (E)"):
            with paths.demo_records():
                folder = paths.data_dir() / "summaries"
            keys.press("E")
            wait_for(lambda: folder.is_dir() and any(folder.glob("*.md")), 60, "the summary")
            tmux.wait_screen(lambda s: "Summary exported" in s, 20, "the export notice")
            (summary_path,) = folder.glob("*.md")
            summary = summary_path.read_text()
            assert "Load timeline" in summary
            assert "quick" in summary and "No benchmark runs" not in summary
            assert "kill-request" in summary and "kill-outcome" in summary
            assert SECRET not in summary
            with paths.demo_records():
                assert SECRET not in paths.audit_log_path().read_text()
            assert not paths.audit_log_path().exists()  # the real audit log stays clean

        tmux.send("q")
        wait_for(tmux.pane_dead, 30, "the console to exit on q")
        wait_for(lambda: not survivors(started, state_dir), 15, "every simulator process to end")
        assert not state_dir.exists()
    finally:
        tmux.close()
        day.report(tmp_path)
    assert sum(len(step.keys) for step in day.steps) <= 15
