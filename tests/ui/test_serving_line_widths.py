"""The Deck's serving line at 80 and 120 columns: TTFT and ITL on it, in a compact form
where the full one would wrap, and `?` while the server has not measured them."""

from __future__ import annotations

import dataclasses

import pytest

from tests.support.screen_text import screen_lines
from tests.support.snapshot_apps.log_pane_app import LogPaneApp
from widgets.load_strip import LoadStrip

SIZES = [(80, 24), (120, 36)]


def _serving_line(app: LogPaneApp) -> str:
    lines = [line.rstrip() for line in screen_lines(app)]
    (line,) = [line for line in lines if line.startswith(" run ")]
    return line


@pytest.mark.parametrize("size", SIZES)
async def test_ttft_and_itl_are_on_the_serving_line(size: tuple[int, int]) -> None:
    app = LogPaneApp("serving")
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.3)
        line = _serving_line(app)
        assert "TTFT" in line and "210" in line and "ITL" in line and "12" in line, line
        assert len(line) <= size[0]
        strip = app.query_one(LoadStrip)
        assert strip.metrics is not None and strip.progress is not None
        unknown = dataclasses.replace(strip.metrics, ttft_p50_s=None, itl_p50_s=None)
        strip.show(strip.progress, unknown)
        await pilot.pause(0.2)
        line = _serving_line(app)
        assert "TTFT" in line and "ITL" in line and line.count("?") == 2, line
        assert "0 ms" not in line and "0ms" not in line


async def test_the_serving_line_takes_the_full_form_where_it_fits() -> None:
    app = LogPaneApp("serving")
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.3)
        assert "TTFT p50 210 ms  ITL p50 12 ms" in _serving_line(app)
