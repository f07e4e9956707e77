"""SummaryView: the Markdown state summary, drawn by Textual's Markdown widget.

A pure view: it is handed finished Markdown text (tui.summary renders it) and a
status line; it collects nothing and writes nothing.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Markdown, Static


class SummaryView(Vertical):
    DEFAULT_CSS = """
    SummaryView { height: 1fr; }
    SummaryView > #summary-status { height: auto; padding: 0 1; color: $text-muted; }
    SummaryView > VerticalScroll { height: 1fr; }
    SummaryView Markdown { padding: 0 1; }
    """

    def __init__(
        self,
        markdown: str = "",
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._markdown = markdown

    def compose(self) -> ComposeResult:
        yield Static("", id="summary-status")
        with VerticalScroll(id="summary-scroll"):
            yield Markdown(self._markdown, id="summary-markdown")

    async def show_markdown(self, markdown: str) -> None:
        """Replace the document (scroll position goes back to the top)."""
        self._markdown = markdown
        await self.query_one(Markdown).update(markdown)
        self.query_one(VerticalScroll).scroll_home(animate=False)

    def show_status(self, text: str) -> None:
        self.query_one("#summary-status", Static).update(text)

    @property
    def markdown(self) -> str:
        return self._markdown
