"""Render screenshots/bench-sweep.svg: a real sweep (1, 8, 32, 64 streams) against the simulator.

The sweep runs the benchmark engine (its own process) against a SimBox and
feeds every event to a BenchView, as the console does. Also registered as
the `bench-sweep` scene of screenshots/render.py.

Run from the repository root: `python screenshots/render_bench.py`.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from textual.app import App, ComposeResult  # noqa: E402

from tui.bench.driver import run_bench  # noqa: E402
from tui.bench.model import BenchResult, RunContext  # noqa: E402
from tui.bench.workload import BenchSpec  # noqa: E402
from tui.sim.box import SimBox, SimServerOptions  # noqa: E402
from widgets.bench_view import BenchView  # noqa: E402

SWEEP_OPTIONS = SimServerOptions(
    shards=8, prefill_tok_s=20_000.0, decode_step_s=0.006, decode_alpha=0.02, log_interval_s=5.0
)


class BenchScreenshotApp(App[None]):
    TITLE = "servedeck bench"

    def compose(self) -> ComposeResult:
        yield BenchView()


async def run_sweep(view: BenchView) -> BenchResult:
    """Start a simulated box, run the sweep into `view`, stop the box."""
    box = SimBox(load_seconds=1.5, options=SWEEP_OPTIONS)
    try:
        box.start()
        state = await asyncio.to_thread(box.wait_until_active, 120.0)
        if state != "active":
            raise RuntimeError(f"the simulator did not start: {state}")
        spec = BenchSpec(
            base_url=box.base_url, preset="sweep", input_tokens=256, output_tokens=64,
            concurrency=(1, 8, 32, 64), warmup_requests=1,
            context=RunContext(profile="demo", host="simulator", gpus="0-7", tp=8),
        )  # fmt: skip

        def show(event: object) -> None:
            view.show_event(event)

        result = await run_bench(spec, on_event=show)
        view.show_history([result])
        return result
    finally:
        await asyncio.to_thread(box.close)


async def prepare(app: App) -> None:
    await run_sweep(app.query_one(BenchView))


async def main() -> None:
    app = BenchScreenshotApp()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await prepare(app)
        await pilot.pause(0.3)
        app.save_screenshot(filename="bench-sweep.svg", path=str(ROOT / "screenshots"))


if __name__ == "__main__":
    asyncio.run(main())
