"""Render screenshots/plan-minimax.svg: MiniMax-M2.7 (FP8, 214.33 GiB) on 8 x 96 GiB, TP=4 chosen.

Run from the repository root: `python screenshots/render_plan.py`.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from textual.app import App, ComposeResult  # noqa: E402

from tui.plan import Layout, PlanSettings, build_plan, model_from_config, stated_inventory  # noqa: E402
from widgets.plan_view import PlanView  # noqa: E402

CONFIG = ROOT / "tests" / "support" / "fixtures" / "models" / "MiniMax-M2.7.json"


class PlanScreenshotApp(App[None]):
    TITLE = "servedeck plan"

    def compose(self) -> ComposeResult:
        model = model_from_config(CONFIG.read_text(), "MiniMax-M2.7/config.json", 214.33)
        plan = build_plan(model, stated_inventory(8, 96, "12.0", False), PlanSettings())
        yield PlanView(plan, Layout(4))


async def main() -> None:
    app = PlanScreenshotApp()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        app.save_screenshot(filename="plan-minimax.svg", path=str(ROOT / "screenshots"))


if __name__ == "__main__":
    asyncio.run(main())
