"""Render the summary examples: screenshots/summary-demo.md and screenshots/summary.svg.

Run from the repository root:  python screenshots/render_summary.py
The demo box is started, loaded and summarised; machine-specific paths (the
interpreter, the temporary state dir, the data dirs) are replaced by
placeholders so the committed files say nothing about where they were made.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.summary_helpers import demo_deck, seed_history  # noqa: E402
from tui.core.config import demo_profile  # noqa: E402
from tui.sim.box import SimBox, SimServerOptions  # noqa: E402
from tui.summary import collect_summary, render_markdown  # noqa: E402

OUT = REPO / "screenshots"


def _scrub(text: str, box: SimBox, home: Path) -> str:
    text = text.replace(sys.executable, "python").replace(str(box.state_dir), "<state-dir>")
    return text.replace(str(home), "~/.local/servedeck")


async def _summary(box: SimBox, home: Path) -> str:
    deck = demo_deck(box)
    try:
        inputs = await collect_summary(deck)
    finally:
        await deck.host.close()
    return _scrub(render_markdown(inputs), box, home)


async def _svg(markdown: str) -> Path:
    from textual.app import App, ComposeResult

    from widgets.summary_view import SummaryView

    class SummaryApp(App[None]):
        def compose(self) -> ComposeResult:
            yield SummaryView(markdown)

        def on_mount(self) -> None:
            self.query_one(SummaryView).show_status("e export · r refresh · escape close")

    app = SummaryApp()
    async with app.run_test(size=(120, 48)) as pilot:
        await pilot.pause(1.0)
        path = app.save_screenshot(filename="summary.svg", path=str(OUT))
    return Path(path)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="servedeck-summary-") as tmp:
        home = Path(tmp)
        for name in ("CONFIG", "DATA", "LOG"):
            (home / name.lower()).mkdir()
            os.environ[f"SERVEDECK_{name}_DIR"] = str(home / name.lower())
        seed_history(demo_profile())
        with SimBox(home / "box", load_seconds=6.0, options=SimServerOptions()) as box:
            box.start()
            box.wait_until_active(timeout_s=120)
            markdown = asyncio.run(_summary(box, home))
    (OUT / "summary-demo.md").write_text(markdown)
    print(OUT / "summary-demo.md")
    print(asyncio.run(_svg(markdown)))


if __name__ == "__main__":
    main()
