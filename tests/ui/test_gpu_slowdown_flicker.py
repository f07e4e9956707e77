"""A power cap that comes and goes under load keeps its row: no layout per flicker.

Under load a GPU's power-cap slowdown is read every few seconds and comes and goes with it.
The row under a slowed GPU used to come and go too, and each time the table's height
changed and the whole screen was laid out again: on one busy H100 half the console's
main-thread samples were in Textual's layout (py-spy, tests/perf/results/
app_vs_nvitop_h100_2026-12-07b.txt). The row now stays while the GPU was slowed within
the history's hold (a minute), saying so, and goes after it. Counted, not timed: layouts
over ticks fed to a real GpuPane on the console's screen, from a real GpuHistory.
"""

from __future__ import annotations

import dataclasses

from textual.screen import Screen

from tests.support.gpu_boxes import busy_tick, rtx_pro_6000_box
from tests.support.gpu_pane_app import GpuPaneApp
from tui.gpu.history import GpuHistory
from tui.gpu.model import GpuBoxSnapshot
from tui.screens.cropped_screen import CroppedScreen
from widgets.gpu_pane import GpuPane
from widgets.gpu_table import GpuTable

TICKS = 16


class _ConsoleScreenApp(GpuPaneApp):
    def get_default_screen(self) -> Screen[None]:
        return CroppedScreen()


def _tick(snapshot: GpuBoxSnapshot, tick: int, capped: bool) -> GpuBoxSnapshot:
    """GPU 1 busy at this tick, its power cap on or off as NVML reads it."""
    busy = busy_tick(snapshot, tick)
    reasons = ("sw_power_cap",) if capped else ()
    samples = tuple(
        dataclasses.replace(s, sm_clock_mhz=1755 + tick, throttle_reasons=reasons)
        if s.index == 1
        else s
        for s in busy.samples
    )
    return dataclasses.replace(busy, samples=samples)


def _show(pane: GpuPane, history: GpuHistory, sample: GpuBoxSnapshot) -> None:
    """One tick as the console draws it: recorded in the history, shown with its trends."""
    history.add(sample)
    pane.update_view(sample, history.trends())


async def test_a_flickering_power_cap_keeps_its_row_and_lays_nothing_out() -> None:
    snapshot = rtx_pro_6000_box()
    app = _ConsoleScreenApp(snapshot)
    history = GpuHistory()
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        pane, table, screen = app.query_one(GpuPane), app.query_one(GpuTable), app.screen
        layouts: list[int] = []
        now = [0]
        refresh_layout = screen._refresh_layout

        def counted_layout(*args, **kwargs):  # type: ignore[no-untyped-def]
            layouts.append(now[0])
            return refresh_layout(*args, **kwargs)

        screen._refresh_layout = counted_layout  # type: ignore[method-assign]
        seen: list[tuple[bool, str]] = []
        for tick in range(1, TICKS + 1):
            now[0] = tick
            capped = ((tick + 1) // 2) % 2 == 1  # on two ticks, off two, as NVML reads it
            _show(pane, history, _tick(snapshot, tick, capped))
            await pilot.pause()
            await pilot.pause()
            assert "slow-1" in table.row_keys, f"tick {tick}: the row went"
            seen.append((capped, table.cell("slow-1", "name")))
        # the row's first appearance lays the screen out (at tick 1); no flicker after it does
        assert set(layouts) <= {1}, layouts
        for capped, name in seen:
            assert ("<1m ago" in name) is not capped, (capped, name)
        assert "power cap" in table.cell("slow-1", "util")


async def test_the_row_goes_a_minute_after_the_last_slowdown() -> None:
    snapshot = rtx_pro_6000_box()
    app = _ConsoleScreenApp(snapshot)
    history = GpuHistory()
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        pane, table = app.query_one(GpuPane), app.query_one(GpuTable)
        for tick, capped in ((1, True), (2, False), (61, False), (62, False)):
            _show(pane, history, _tick(snapshot, tick, capped))
            await pilot.pause()
            if tick <= 61:  # last slowed at 1: within the minute through 61
                assert "slow-1" in table.row_keys, tick
        assert "slow-1" not in table.row_keys


async def test_at_80_columns_the_held_row_says_so_in_its_name() -> None:
    snapshot = rtx_pro_6000_box()
    app = _ConsoleScreenApp(snapshot)
    history = GpuHistory()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        pane, table = app.query_one(GpuPane), app.query_one(GpuTable)
        for tick, capped in ((1, True), (2, False)):
            _show(pane, history, _tick(snapshot, tick, capped))
            await pilot.pause()
        assert "<1m ago" in table.cell("slow-1", "name")
        assert "SM 1757 MHz" in table.cell("slow-1", "memory")  # the clock it runs at now


def test_the_history_holds_the_last_reasons_for_its_hold_only() -> None:
    snapshot = rtx_pro_6000_box()
    history = GpuHistory(slowdown_hold_s=10.0)
    history.add(_tick(snapshot, 1, True))
    assert history.trend(1).recent_slowdown_reasons == ("sw_power_cap",)
    history.add(_tick(snapshot, 11, False))
    assert history.trend(1).recent_slowdown_reasons == ("sw_power_cap",)
    history.add(_tick(snapshot, 12, False))
    assert history.trend(1).recent_slowdown_reasons == ()
    assert history.trend(0).recent_slowdown_reasons == ()  # never slowed
