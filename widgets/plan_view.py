"""PlanView: the plan as a table, the chosen layout marked, the selected row's math below.

A pure view: it is handed a finished Plan (tui.plan) and draws it; it computes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Static

if TYPE_CHECKING:  # the planner loads with the first plan: the console starts without it
    from tui.plan.layout import Layout, LayoutResult, Plan

COLUMNS = ("layout", "GPUs", "weights/GPU", "KV room/GPU", "KV tokens", "full-len", "verdict")


class PlanView(Vertical):
    """Layouts table (chosen one marked with ▶) and the arithmetic of the highlighted row."""

    DEFAULT_CSS = """
    PlanView { height: 1fr; }
    PlanView > #plan-title { height: auto; padding: 0 1; color: $text-muted; }
    PlanView > DataTable { height: 1fr; min-height: 6; }
    PlanView > #plan-detail-scroll { height: 1fr; border-top: solid $primary; }
    PlanView #plan-detail { padding: 0 1; }
    """

    def __init__(
        self,
        plan: Plan | None = None,
        chosen: Layout | None = None,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._plan = plan
        self._chosen = chosen

    def compose(self) -> ComposeResult:
        yield Static(id="plan-title")
        yield DataTable(id="plan-table", cursor_type="row")
        with VerticalScroll(id="plan-detail-scroll"):
            yield Static(id="plan-detail")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*COLUMNS)
        self._fill()

    def show_plan(self, plan: Plan, chosen: Layout | None = None) -> None:
        """Replace the plan shown (for example after the operator changes a setting)."""
        self._plan, self._chosen = plan, chosen
        self._fill()

    def _fill(self) -> None:
        table = self.query_one(DataTable)
        table.clear()
        title = self.query_one("#plan-title", Static)
        if self._plan is None:
            title.update("No plan yet.")
            return
        from tui.plan.layout import gib

        plan = self._plan
        title.update(
            f"{plan.model_name}: {gib(plan.weights.total_bytes)} ({plan.weights.source}) "
            f"on {plan.gpus.describe()}; max_model_len {plan.max_model_len:,}"
        )
        cursor = 0
        for row, result in enumerate(plan.layouts):
            chosen = result.layout == self._chosen
            if chosen:
                cursor = row
            table.add_row(*self._cells(result, chosen), key=str(row))  # labels can repeat
        table.move_cursor(row=cursor)
        self._show_detail(plan.layouts[cursor] if plan.layouts else None)

    @staticmethod
    def _cells(result: LayoutResult, chosen: bool) -> tuple[Text, ...]:
        from tui.plan.layout import FITS, INVALID, TOO_BIG, gib

        styles = {FITS: "bold green", INVALID: "bold red", TOO_BIG: "bold yellow"}
        label = Text(("▶ " if chosen else "  ") + result.layout.label)
        if chosen:
            label.stylize("bold reverse")
        return (
            label,
            Text(str(result.layout.gpus), justify="right"),
            Text(gib(result.weight_bytes_per_gpu), justify="right"),
            Text(gib(max(result.kv_room_bytes_per_gpu, 0)), justify="right"),
            Text(f"{result.max_tokens:,}", justify="right"),
            Text(str(result.full_length_requests), justify="right"),
            Text(result.verdict, style=styles.get(result.verdict, "")),
        )

    def _show_detail(self, result: LayoutResult | None) -> None:
        detail = self.query_one("#plan-detail", Static)
        if result is None:
            detail.update("")
            return
        from tui.plan.render import layout_details

        lines = layout_details(result)
        lines[0] = lines[0].removeprefix("### ")
        detail.update(Text("\n".join(lines).rstrip()))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        layouts = self._plan.layouts if self._plan is not None else ()
        if 0 <= event.cursor_row < len(layouts):
            self._show_detail(layouts[event.cursor_row])

    @property
    def detail_text(self) -> str:
        """What the arithmetic pane shows now (for tests and the summary)."""
        return str(self.query_one("#plan-detail", Static).render())
