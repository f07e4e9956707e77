"""Render screenshots/tune-view.svg (120x36) and tune-view-80x24.svg: the console's Tune view (U).

The demo console over a fresh simulated box: U, the dialog's default space
(examples/tune-demo.toml), the Plan's preflight, Run; a real tune (real processes,
real drop-ins, real capacity searches; a few minutes on two cores), drawn once it is
over. One run a size (the result is fitted to the view when the tune ends). History and
audit go to a temporary data dir.
Run from the repository root: `python screenshots/render_tune_view.py [NAME ...]`.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from textual.widgets import Input  # noqa: E402

from tui.app import ServedeckApp  # noqa: E402
from tui.compose import open_deck  # noqa: E402
from tui.core.config import demo_profile  # noqa: E402
from tui.screens.tune import TuneConfirmScreen, TuneScreen, TuneSpaceScreen  # noqa: E402

OUT = ROOT / "screenshots"
SIZES = {"tune-view": (120, 36), "tune-view-80x24": (80, 24)}


async def _until(pilot: object, done: object, what: str, timeout_s: float) -> None:
    for _ in range(int(timeout_s / 0.2)):
        if done():  # type: ignore[operator]
            return
        await pilot.pause(0.2)  # type: ignore[attr-defined]
    raise SystemExit(f"render_tune_view: not within {timeout_s:g} s: {what}")


async def render(name: str) -> str:
    scratch = Path(tempfile.mkdtemp(prefix="servedeck-screens-"))
    for kind in ("CONFIG", "DATA", "LOG"):
        os.environ[f"SERVEDECK_{kind}_DIR"] = str(scratch / kind.lower())
    deck = open_deck(demo_profile(), demo_load_s=4.0, demo_autostart=True, demo_wait_ready=True)
    app = ServedeckApp(deck.profile, deck)
    try:
        async with app.run_test(size=SIZES[name]) as pilot:
            await _until(pilot, lambda: app.ready, "the demo to serve", 90)
            await pilot.press("U")
            await _until(pilot, lambda: isinstance(app.screen, TuneSpaceScreen), "the dialog", 10)
            assert app.screen.query_one(Input).value.endswith("tune-demo.toml")
            await pilot.press("enter")
            await _until(pilot, lambda: isinstance(app.screen, TuneConfirmScreen), "preflight", 60)
            await pilot.click("#confirm-yes")
            await _until(pilot, lambda: isinstance(app.screen, TuneScreen), "the Tune view", 10)

            def finished() -> bool:
                return app.tune.board is not None and app.tune.board.snapshot().finished

            await _until(pilot, finished, "the tune to finish", 900)
            await pilot.pause(1.0)
            return app.save_screenshot(filename=f"{name}.svg", path=str(OUT))
    finally:
        await deck.close()


if __name__ == "__main__":
    for name in sys.argv[1:] or list(SIZES):
        print(asyncio.run(render(name)))
