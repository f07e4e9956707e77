"""The header says the machine's name as its hostname, beside the host it belongs to: it read
'connected vm │ host: local', as if local answered as vm."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.canned_host import canned_deck
from tests.support.screen_text import screen_lines
from tests.support.waiting import pilot_wait
from tui.app import ServedeckApp
from tui.core.config import load_profile_file
from widgets.header_bar import HeaderBar

REPO = Path(__file__).resolve().parents[2]
KIMI = load_profile_file(REPO / "profiles" / "kimi-k25-int4-lxc.toml")


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_header_names_the_hostname_as_such(size: tuple[int, int]) -> None:
    app = ServedeckApp(KIMI, canned_deck(KIMI))
    async with app.run_test(size=size) as pilot:
        header = app.query_one(HeaderBar)
        await pilot_wait(
            pilot,
            lambda: header.connection_detail == "gpu-box-01",
            lambda: f"the overview's hostname, still {header.connection_detail!r}",
            timeout_s=30.0,
        )
        await pilot.pause(0.1)
        line = screen_lines(app)[0]
        assert "connected gpu-box-01" not in line, line
        if size[0] >= 120:
            assert "(hostname gpu-box-01)" in line, line
            assert line.index("root@10.10.0.21") < line.index("hostname gpu-box-01")
