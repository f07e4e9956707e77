"""The operator's whole day on the simulator, driven key by key through Textual's Pilot.

Open the console with the service stopped; start it and watch the load with no key
pressed; the ready notification and live metrics; one-key benchmark; stop, which
leaves two orphaned workers holding GPU memory; clean them up in three keys; one
key exports the summary. Everything is real: the SimBox's server, EngineCore and
workers are processes, the benchmark is its own process speaking HTTP, the kill
goes through pidfds. The keystrokes and wall time of each step are printed as a
table (run with -s) and written to day.txt in the test's tmp dir.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.e2e_support import (
    E2E_LOAD_S,
    SECRET,
    SECRET_ENV,
    DayLog,
    started_processes,
    survivors,
    wait_for,
)
from tui.app import ServedeckApp
from tui.bench.history import read_history
from tui.compose import open_deck
from tui.core import paths
from tui.core.audit import read_audit
from tui.core.config import demo_profile
from tui.gpu.model import total_memory_bytes
from tui.screens.confirm_action import ConfirmActionScreen
from tui.screens.kill_confirm import KillConfirmScreen
from tui.serving.load.tracker import LOADING_ORDER, Phase
from tui.sim.procs import is_alive
from widgets.header_bar import HeaderBar
from widgets.load_strip import LoadStrip, render_strip
from widgets.log_pane import LogPane
from widgets.procs_pane import ProcsPane

GIB = 1024**3


class Keys:
    """Presses keys through the pilot and books them to the current step."""

    def __init__(self, pilot, log: DayLog) -> None:  # type: ignore[no-untyped-def]
        self.pilot = pilot
        self.log = log

    async def press(self, *keys: str) -> None:
        for key in keys:
            self.log.steps[-1].keys.append(key)
            await self.pilot.press(key)
            await self.pilot.pause(0.05)


async def until(pilot, predicate, timeout_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(timeout_s / 0.1)):
        if predicate():
            return
        await pilot.pause(0.1)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


def gpu_used_bytes(app: ServedeckApp) -> int:
    snapshot = app.last_gpu
    assert snapshot is not None and snapshot.available
    return total_memory_bytes(snapshot.samples)[0]


def notifications(app: ServedeckApp) -> list[str]:
    return [f"{note.title}: {note.message}" for note in app._notifications]


@pytest.fixture
def secret_profile(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """The demo profile with an API key env var; the key is planted in the environment."""
    monkeypatch.setenv(SECRET_ENV, SECRET)
    base = demo_profile()
    return replace(base, service=replace(base.service, api_key_env=SECRET_ENV))


async def test_operators_day_on_the_simulator(secret_profile, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    day = DayLog("Operator's day (Textual Pilot, 120x36)")
    deck = open_deck(secret_profile, demo_load_s=E2E_LOAD_S, demo_orphans_on_stop=2)
    box = deck.box
    assert box is not None
    state_dir = box.state_dir
    app = ServedeckApp(deck.profile, deck)
    started: list[tuple[int, int, str]] = []
    opened_s = time.monotonic()
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            keys = Keys(pilot, day)

            with day.step("open console, service stopped, GPUs idle", opened_s):
                header = app.query_one(HeaderBar)
                await until(pilot, lambda: header.connection_state == "connected", 30, "connect")
                await until(pilot, lambda: app.unit_state is not None, 30, "the unit's state")
                await until(pilot, lambda: app.last_gpu is not None, 30, "a GPU sample")
                assert "SIMULATED" in header.render().plain
                assert app.unit_state is not None and app.unit_state.active_state == "inactive"
                idle_bytes = gpu_used_bytes(app)  # a sample taken before the start
                assert idle_bytes == 0

            with day.step("start (S, confirm); watch the load, no key"):
                await keys.press("S")
                await until(pilot, lambda: isinstance(app.screen, ConfirmActionScreen), 10, "ask")
                # Cancel has the focus from the dialog's first frame (its AUTO_FOCUS).
                await until(
                    pilot,
                    lambda: (
                        app.screen.focused is not None and app.screen.focused.id == "confirm-no"
                    ),
                    10,
                    "the focus on Cancel",
                )
                await keys.press("shift+tab")
                assert app.screen.focused is not None and app.screen.focused.id == "confirm-yes"
                await keys.press("enter")
                pressed_before_watch = len(day.steps[-1].keys)
                phases: list[str] = []
                shard_texts: set[str] = set()
                etas: list[float] = []
                memory: list[int] = []
                strip = app.query_one(LoadStrip)
                while not app.ready:
                    progress = strip.progress
                    if progress is not None:
                        if not phases or phases[-1] != progress.phase:
                            phases.append(progress.phase)
                        text = render_strip(progress, strip.metrics).plain
                        if "shard " in text:
                            shard_texts.add(text.split("shard ")[1].split()[0])
                        if progress.is_loading and progress.eta_s is not None:
                            etas.append(progress.eta_s)
                    if app.last_gpu is not None and app.last_gpu.available:
                        memory.append(gpu_used_bytes(app))
                    await pilot.pause(0.1)
                    assert len(memory) < 1200, f"no ready after 120 s; phases {phases}"
                # Ready can arrive between two strip redraws: the strip then says serving.
                await until(
                    pilot,
                    lambda: strip.progress is not None and strip.progress.phase == Phase.SERVING,
                    10,
                    "the strip to say serving",
                )
                phases.append(Phase.SERVING) if phases[-1] != Phase.SERVING else None
                assert len(day.steps[-1].keys) == pressed_before_watch  # watched, not driven
                loading = [phase for phase in phases if phase != Phase.STOPPED]
                ranks = [LOADING_ORDER.index(Phase(phase)) for phase in loading]
                assert ranks == sorted(ranks), f"phases advance in order: {phases}"
                # Which phases the load went through is the strip's own timeline: the
                # phases sampled every 0.1 s miss short ones when the machine is loaded
                # (['weights', 'compile', 'serving'] was seen).
                assert strip.progress is not None
                timeline = [s.phase for s in strip.progress.timeline if s.phase != Phase.STOPPED]
                spans = [LOADING_ORDER.index(Phase(phase)) for phase in timeline]
                assert spans == sorted(spans), f"phases advance in order: {timeline}"
                assert {Phase.WEIGHTS, Phase.SERVING} <= set(timeline), timeline
                assert len(timeline) >= 4, timeline
                done = sorted(int(k.split("/")[0]) for k in shard_texts)
                assert len(done) >= 3 and all(k.endswith("/64") for k in shard_texts), shard_texts
                assert done[-1] > done[0]
                assert etas, "an ETA was shown while loading"
                # The last GPU sample can be a refresh older than ready (a 5 s load leaves
                # its last phases well under a second): the plateau shows on the next one.
                await until(
                    pilot, lambda: gpu_used_bytes(app) > 500 * GIB, 10, "GPU memory at its plateau"
                )
                memory.append(gpu_used_bytes(app))
                # From the idle sample before the start to the plateau, with the climb shown
                # between. The first sample watched is no idle figure: the first refresh after
                # the start can come late, with weights loaded (43 GB on a loaded machine).
                assert idle_bytes < 10 * GIB and max(memory) > 500 * GIB, (idle_bytes, max(memory))
                assert min(memory) < max(memory), memory

            with day.step("ready notification; live serving metrics"):
                assert any("is ready" in note for note in notifications(app)), notifications(app)

                def strip_text() -> str:
                    return render_strip(strip.progress, strip.metrics).plain

                # Rates need two scrapes of /metrics (one poll interval apart).
                await until(pilot, lambda: "decode" in strip_text(), 30, "serving metrics")
                text = strip_text()
                assert "ready" in text and "run " in text and "decode" in text, text
                log = app.query_one(LogPane).log_view
                assert log.is_vertical_scroll_end, "the log follows its newest line"
                started = started_processes(state_dir)

            with day.step("quick benchmark (b); results and history"):
                await keys.press("b")
                await until(pilot, lambda: app.bench.process is not None, 30, "bench start")
                await until(pilot, lambda: app.bench.process is None, 120, "bench end")
                history = read_history()
                assert len(history) == 1 and history[0].preset == "quick"
                assert history[0].single_stream_tok_s and history[0].single_stream_tok_s > 10
                assert any(note.startswith("Benchmark:") for note in notifications(app))

            with day.step("stop (X, confirm); leftovers show (3)"):
                await keys.press("X")
                await until(pilot, lambda: isinstance(app.screen, ConfirmActionScreen), 10, "ask")
                await keys.press("shift+tab", "enter")
                await until(
                    pilot,
                    lambda: (
                        app.unit_state is not None and app.unit_state.active_state == "inactive"
                    ),
                    30,
                    "the unit to stop",
                )
                await until(pilot, lambda: len(box.live_processes()) == 2, 15, "two orphans")
                orphans = {pid: role for pid, role in box.live_processes()}
                assert set(orphans.values()) == {"VLLM::Worker_TP0", "VLLM::Worker_TP1"}
                for pid in orphans:  # reparented to PID 1 (or a subreaper), not the server
                    ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
                    assert ppid == 1 or ppid not in {p for p, _t, _r in started}
                await keys.press("3")

                def leftovers_listed() -> bool:
                    listing = app.procs.listing
                    return listing is not None and {
                        proc.pid for proc in listing.processes if proc.klass == "leftover"
                    } == set(orphans)

                await until(pilot, leftovers_listed, 20, "the leftovers in Processes")
                assert app.query_one(ProcsPane).row_count >= 2
                await until(pilot, lambda: gpu_used_bytes(app) > 100 * GIB, 10, "held memory")
                held = gpu_used_bytes(app)

            with day.step("clean up (K, focus Kill, enter)"):
                await keys.press("K")
                await until(pilot, lambda: isinstance(app.screen, KillConfirmScreen), 20, "modal")
                modal = app.screen
                assert isinstance(modal, KillConfirmScreen)
                assert {proc.pid for proc in modal.targets} == set(orphans)
                # The safe button takes the focus once the dialog has mounted.
                await until(
                    pilot,
                    lambda: modal.focused is not None and modal.focused.id == "kill-cancel",
                    10,
                    "the focus on Cancel",
                )
                await keys.press("shift+tab")
                assert modal.focused is not None and modal.focused.id == "kill-confirm"
                await keys.press("enter")
                await until(
                    pilot, lambda: not any(is_alive(pid) for pid in orphans), 30, "orphans ended"
                )
                await until(pilot, lambda: gpu_used_bytes(app) == 0, 15, "GPU memory released")
                assert held > 100 * GIB
                # The outcome is written once the kill has re-read GPU memory.
                await until(
                    pilot,
                    lambda: any(r["event"] == "kill-outcome" for r in read_audit()),
                    30,
                    "the kill outcome in the audit log",
                )
                records = list(read_audit())
                events = [record["event"] for record in records]
                assert "kill-request" in events and "kill-outcome" in events, events
                outcome = next(r for r in records if r["event"] == "kill-outcome")
                assert {o["pid"] for o in outcome["outcomes"]} == set(orphans)
                assert {o["outcome"] for o in outcome["outcomes"]} == {"terminated"}, outcome
                assert outcome["freed_bytes"] and outcome["freed_bytes"] > 100 * GIB
                await until(
                    pilot,
                    lambda: any("2 terminated" in n for n in notifications(app)),
                    10,
                    "the report",
                )

            with day.step("export the summary (E)"):
                folder = paths.data_dir() / "summaries"
                await keys.press("E")
                await until(
                    pilot,
                    lambda: folder.is_dir() and any(folder.glob("*.md")),
                    60,
                    "the summary file",
                )
                (summary_path,) = folder.glob("*.md")
                summary = summary_path.read_text()
                assert "Load timeline" in summary
                assert "quick" in summary and "## Benchmarks" in summary
                assert "kill-request" in summary and "kill-outcome" in summary
                assert SECRET not in summary
                assert SECRET not in paths.audit_log_path().read_text()

            await pilot.press("q")
        assert app.return_code in (0, None)
        wait_for(lambda: not survivors(started, state_dir), 15, "every simulator process to end")
    finally:
        day.report(tmp_path)
        for pid, _ticks, _role in started:  # a subreaper test process reaps what it adopted
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
    assert sum(len(step.keys) for step in day.steps) <= 12
