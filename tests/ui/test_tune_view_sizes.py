"""The console's Tune view once a tune is over, at 80x24 and 120x36: the ranked result on
screen, each line drawn as the result wrote it, a configuration's figures beside its name.

Rendered from a real simulator tune (screenshots/render_tune_view.py), the view read
wrong: at 80x24 the run's last eight lines filled the frame and the ranking was not on
screen at all; a configuration's figures wrapped back under the names; at 120x36 the
result was wrapped to the screen less 4 cells, wider than the frame, so Static wrapped
it again ("bracket" alone on a line).
"""

from __future__ import annotations

import pytest
from textual.app import App

from tests.core.test_tune_table import OUTCOMES
from tests.support.screen_text import screen_lines
from tui.screens.tune import TuneScreen
from tui.tune.progress import ConfigState, TuneSnapshot
from tui.tune.results import result_lines

RUN_SAID = [
    *(f"  level {n}: 342 tok/s, missed: ITL" for n in (44, 22, 25, 22)),
    "  level 16: 292 tok/s, client-bound: event-loop lag p90 27 ms > 25 ms",
    "$ rm -f /tmp/servedeck-sim-x/vllm-kimi-k25-int4.service.d/90-servedeck-tune.conf",
    "  ending 2 leftover(s): 5025, 5026",
    "unit restored: drop-in removed, service started as before",
]
CONFIGS = (
    ConfigState("max-num-seqs=4", "done", "loaded in 5 s; 1-stream 68.6 tok/s; capacity 14 users"),
    ConfigState("max-num-seqs=48", "done", "loaded in 5 s; 1-stream 69.6 tok/s; capacity 15 users"),
    ConfigState("tp6", "skipped", "attention heads 64 / 6 = 10.6667"),
)


class TuneApp(App[None]):
    async def on_mount(self) -> None:
        await self.push_screen(TuneScreen("Tune tune-demo.toml on simulator (capacity)", print))


async def _finished(pilot: object, app: TuneApp) -> list[str]:
    screen = app.screen
    assert isinstance(screen, TuneScreen)
    result = result_lines(OUTCOMES, "capacity", screen.result_width())
    screen.show(TuneSnapshot(CONFIGS, tuple(RUN_SAID), tuple(result), finished=True))
    await pilot.pause()  # type: ignore[attr-defined]
    return result


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_the_ranking_and_the_runs_last_word_are_on_screen(size: tuple[int, int]) -> None:
    app = TuneApp()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        result = await _finished(pilot, app)
        text = "\n".join(screen_lines(app))
        assert "unit restored: drop-in removed" in text, text
        for line in result[:3]:  # the table's header and its first two rows
            assert line.strip() in text, text
        # the figures wrap in their own column, never back under the names
        lines = screen_lines(app)
        at = next(i for i, line in enumerate(lines) if "max-num-seqs=4 " in line)
        column = lines[at].index("loaded in")
        rest = lines[at] if "14 users" in lines[at] else lines[at + 1]
        assert "14 users" in rest and rest.index("14 users") >= column, text


async def test_each_result_line_is_drawn_on_one_row_at_120_columns() -> None:
    app = TuneApp()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        result = await _finished(pilot, app)
        drawn = screen_lines(app)
        for line in result:
            assert any(line.strip() == row.strip("│ ") for row in drawn), (line, drawn)
