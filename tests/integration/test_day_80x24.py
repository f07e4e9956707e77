"""Every pane and dialog at 80x24 in each state of the operator's day on the simulator.

Fails on any truncated PID or number: an ellipsis next to a digit, a process's PID
not shown whole where it is listed, or a second ETA. States: stopped, loading,
serving, after a benchmark, stopped with leftovers, after the cleanup. Real parts:
the SimBox's processes, its HTTP server, the kill through pidfds.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from tests.support.e2e_support import E2E_LOAD_S
from tests.support.screen_text import screen_text
from tui.app import ServedeckApp
from tui.compose import open_deck
from tui.core.config import BenchmarkPreset, demo_profile
from tui.gpu.model import total_memory_bytes
from tui.screens.confirm_action import ConfirmActionScreen
from tui.screens.help import HelpScreen
from tui.screens.kill_confirm import KillConfirmScreen
from widgets.header_bar import HeaderBar

SIZE = (80, 24)
GIB = 1024**3
# A figure cut by an ellipsis: "12…", "…34", "4.2…", its unit cut ("43.7 …") or a whole
# cell cut to a lone "…". GPU model names are names, not figures.
CUT_NUMBER = re.compile(r"\d[\d.,:/]*…|…[\d.,:/]*\d|\d …|(?<!\S)…(?!\S)")
NAMES = ("RTX PRO 6…",)
PANES = ("1", "2", "3", "4", "5")


def cut_numbers(text: str) -> list[str]:
    found = []
    for line in text.splitlines():
        clean = line
        for name in NAMES:
            clean = clean.replace(name, "")
        found += [f"{match.group(0)!r} in {line.strip()!r}" for match in CUT_NUMBER.finditer(clean)]
        if len(line) >= SIZE[0] and re.search(r"\d\d$", line):  # a figure running off the edge
            found.append(f"cut at the right edge: {line.strip()!r}")
    return found


class Day:
    """Renders the screens of one state and collects every problem found."""

    def __init__(self, app: ServedeckApp, pilot) -> None:  # type: ignore[no-untyped-def]
        self.app = app
        self.pilot = pilot
        self.problems: list[str] = []
        self.screens: dict[str, str] = {}

    def check(self, name: str) -> str:
        text = screen_text(self.app)
        self.screens[name] = text
        self.problems += [f"{name}: {problem}" for problem in cut_numbers(text)]
        if "ETA" in text:
            self.problems.append(f"{name}: a second ETA next to the ready time")
        return text

    def pids_not_whole(self, text: str) -> list[int]:
        listing = self.app.procs.listing
        if listing is None:
            return []
        rows = listing.processes[:8]  # the rows that fit above the footer
        return [p.pid for p in rows if not re.search(rf"(?<!\d){p.pid}(?!\d)", text)]

    async def processes_pane(self, name: str) -> None:
        """Every listed PID whole on the pane. The simulator's processes come and go: a
        listing newer than the drawn frame is looked at again once drawn, so only a PID
        missing from five frames in a row counts."""
        for _ in range(5):
            missing = self.pids_not_whole(self.check(name))
            if not missing:
                break
            await self.pilot.pause(0.5)
        self.problems += [f"{name}: PID {pid} not shown whole" for pid in missing]

    async def panes(self, state: str) -> None:
        for key in PANES:
            await self.pilot.press(key)
            await self.pilot.pause(0.4)
            if key == "3":
                await self.processes_pane(f"{state}/{key}")
            else:
                self.check(f"{state}/{key}")
        await self.pilot.press("1")
        await self.pilot.pause(0.2)

    async def dialog(self, state: str, key: str, screen_type: type, close: str = "escape") -> None:
        await self.pilot.press(key)
        await until(self.pilot, lambda: isinstance(self.app.screen, screen_type), 20, key)
        await self.pilot.pause(0.3)
        self.check(f"{state}/{key} dialog")
        await self.pilot.press(close)
        await until(self.pilot, lambda: not isinstance(self.app.screen, screen_type), 10, close)


async def until(pilot, predicate, timeout_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(timeout_s / 0.1)):
        if predicate():
            return
        await pilot.pause(0.1)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


def used_bytes(app: ServedeckApp) -> int:
    snapshot = app.last_gpu
    return total_memory_bytes(snapshot.samples)[0] if snapshot and snapshot.available else 0


async def test_every_screen_of_the_day_at_80x24(tmp_path: Path) -> None:
    # `b` runs the quick preset with 32 tokens a request, not 128 (10 s to 4): the panes
    # after it show the same figures, with as many digits.
    base = demo_profile()
    quick = BenchmarkPreset("quick", (1,), 128, 32, 4)
    presets = {**base.benchmark.presets, "quick": quick}
    profile = replace(base, benchmark=replace(base.benchmark, presets=presets))
    deck = open_deck(profile, demo_load_s=E2E_LOAD_S * 2, demo_orphans_on_stop=2)
    app = ServedeckApp(deck.profile, deck)
    async with app.run_test(size=SIZE) as pilot:
        day = Day(app, pilot)
        header = app.query_one(HeaderBar)
        await until(pilot, lambda: header.connection_state == "connected", 30, "connect")
        await until(pilot, lambda: app.unit_state is not None, 30, "the unit's state")
        await until(pilot, lambda: app.last_gpu is not None, 30, "a GPU sample")

        await day.panes("stopped")
        await day.dialog("stopped", "question_mark", HelpScreen)
        await day.dialog("stopped", "S", ConfirmActionScreen)

        await pilot.press("S")
        await until(pilot, lambda: isinstance(app.screen, ConfirmActionScreen), 10, "ask")
        await pilot.press("shift+tab", "enter")
        await until(
            pilot,
            lambda: app.progress is not None and app.progress.phase == "weights",
            60,
            "the weights phase",
        )
        await until(
            pilot,
            lambda: "ready in about" in screen_text(app),
            30,
            "the ready time on the Deck",
        )
        loading = day.check("loading/1")
        assert "ready in about" in loading and "simulator" in loading, loading

        await until(pilot, lambda: app.ready, 120, "ready")
        await until(pilot, lambda: used_bytes(app) > 500 * GIB, 20, "the memory plateau")
        # Flat memory: the fill rate is gone by the next sample or two.
        await until(pilot, lambda: "G/s" not in screen_text(app), 10, "the fill rate to go")
        await day.panes("serving")
        await day.dialog("serving", "question_mark", HelpScreen)
        await day.dialog("serving", "X", ConfirmActionScreen)

        await pilot.press("b")
        await until(pilot, lambda: app.bench.process is not None, 30, "bench start")
        await until(pilot, lambda: app.bench.process is None, 180, "bench end")
        await day.panes("benched")

        await pilot.press("X")
        await until(pilot, lambda: isinstance(app.screen, ConfirmActionScreen), 10, "ask")
        await pilot.press("shift+tab", "enter")
        await until(
            pilot,
            lambda: app.unit_state is not None and not app.unit_state.is_active,
            30,
            "the unit to stop",
        )
        await pilot.press("3")
        await until(
            pilot,
            lambda: (
                app.procs.listing is not None and len(app.procs.listing.of_class("leftover")) == 2
            ),
            30,
            "two leftovers",
        )
        await day.panes("leftovers")
        # Offered on the Processes pane's footer while there are leftovers (at 80 columns the
        # Deck's footer has the log's keys first).
        await pilot.press("3")
        await until(pilot, lambda: "K Clean up" in screen_text(app), 45, "K offered (leftovers)")
        await pilot.press("K")
        await until(pilot, lambda: isinstance(app.screen, KillConfirmScreen), 20, "the dialog")
        # Drawn, not only pushed: a loaded machine paints it a frame or more later.
        await until(pilot, lambda: "SIGKILL after" in screen_text(app), 20, "the dialog drawn")
        dialog = day.check("leftovers/K dialog")
        for proc in app.screen.targets:  # type: ignore[attr-defined]
            assert re.search(rf"(?<!\d){proc.pid}(?!\d)", dialog), (proc.pid, dialog)
        await pilot.press("shift+tab", "enter")
        await until(
            pilot,
            lambda: app.procs.listing is not None and not app.procs.listing.of_class("leftover"),
            60,
            "the leftovers gone",
        )
        await day.panes("cleaned")
        await pilot.press("3")  # where K would be offered: not, with nothing left
        await until(pilot, lambda: "Kill" in screen_text(app), 20, "the Processes pane's keys")
        await until(
            pilot, lambda: "K Clean up" not in screen_text(app), 20, "K gone (nothing left)"
        )
        (tmp_path / "screens.txt").write_text(
            "\n\n".join(f"== {name}\n{text}" for name, text in day.screens.items())
        )
        await pilot.press("q")
    assert not day.problems, "\n".join(day.problems)
