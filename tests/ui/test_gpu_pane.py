"""GpuPane: row-level repaints, selection, topology toggle, layouts, and SVG snapshots."""

from __future__ import annotations

from collections.abc import Sequence

from textual.color import Color
from textual.filter import LineFilter
from textual.strip import Strip
from textual.widgets import Static

from tests.support.gpu_boxes import (
    GIB,
    loading_history,
    no_driver_box,
    rtx_pro_6000_box,
    with_memory,
)
from tests.support.gpu_pane_app import GpuPaneApp
from tui.core.formatting import duration_compact
from widgets import gpu_format as fmt
from widgets.gpu_pane import GpuPane
from widgets.gpu_table import GpuTable


def _detail_text(app: GpuPaneApp) -> str:
    return str(app.query_one("#gpu-detail", Static).render())


async def test_rows_numa_groups_and_totals() -> None:
    snapshot, trends = loading_history()
    app = GpuPaneApp(snapshot, trends)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        table = app.query_one(GpuTable)
        keys = table.row_keys
        assert keys == ["numa-0", *[f"gpu-{i}" for i in range(4)], "numa-1",
                        *[f"gpu-{i}" for i in range(4, 8)], "total"]  # fmt: skip
        assert "mem_hist" in table.column_keys
        assert "0.4G/s" in table.cell("gpu-0", "fill")
        assert table.cell("gpu-5", "fill") == ""
        assert "NUMA 1" in table.cell("numa-1", "name")
        assert "8 GPUs" in table.cell("total", "name")


class CountingTable(GpuTable):
    """Counts the lines Textual asks it to draw, to see what a tick really repaints."""

    lines_drawn = 0
    _filtering = False

    def render_line(self, y: int) -> Strip:
        if not self._filtering:  # Textual's own path
            CountingTable.lines_drawn += 1
        return super().render_line(y)

    def render_filtered_line(
        self, y: int, filters: Sequence[LineFilter], background: Color
    ) -> Strip:
        CountingTable.lines_drawn += 1  # the plain-box path
        self._filtering = True
        try:
            return super().render_filtered_line(y, filters, background)
        finally:
            self._filtering = False


async def test_tick_repaints_only_changed_rows_and_keeps_selection() -> None:
    snapshot = rtx_pro_6000_box()
    app = GpuPaneApp(snapshot, table_class=CountingTable)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        pane = app.query_one(GpuPane)
        table = app.query_one(GpuTable)
        await pilot.press("down", "down")  # GPU 0 -> GPU 1 -> GPU 2
        await pilot.pause()
        assert "GPU 2 processes" in _detail_text(app)
        CountingTable.lines_drawn = 0
        pane.update_view(snapshot, {})
        await pilot.pause()
        assert table.rows_repainted == 0 and CountingTable.lines_drawn == 0
        pane.update_view(with_memory(snapshot, 2, 80 * GIB), {})
        await pilot.pause()
        # GPU 2's row and the totals row changed; nothing else is drawn again
        assert table.rows_repainted == 2 and CountingTable.lines_drawn == 2
        assert "80.0/95.6G" in table.cell("gpu-2", "memory")
        assert table.cursor_key == "gpu-2"
        assert "GPU 2 processes" in _detail_text(app)


async def test_process_list_shows_pid_user_memory_age_command() -> None:
    app = GpuPaneApp(rtx_pro_6000_box())
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        text = _detail_text(app)
        assert "GPU 0 processes" in text
        assert "51230" in text and "vllm" in text and "20m34s" in text
        assert "VLLM::Worker_TP0" in text and "vllm.entrypoints.openai.api_server" in text
        await pilot.press(*["down"] * 12)  # the cursor stops on GPU 7 (not the totals)
        await pilot.pause()
        assert app.query_one(GpuTable).cursor_key == "gpu-7"
        assert "GPU 7 processes" in _detail_text(app)
        assert "no processes" in _detail_text(app)
        await pilot.press("up", "up", "up", "up")  # GPU 6..3, skipping the NUMA 1 heading
        await pilot.pause()
        assert "GPU 3 processes" in _detail_text(app)
        await pilot.click(GpuTable, offset=(2, 3))  # header, NUMA 0, GPU 0, GPU 1
        await pilot.pause()
        assert "GPU 1 processes" in _detail_text(app)


async def test_topology_toggle() -> None:
    app = GpuPaneApp(rtx_pro_6000_box())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("t")
        await pilot.pause()
        text = _detail_text(app)
        assert "Topology" in text and "SYS" in text and "NODE" in text
        assert "32-63,96-127" in text
        await pilot.press("t")
        await pilot.pause()
        assert "processes" in _detail_text(app)


async def test_lost_gpu_and_no_driver() -> None:
    snapshot, trends = loading_history(lost=(3,))
    app = GpuPaneApp(snapshot, trends)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.query_one(GpuTable)
        assert "LOST" in table.cell("gpu-3", "memory")
        assert "7/8 GPUs" in table.cell("total", "name")
        pane = app.query_one(GpuPane)
        pane.update_view(no_driver_box(), {})
        await pilot.pause()
        message = app.query_one("#gpu-message", Static)
        assert message.display and not table.display
        assert "no NVIDIA driver" in str(message.render())
        pane.update_view(snapshot, trends)  # the driver came back: the table returns
        await pilot.pause()
        assert table.display and not message.display and len(table.row_keys) == 11


async def test_layout_follows_terminal_width() -> None:
    app = GpuPaneApp(rtx_pro_6000_box())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.query_one(GpuTable)
        assert "mem_hist" not in table.column_keys
        await pilot.resize_terminal(160, 50)
        await pilot.pause()
        assert "mem_hist" in table.column_keys


def test_formatting_helpers() -> None:
    assert fmt.short_gpu_name("NVIDIA H200", 10) == "H200"
    assert fmt.short_gpu_name("NVIDIA RTX PRO 6000 Blackwell", 10) == "RTX PRO 6…"
    assert duration_compact(250) == "4m10s" and duration_compact(7500) == "2h05m"
    assert fmt.sparkline([0, 50, 100], 3) == "▁▅█"
    assert len(fmt.sparkline(list(range(300)), 12)) == 12
    assert fmt.sparkline([], 4) == "    "
    assert fmt.rate_bytes(2.4e9) == "2.4G" and fmt.rate_bytes(None) == "n/a"
    assert fmt.fill_cell(1.5 * GIB, False) == ""


# -- SVG snapshots (pytest-textual-snapshot) -----------------------------------------


def test_snapshot_8_gpus_80x24(snap_compare) -> None:
    snapshot, trends = loading_history()
    assert snap_compare(GpuPaneApp(snapshot, trends), terminal_size=(80, 24))


def test_snapshot_8_gpus_160x50(snap_compare) -> None:
    snapshot, trends = loading_history()
    assert snap_compare(GpuPaneApp(snapshot, trends), terminal_size=(160, 50))


def test_snapshot_lost_gpu(snap_compare) -> None:
    snapshot, trends = loading_history(lost=(2,))
    assert snap_compare(GpuPaneApp(snapshot, trends), terminal_size=(160, 50))


def test_snapshot_topology(snap_compare) -> None:
    snapshot, trends = loading_history()
    assert snap_compare(GpuPaneApp(snapshot, trends), terminal_size=(80, 24), press=["t"])


def test_snapshot_no_driver(snap_compare) -> None:
    assert snap_compare(GpuPaneApp(no_driver_box()), terminal_size=(80, 24))


async def test_memory_colours_only_with_little_headroom_and_traffic_has_units() -> None:
    """A healthy vLLM at gpu_memory_utilization 0.9 holds ~88 %: green, not a warning.
    Failed before: yellow from 75 %, and the TX/RX column had no unit."""
    total = rtx_pro_6000_box().samples[0].memory_total_bytes or 0
    snapshot = with_memory(rtx_pro_6000_box(), 0, int(total * 0.88))
    snapshot = with_memory(snapshot, 1, int(total * 0.96))
    snapshot = with_memory(snapshot, 2, int(total * 0.99))
    app = GpuPaneApp(snapshot)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        table = app.query_one(GpuTable)
        assert table.cell("gpu-0", "memory").startswith("[green]")
        assert table.cell("gpu-1", "memory").startswith("[yellow]")
        assert table.cell("gpu-2", "memory").startswith("[red]")
        header = {column.key: column.label for column in table._columns}
        assert header["pcie_io"] == "TX/RX B/s"
