"""The Deck uses the width there is: at 120 columns the GPU table has TX/RX and sparklines and
the GPU's name whole; the topology (`t`) shows every GPU with its CPU affinity and a legend;
Tab from the log goes to a widget with keys. The console runs over a canned host with eight
GPUs (tests/support/canned_host.py: no real GPU on this machine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.canned_host import CannedGpuDeck
from tests.support.gpu_boxes import rtx_pro_6000_box
from tests.support.screen_text import screen_lines
from tests.support.waiting import pilot_wait
from tui.app import ServedeckApp
from tui.core.config import load_profile_file
from tui.sim.gpu_model import SimGpuModel
from widgets.gpu_table import GpuTable

REPO = Path(__file__).resolve().parents[2]
KIMI = load_profile_file(REPO / "profiles" / "kimi-k25-int4-lxc.toml")
SIZES = [(80, 24), (120, 36)]


async def _deck(pilot, app: ServedeckApp) -> None:  # type: ignore[no-untyped-def]
    await pilot_wait(
        pilot,
        lambda: bool(app.query_one(GpuTable).row_keys),
        lambda: "the GPU table drawn",
        timeout_s=30.0,
    )
    await pilot.pause(0.1)


@pytest.mark.parametrize("size", SIZES)
async def test_gpu_table_uses_the_width(size: tuple[int, int]) -> None:
    app = ServedeckApp(KIMI, CannedGpuDeck(KIMI, rtx_pro_6000_box()))
    async with app.run_test(size=size) as pilot:
        await _deck(pilot, app)
        lines = screen_lines(app)
        header = next(line for line in lines if line.lstrip().startswith("GPU  Name"))
        rows = [line for line in lines if "RTX PRO" in line]
        assert len(rows) == 8, lines
        if size[0] >= 120:
            assert "TX/RX" in header and "Util 5m" in header, header
            assert all("RTX PRO 6000 " in row and "…" not in row for row in rows), rows
            assert len(header.rstrip()) >= size[0] - 10, "the columns use the width"


@pytest.mark.parametrize("size", SIZES)
async def test_topology_shows_every_gpu_and_a_legend(size: tuple[int, int]) -> None:
    app = ServedeckApp(KIMI, CannedGpuDeck(KIMI, rtx_pro_6000_box()))
    async with app.run_test(size=size) as pilot:
        await _deck(pilot, app)
        app.query_one(GpuTable).focus()
        await pilot.press("t")
        await pilot.pause(0.2)
        text = "\n".join(screen_lines(app))
        for index in range(8):
            assert f"GPU{index} " in text, text
        assert "NODE/SYS" in text or "NODE same NUMA node" in text, text
        await pilot.press("t")  # and back: the table, with the focus
        await pilot.pause(0.2)
        assert app.query_one(GpuTable).has_focus
        assert sum("RTX PRO" in line for line in screen_lines(app)) == 8


def test_the_simulator_states_each_gpus_cpu_affinity(tmp_path: Path) -> None:
    statics = SimGpuModel(tmp_path).statics
    assert [static.cpu_affinity for static in statics] == ["0-63"] * 4 + ["64-127"] * 4


@pytest.mark.parametrize("size", SIZES)
async def test_tab_from_the_log_goes_to_a_widget_with_keys(size: tuple[int, int]) -> None:
    app = ServedeckApp(KIMI, CannedGpuDeck(KIMI, rtx_pro_6000_box()))
    async with app.run_test(size=size) as pilot:
        await _deck(pilot, app)
        app.query_one("#log-pane Log").focus()
        await pilot.press("tab")
        focused = app.focused
        assert isinstance(focused, GpuTable), focused
        await pilot.press("tab")
        assert app.focused is app.query_one("#log-pane Log")
