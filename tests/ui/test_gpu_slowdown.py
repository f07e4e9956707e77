"""The Deck's GPU table says when a GPU is slowed: SM/memory clocks and the reason."""

from __future__ import annotations

import dataclasses

from tests.support.gpu_boxes import rtx_pro_6000_box
from tests.support.gpu_pane_app import GpuPaneApp
from tui.gpu.model import GpuBoxSnapshot, GpuSample, slowdown_text
from widgets.gpu_table import GpuTable


def _slowed(snapshot: GpuBoxSnapshot, index: int, reasons: tuple[str, ...]) -> GpuBoxSnapshot:
    samples = tuple(
        dataclasses.replace(s, sm_clock_mhz=1140, memory_clock_mhz=14001, throttle_reasons=reasons)
        if s.index == index
        else s
        for s in snapshot.samples
    )
    return dataclasses.replace(snapshot, samples=samples)


def test_slowdown_text_names_the_clock_and_the_reason() -> None:
    sample = GpuSample(index=0, sm_clock_mhz=1140, throttle_reasons=("sw_power_cap",))
    assert slowdown_text(sample) == "SM 1140 MHz: power cap"
    assert slowdown_text(GpuSample(index=0, sm_clock_mhz=1980)) is None  # idle or full speed
    unknown_clock = GpuSample(index=0, throttle_reasons=("hw_thermal",))
    assert slowdown_text(unknown_clock) == "SM ? MHz: hw thermal"  # never a guessed 0


async def test_table_shows_clocks_and_reason_under_a_slowed_gpu() -> None:
    app = GpuPaneApp(_slowed(rtx_pro_6000_box(), 2, ("sw_power_cap",)))
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        table = app.query_one(GpuTable)
        keys = table.row_keys
        assert keys.index("slow-2") == keys.index("gpu-2") + 1
        assert [key for key in keys if key.startswith("slow-")] == ["slow-2"]
        assert "SM 1140 mem 14001 MHz" in table.cell("slow-2", "memory")
        assert "power cap" in table.cell("slow-2", "util")
        await pilot.press("down", "down", "down")  # GPU 0 -> 1 -> 2 -> 3: the row is skipped
        await pilot.pause()
        assert table.cursor_key == "gpu-3"


async def test_compact_table_keeps_the_sm_clock_and_reason_at_80_columns() -> None:
    app = GpuPaneApp(_slowed(rtx_pro_6000_box(), 0, ("sw_power_cap",)))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.query_one(GpuTable)
        assert "SM 1140 MHz" in table.cell("slow-0", "memory")
        assert "power cap" in table.cell("slow-0", "util")
