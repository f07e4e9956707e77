"""The Fleet pane on the demo fleet: rows at 80x24 and 200x60, filter, sort, Enter; and the CLI.

The demo fleet is light simulated boxes (tui.fleet.demo): real log files read back through
the tail and the LoadTracker, so the rows here come from the same code as a real host's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.screen_text import screen_lines, screen_text
from tui.app.fleet_app import FleetApp
from tui.fleet.collector import FleetCollector
from tui.fleet.demo import DemoFleet
from tui.fleet.model import JSON_KEYS
from tui.fleet.view import host_state
from widgets.fleet_table import FleetTable

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
async def demo_collector() -> AsyncIterator[FleetCollector]:
    fleet = DemoFleet(8)
    collector = FleetCollector(fleet.probes, host_timeout_s=10)
    try:
        yield collector
    finally:
        await collector.close()
        fleet.close()


async def _first_rows(app: FleetApp, pilot: object) -> None:
    for _ in range(400):
        if app.refreshes and app.query_one("FleetTable").row_count:  # type: ignore[attr-defined]
            await pilot.pause(0.1)  # type: ignore[attr-defined]
            return
        await pilot.pause(0.05)  # type: ignore[attr-defined]
    raise AssertionError("no refresh within 20 s")


async def test_compact_at_80x24_filter_sort_and_enter(demo_collector: FleetCollector) -> None:
    app = FleetApp(demo_collector)
    async with app.run_test(size=(80, 24)) as pilot:
        await _first_rows(app, pilot)
        lines = screen_lines(app)
        assert all(len(line.rstrip()) <= 80 for line in lines)
        summary = lines[0]
        assert "7/8 up:" in summary and "1 fail" in summary and "1 down" in summary
        assert "tok/s" in summary  # the whole summary fits at 80 columns
        text = screen_text(app)
        for state in ("serving", "loading", "failed", "unreachable", "stopped"):
            assert state in text
        assert "Host" in lines[1] and "Load" in lines[1]
        # The selected row's route and error under the table (the unreachable one is first).
        assert "box-08: simulated · box-08: cannot connect" in text
        # `/` filter by state, escape clears it.
        await pilot.press("slash", *"loading")
        await pilot.pause(0.1)
        assert [host_state(row) for row in app.visible_rows()] == ["loading", "loading"]
        assert "filter 'loading': 2 shown" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert len(app.visible_rows()) == 8
        # Sort: the default puts unreachable hosts first; `r` reverses.
        assert host_state(app.visible_rows()[0]) == "unreachable"
        await pilot.press("r")
        assert host_state(app.visible_rows()[-1]) == "unreachable"
        await pilot.press("s")  # the next column
        assert app.sort_column == "unit"
        # The cursor follows its host through re-sorts; Enter exits with that host.
        table = app.query_one(FleetTable)
        table.move_cursor(row=0)
        await pilot.press("down")
        chosen = table.selected_host()
        assert chosen == app.visible_rows()[1].host
        await pilot.press("enter")
        await pilot.pause(0.1)
    assert app.return_value == chosen


async def test_full_columns_at_200x60(demo_collector: FleetCollector) -> None:
    app = FleetApp(demo_collector)
    async with app.run_test(size=(200, 60)) as pilot:
        await _first_rows(app, pilot)
        header = screen_lines(app)[1]
        for title in (
            "Unit",
            "Ready",
            "Run/Wait",
            "KV%",
            "GPUs",
            "Mem (all)",
            "Fullest",
            "Power",
            "Left",
        ):
            assert title in header
        text = screen_text(app)
        assert "load failed" in text and "2 leftover(s)" in text
        assert "moonshotai/Kimi-K2.5" in text  # labels shown when wide
        await pilot.press("q")
    assert app.return_value is None


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def test_fleet_demo_json_contract() -> None:
    result = _cli("fleet", "--demo", "6", "--json")
    assert result.returncode == 1, result.stderr  # one demo box is unreachable
    rows = json.loads(result.stdout)
    assert len(rows) == 6
    for row in rows:
        assert list(row)[: len(JSON_KEYS)] == list(JSON_KEYS)
    states = {row["host"]: (row["reachable"], row["phase"]) for row in rows}
    assert states["box-06"] == (False, None)
    assert states["box-05"] == (True, "failed")
    assert states["box-02"][1] == "weights"
    assert rows[0]["phase"] == "serving" and rows[0]["health_ok"] is True


def test_fleet_usage_errors_are_one_line() -> None:
    for args, expected in (
        (("fleet", "--json"), "name a host group with -g GROUP"),
        (("fleet", "--demo", "0", "--json"), "--demo: expected a number of boxes from 1 to"),
        (("fleet", "-g", "nope", "--json"), "group 'nope' not found"),
        (("-g", "nope"), "group 'nope' not found"),
    ):
        result = _cli(*args)
        assert result.returncode == 2
        assert expected in result.stderr and len(result.stderr.strip().splitlines()) == 1
