"""The capacity search while it runs: a level in progress is measuring, a finished one meets or
misses. The `level` events are the capacity runner's own (`tui.bench.capacity.runner._level_dict`)."""

from __future__ import annotations

from typing import Any

import pytest
from rich.console import Console
from textual.app import App, ComposeResult

from tests.support.screen_text import screen_text
from tui.bench.capacity.runner import _level_dict
from tui.bench.capacity.search import CapacityLevel
from widgets.capacity_view import CapacityView


class CapacityApp(App[None]):
    def compose(self) -> ComposeResult:
        yield CapacityView()


def _level(concurrency: int, failures: tuple[str, ...] = ()) -> dict[str, Any]:
    level = CapacityLevel(
        concurrency=concurrency, completed=4 * concurrency, failed=0, measured=3 * concurrency,
        duration_s=30.0, ttft_p99_ms=180.0 * concurrency, itl_p99_ms=22.0,
        per_user_tok_s=45.0, output_throughput=45.0 * concurrency, goodput=0.5,
        failures=failures,
    )  # fmt: skip
    return _level_dict(level)


def _verdicts(view: CapacityView) -> list[str]:
    """The SLO column of every level row, read from the drawing at a width that fits it."""
    console = Console(width=400, record=True)
    console.print(view.drawn)
    rows = console.export_text().splitlines()[2:]  # the status line, then the header
    table = [row for row in rows if row.strip() and not row.startswith("wider terminal")]
    return [row.rstrip().split("  ")[-1].strip() for row in table]


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_levels_in_progress_measure_and_finished_ones_meet_or_miss(
    size: tuple[int, int],
) -> None:
    app = CapacityApp()
    async with app.run_test(size=size) as pilot:
        view = app.query_one(CapacityView)
        view.show_event({"event": "start", "model": "kimi-k2.5-int4"})
        view.show_event({"event": "level_start", "concurrency": 1})
        await pilot.pause()
        assert _verdicts(view) == ["measuring"]
        view.show_event({"event": "level", "level": _level(1)})
        view.show_event({"event": "level_start", "concurrency": 4})
        view.show_event({"event": "level", "level": _level(4)})
        view.show_event({"event": "level_start", "concurrency": 16})
        await pilot.pause()
        assert _verdicts(view) == ["meets", "meets", "measuring"]
        view.show_event({"event": "level", "level": _level(16, failures=("ttft",))})
        await pilot.pause()
        assert _verdicts(view) == ["meets", "meets", "miss: TTFT"]
        assert "partial" not in screen_text(app)


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_the_table_fits_the_terminal_with_levels_in_order(size: tuple[int, int]) -> None:
    """Every header and figure shown whole (columns that do not fit are named, not cut), the
    users column always kept, and the levels from the lightest load up whatever order they
    came in."""
    app = CapacityApp()
    async with app.run_test(size=size) as pilot:
        view = app.query_one(CapacityView)
        view.show_result(
            {
                "answer": "31 users at once meet the SLO",
                "levels": [_level(16), _level(1), _level(4)],
            }
        )
        await pilot.pause()
        lines = screen_text(app).splitlines()
        header = next(line for line in lines if "TTFT p99 ms" in line)
        assert header.split()[0] == "users", header
        assert "TTFT p99 ms" in header
        assert "…" not in screen_text(app)
        rows = lines[lines.index(header) + 1 : lines.index(header) + 4]
        assert [row.split()[0] for row in rows] == ["1", "4", "16"], rows
        assert all(row.rstrip().endswith("meets") for row in rows), rows
        if size[0] < 120:
            assert "wider terminal shows" in screen_text(app)
