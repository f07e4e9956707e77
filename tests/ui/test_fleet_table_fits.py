"""The Fleet table fits 80 and 120 columns: the columns that do not fit are left out whole,
never cut, most needed kept first; the memory figures say what they are a share of."""

from __future__ import annotations

from dataclasses import replace

import pytest
from textual.app import App, ComposeResult

from tests.support.screen_text import screen_lines
from tui.fleet.deployments import grouped
from tui.fleet.model import FleetRow
from widgets.fleet_table import FleetTable, values

GIB = 1024**3
ROWS = [
    FleetRow(
        "gpu-box-01", True, unit_state="active", phase="serving", health_ok=True, running=12,
        waiting=0, kv_pct=41.0, gen_tok_s=1830.0, gpu_count=8, gpu_mem_used_bytes=100 * GIB,
        gpu_mem_total_bytes=768 * GIB, gpu_mem_used_pct_max=50.0, gpu_util_pct_max=93.0,
        temp_c_max=71.0, power_w=3120.0, leftovers=0, alerts=("low-kv-headroom",),
        sample_age_s=2.0,
    ),
    FleetRow(
        "gpu-box-02", True, unit_state="failed", phase="failed", health_ok=False, gpu_count=8,
        gpu_mem_used_bytes=0, gpu_mem_total_bytes=768 * GIB, gpu_mem_used_pct_max=0.0,
        gpu_util_pct_max=0.0, temp_c_max=38.0, power_w=610.0, leftovers=2,
        alerts=("service-failed",), sample_age_s=3.0,
    ),
    FleetRow("gpu-box-03", False, error="connection refused"),
]  # fmt: skip


class FleetApp(App[None]):
    def __init__(self, rows: list[FleetRow] = ROWS) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        yield FleetTable()

    def on_mount(self) -> None:
        self.query_one(FleetTable).show(self.rows, self.size.width)


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_fleet_table_fits_without_cutting(size: tuple[int, int]) -> None:
    app = FleetApp()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        lines = screen_lines(app)
        header = lines[0]
        assert header.split()[0] == "Host" and "State" in header, header
        assert "Alerts" in header
        body = "\n".join(lines[: len(ROWS) + 1])
        assert "…" not in body, body
        assert "low-kv-headroom" in body and "service-failed" in body, body
        if size[0] >= 120:
            for title in ("Temp", "Power", "Left", "Mem (all)", "Fullest GPU"):
                assert title in header, header
            box1 = next(line for line in lines if line.startswith(" gpu-box-01"))
            assert "100/768G" in box1 and "50%" in box1, box1
        assert all(len(line) <= size[0] for line in lines)


async def test_no_hosts_yet_is_an_empty_table() -> None:
    """Before the first rows (Prometheus down from the start): headers, no crash."""
    app = FleetApp()
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.query_one(FleetTable)
        table.show([], 80)
        await pilot.pause()
        assert table.row_count == 0 and "Host" in screen_lines(app)[0]


MEMBERS = [
    replace(ROWS[0], host="node0", deployment="kimi"),
    # A rank host runs no API server: nothing answers its /health.
    replace(ROWS[0], host="node1", deployment="kimi", headless=True, alerts=(), health_ok=False),
]
DEPLOYED = grouped(MEMBERS, MEMBERS)


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_a_deployments_rows_read_whole_at_80_and_120_columns(size: tuple[int, int]) -> None:
    """The group row read "deployment:ki…" and the rank host "└ node1 headl…" (the compact
    layout's 14-cell host cut): the deployment's name and its hosts, the headless word, whole."""
    app = FleetApp(DEPLOYED)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        lines = screen_lines(app)
        body = "\n".join(lines[1:4])
        assert "…" not in body, body
        assert lines[1].split()[:3] == ["kimi:", "2", "hosts"], body
        assert "└ node0" in lines[2] and "└ node1 headless" in lines[3], body


def test_a_headless_hosts_ready_is_not_applicable() -> None:
    """A rank host runs no API server: its Ready read "no" beside a serving state, as if the
    host were down; it reads n/a (its unit and the deployment's head say how it is)."""
    assert [values(row)["ready"] for row in DEPLOYED] == ["[green]yes[/]", "[green]yes[/]", "n/a"]
