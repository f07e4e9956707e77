"""The summary preview screen: collect in a worker, show the Markdown, export with one key."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from textual.app import ComposeResult
from textual.message import Message

from tui.app.console_workers import WorkerFailed, console_worker, failure_text
from tui.core.errors import ServedeckError
from tui.screens.dialog import Dialog
from widgets.keys import bindings_for
from widgets.summary_view import SummaryView

Collect = Callable[[], Awaitable[str]]
Export = Callable[[str], Path]


class SummaryScreen(Dialog[None]):
    """`s` opens it; `e` writes the file; `r` collects again; escape closes."""

    DEFAULT_CSS = """
    SummaryScreen > .dialog-frame { width: 96%; max-width: 100%; height: 94%; padding: 0; }
    """
    BINDINGS = bindings_for("summary")
    KEY_SCOPE = "summary"  # `?` over the preview lists these keys first

    @dataclass
    class Collected(Message):
        markdown: str

    @dataclass
    class Failed(Message):
        error: str

    def __init__(self, collect: Collect, export: Export, markdown: str | None = None) -> None:
        super().__init__()
        self._collect = collect
        self._export = export
        self._markdown = markdown

    def compose(self) -> ComposeResult:
        yield SummaryView(id="summary-view", classes="dialog-frame")

    async def on_mount(self) -> None:
        if self._markdown is not None:
            await self.query_one(SummaryView).show_markdown(self._markdown)
            self.query_one(SummaryView).show_status("e export · r refresh · escape close")
        else:
            self.action_recollect()

    def action_recollect(self) -> None:
        self.query_one(SummaryView).show_status("Collecting the state summary ...")
        self._run_collect()

    @console_worker("summary", pane="summary", what="collect the summary", user_action=True)
    async def _run_collect(self) -> None:
        try:
            markdown = await self._collect()
        except ServedeckError as error:
            self.post_message(self.Failed(str(error)))
        else:
            self.post_message(self.Collected(markdown))

    async def on_summary_screen_collected(self, message: Collected) -> None:
        self._markdown = message.markdown
        view = self.query_one(SummaryView)
        await view.show_markdown(message.markdown)
        view.show_status("e export · r refresh · escape close")

    def on_summary_screen_failed(self, message: Failed) -> None:
        reason = failure_text(message.error)
        self.query_one(SummaryView).show_status(f"Summary failed: {reason}; r tries again")

    def on_worker_failed(self, message: WorkerFailed) -> None:
        """Collection raised something unexpected: a state here, never an exit."""
        message.stop()
        self.query_one(SummaryView).show_status(
            f"Tried to {message.what}; it failed: {message.reason}. Nothing was written."
        )

    def action_export(self) -> None:
        if self._markdown is None:
            self.notify("Nothing to export yet", severity="warning")
            return
        try:
            path = self._export(self._markdown)
        except (ServedeckError, OSError) as error:
            self.notify(
                f"Tried to export the summary; it failed: {failure_text(str(error))}. "
                "Nothing was written.",
                title="Export failed",
                severity="error",
                timeout=8,
            )
            return
        self.notify(f"Wrote {path}", title="Summary exported")
        self.query_one(SummaryView).show_status(f"Exported to {path}")

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(result)
