"""GpuPane: keyed diff updates, selection, topology toggle, layouts, and SVG snapshots."""

from __future__ import annotations

from textual.widgets import DataTable, Static

from tests.gpu_boxes import GIB, loading_history, no_driver_box, rtx_pro_6000_box, with_memory
from tests.gpu_pane_app import GpuPaneApp
from widgets import gpu_format as fmt
from widgets.gpu_pane import GpuPane


def _detail_text(app: GpuPaneApp) -> str:
    return str(app.query_one("#gpu-detail", Static).render())


async def test_rows_numa_groups_and_totals() -> None:
    snapshot, trends = loading_history()
    app = GpuPaneApp(snapshot, trends)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        table = app.query_one(DataTable)
        keys = [row.key.value for row in table.ordered_rows]
        assert keys == ["numa-0", *[f"gpu-{i}" for i in range(4)], "numa-1",
                        *[f"gpu-{i}" for i in range(4, 8)], "total"]  # fmt: skip
        assert "mem_hist" in [c.key.value for c in table.ordered_columns]
        assert "0.4G/s" in table.get_cell("gpu-0", "fill")
        assert table.get_cell("gpu-5", "fill") == ""
        assert "NUMA 1" in table.get_cell("numa-1", "name")
        assert "8 GPUs" in table.get_cell("total", "name")


async def test_tick_updates_only_changed_cells_and_keeps_selection() -> None:
    snapshot = rtx_pro_6000_box()
    app = GpuPaneApp(snapshot)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        pane = app.query_one(GpuPane)
        table = app.query_one(DataTable)
        await pilot.press("down", "down")  # GPU 0 -> GPU 1 -> GPU 2
        await pilot.pause()
        assert "GPU 2 processes" in _detail_text(app)
        pane.update_view(snapshot, {})
        assert pane.cell_updates == 0
        pane.update_view(with_memory(snapshot, 2, 80 * GIB), {})
        # GPU 2's memory cell and the total's memory cell changed; nothing else
        assert pane.cell_updates == 2
        assert "80.0/95.6G" in table.get_cell("gpu-2", "memory")
        assert table.get_row_index("gpu-2") == table.cursor_row
        assert "GPU 2 processes" in _detail_text(app)


async def test_process_list_shows_pid_user_memory_age_command() -> None:
    app = GpuPaneApp(rtx_pro_6000_box())
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        text = _detail_text(app)
        assert "GPU 0 processes" in text
        assert "51230" in text and "vllm" in text and "20m34s" in text
        assert "VLLM::Worker_TP0" in text and "vllm.entrypoints.openai.api_server" in text
        await pilot.press(*["down"] * 12)  # past GPU 7 onto the totals row
        await pilot.pause()
        # the totals row keeps the last GPU passed (GPU 7, idle) in the detail
        assert "GPU 7 processes" in _detail_text(app)
        assert "no processes" in _detail_text(app)
        await pilot.press("up", "up", "up", "up", "up", "up")  # GPU 7..4, NUMA 1, GPU 3
        await pilot.pause()
        assert "GPU 3 processes" in _detail_text(app)


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
        table = app.query_one(DataTable)
        assert "LOST" in table.get_cell("gpu-3", "memory")
        assert "7/8 GPUs" in table.get_cell("total", "name")
        pane = app.query_one(GpuPane)
        pane.update_view(no_driver_box(), {})
        await pilot.pause()
        message = app.query_one("#gpu-message", Static)
        assert message.display and not table.display
        assert "no NVIDIA driver" in str(message.render())
        pane.update_view(snapshot, trends)  # the driver came back: the table returns
        await pilot.pause()
        assert table.display and not message.display and table.row_count == 11


async def test_layout_follows_terminal_width() -> None:
    app = GpuPaneApp(rtx_pro_6000_box())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.query_one(DataTable)
        assert "mem_hist" not in [c.key.value for c in table.ordered_columns]
        await pilot.resize_terminal(160, 50)
        await pilot.pause()
        assert "mem_hist" in [c.key.value for c in table.ordered_columns]


def test_formatting_helpers() -> None:
    assert fmt.short_gpu_name("NVIDIA H200", 10) == "H200"
    assert fmt.short_gpu_name("NVIDIA RTX PRO 6000 Blackwell", 10) == "RTX PRO 6…"
    assert fmt.duration(250) == "4m10s" and fmt.duration(7500) == "2h05m"
    assert fmt.sparkline([0, 50, 100], 3) == "▁▅█"
    assert len(fmt.sparkline(list(range(300)), 12)) == 12
    assert fmt.sparkline([], 4) == "    "
    assert fmt.rate_bytes(2.4e9) == "2.4G" and fmt.rate_bytes(None) == "n/a"
    assert fmt.fill_cell(1.5 * GIB, False, 10) == ""


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
