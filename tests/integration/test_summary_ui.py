"""The console's summary preview: `s` collects and shows the Markdown, `e` exports it."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from markdown_it import MarkdownIt
from textual.pilot import Pilot
from textual.widgets import Markdown
from textual.widgets._markdown import MarkdownBlock, MarkdownTableContent

from tests.support.summary_helpers import demo_deck
from tui.app import ServedeckApp
from tui.core import paths
from tui.screens.summary import SummaryScreen
from tui.serving.load.history import history_path
from tui.sim.box import SimBox, SimServerOptions
from widgets.summary_view import SummaryView

Factory = Callable[..., SimBox]


async def test_s_previews_the_summary_and_e_exports_it(sim_box_factory: Factory) -> None:
    box = sim_box_factory(SimServerOptions(log_interval_s=30.0), load_seconds=2.0)
    box.start()
    assert box.wait_until_active(timeout_s=90) == "active"
    deck = demo_deck(box)
    app = ServedeckApp(deck.profile, deck)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("s")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            await pilot.pause(0.2)
            screen = app.screen
            if isinstance(screen, SummaryScreen) and screen.query_one(SummaryView).markdown:
                break
        view = app.screen.query_one(SummaryView)
        assert view.markdown.startswith("# State summary: demo on simulator")
        # The text is set before Markdown.update has mounted its blocks (a busy machine
        # takes a while over a long document): wait for the tables to be drawn.
        while not app.screen.query_one(Markdown).query("MarkdownTable"):
            assert time.monotonic() < deadline, "the summary's tables were never drawn"
            await pilot.pause(0.2)
        await pilot.press("e")
        await pilot.pause(0.2)
        written = list((paths.data_dir() / "summaries").glob("summary-demo-*.md"))
        assert len(written) == 1 and written[0].read_text() == view.markdown
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert not isinstance(app.screen, SummaryScreen)


def _file_texts(markdown: str) -> list[str]:
    """Every heading, paragraph, list item and table cell of the file, as plain text."""
    texts = []
    for token in MarkdownIt("commonmark").enable("table").parse(markdown):
        if token.type == "inline":
            plain = "".join(
                child.content if child.type in ("text", "code_inline") else " "
                for child in token.children or ()
                if child.type in ("text", "code_inline", "softbreak", "hardbreak")
            )
            texts.append(" ".join(plain.split()))
        elif token.type in ("fence", "code_block"):
            texts.append(" ".join(token.content.split()))
    return [text for text in texts if text]


def _shown_texts(app: ServedeckApp) -> list[str]:
    """What the preview draws: each block's text and each table cell, in order."""
    shown = []
    markdown = app.screen.query_one(Markdown)
    for widget in markdown.query("*"):
        if isinstance(widget, MarkdownTableContent):
            for cell in [*widget.headers, *[c for row in widget.rows for c in row]]:
                shown.append(" ".join(cell.plain.split()))
        elif isinstance(widget, MarkdownBlock) and not widget.query(MarkdownBlock):
            shown.append(" ".join(widget._content.plain.split()))
    return [text for text in shown if text]


async def _preview(app: ServedeckApp, pilot: Pilot[None]) -> SummaryView:
    await pilot.press("s")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        await pilot.pause(0.2)
        screen = app.screen
        drawn = isinstance(screen, SummaryScreen) and screen.query_one(SummaryView).markdown
        if drawn and screen.query_one(Markdown).query("MarkdownTable"):
            break
    await pilot.pause(0.5)
    return app.screen.query_one(SummaryView)


async def _load_seen(app: ServedeckApp, pilot: Pilot[None]) -> None:
    """The console saw the load end, and kept it (loads.jsonl: the Last load section)."""
    deadline = time.monotonic() + 60
    while not (app.progress is not None and app.progress.timeline and app.progress.ready):
        assert time.monotonic() < deadline, "the console never saw the load end"
        await pilot.pause(0.2)
    while not history_path().exists():
        assert time.monotonic() < deadline, "the console kept no record of the load"
        await pilot.pause(0.2)
    await pilot.pause(0.5)


def _headings(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("#")]


async def test_the_preview_shows_what_the_exported_handoff_says(sim_box_factory: Factory) -> None:
    """Text for text, the preview (`s`) draws the file its `e` writes; and the one-key
    export (`E`) a moment later keeps every section the preview showed (a preview is no
    handoff: it takes nothing from the next one)."""
    box = sim_box_factory(SimServerOptions(log_interval_s=30.0), load_seconds=2.0)
    box.start()
    assert box.wait_until_ready(timeout_s=90)
    deck = demo_deck(box)
    app = ServedeckApp(deck.profile, deck)
    folder = paths.data_dir() / "summaries"
    async with app.run_test(size=(120, 40)) as pilot:
        await _load_seen(app, pilot)
        view = await _preview(app, pilot)
        shown = _shown_texts(app)
        await pilot.press("e")
        await pilot.pause(0.2)
        (written,) = folder.glob("summary-demo-*.md")
        exported = written.read_text()
        assert exported == view.markdown
        import difflib

        print("\n".join(difflib.unified_diff(shown, _file_texts(exported), lineterm="")))
        assert shown == _file_texts(exported)
        await pilot.press("escape")
        await pilot.pause(0.2)
        await pilot.press("E")
        deadline = time.monotonic() + 60
        while len(list(folder.glob("summary-demo-*.md"))) < 2:
            assert time.monotonic() < deadline, "E wrote no second summary"
            await pilot.pause(0.2)
        (second,) = [p for p in folder.glob("summary-demo-*.md") if p != written]
        assert _headings(second.read_text()) == _headings(exported)


_LABELLED_TOTAL = re.compile(
    r"(\d+(?:\.\d+)? (?:s|min)) \(((?:first log line|process start) to (?:API up|first answer))\)"
)
_BARE_TOTALS = (
    re.compile(r"startup took"),
    re.compile(r"^- load [\d.]+ \w+:", re.M),
    re.compile(r"^total [\d.]+ \w+[,(]", re.M),
)


async def test_a_handoff_labels_each_load_total_by_what_it_measures(
    sim_box_factory: Factory,
) -> None:
    """The handoff after a load said "startup took 2.0 s", "load 4 s" and "total 4.4 s" of
    one load: the log's first line to API up, and process start to the first answer. Each
    total now says which span it is; two totals of one span agree."""
    box = sim_box_factory(SimServerOptions(log_interval_s=30.0), load_seconds=2.0)
    box.start()
    assert box.wait_until_ready(timeout_s=90)
    deck = demo_deck(box)
    app = ServedeckApp(deck.profile, deck)
    folder = paths.data_dir() / "summaries"
    async with app.run_test(size=(120, 40)) as pilot:
        await _load_seen(app, pilot)
        await pilot.press("E")
        deadline = time.monotonic() + 60
        while not list(folder.glob("summary-demo-*.md")):
            assert time.monotonic() < deadline, "E wrote no summary"
            await pilot.pause(0.2)
    (written,) = folder.glob("summary-demo-*.md")
    handoff = written.read_text()
    assert "## Last load" in handoff, handoff
    for bare in _BARE_TOTALS:
        assert not bare.search(handoff), f"an unlabelled load total: {bare.search(handoff)}"
    totals: dict[str, set[str]] = {}
    for figure, span in _LABELLED_TOTAL.findall(handoff):
        totals.setdefault(span, set()).add(figure)
    assert "first log line to API up" in totals and len(totals) >= 2, totals
    for span, figures in totals.items():
        assert len(figures) == 1, f"{span}: {sorted(figures)}"
