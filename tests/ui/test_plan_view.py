"""PlanView draws a finished plan: chosen layout marked, the highlighted row's arithmetic below."""

from __future__ import annotations

from pathlib import Path

from textual.app import App, ComposeResult
from textual.widgets import DataTable

from tui.plan import Layout, PlanSettings, build_plan, model_from_config, stated_inventory
from widgets.plan_view import PlanView

MINIMAX = Path(__file__).parents[1] / "support" / "fixtures" / "models" / "MiniMax-M2.7.json"


def minimax_plan():
    model = model_from_config(MINIMAX.read_text(), str(MINIMAX), 214.33)
    return build_plan(model, stated_inventory(8, 96, "12.0", False), PlanSettings())


class PlanViewApp(App[None]):
    def __init__(self, chosen: Layout | None) -> None:
        super().__init__()
        self.plan, self.chosen = minimax_plan(), chosen

    def compose(self) -> ComposeResult:
        yield PlanView(self.plan, self.chosen)


async def test_chosen_layout_is_selected_and_moving_shows_that_rows_math() -> None:
    app = PlanViewApp(Layout(8, ep=True))
    async with app.run_test(size=(120, 36)) as pilot:
        view = app.query_one(PlanView)
        table = app.query_one(DataTable)
        assert table.row_count == len(app.plan.layouts)
        assert table.cursor_row == [r.layout for r in app.plan.layouts].index(Layout(8, ep=True))
        assert str(table.get_row_at(table.cursor_row)[0]) == "▶ TP=8 EP"
        assert view.detail_text.startswith("TP=8 EP: fits")
        await pilot.press("up")  # TP=8 without EP sits just above
        await pilot.pause()
        assert view.detail_text.startswith("TP=8: invalid")
        assert "1536 / 8 = 192, not divisible by the FP8 block 128" in view.detail_text


def test_plan_view_snapshot(snap_compare) -> None:
    assert snap_compare(PlanViewApp(Layout(4)), terminal_size=(120, 36))
