"""Render screenshots/bench-capacity.svg: a real capacity search against the simulator.

The search runs in its own process (as `C` and `bench --capacity` run it)
against a SimBox (real-time clock: less jitter in ITL p99); every event goes to a CapacityView, with the
box's simulated GPUs sampled per level.

Run from the repository root: `python screenshots/render_capacity.py`.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from textual.app import App, ComposeResult  # noqa: E402

from tui.bench.capacity.driver import CapacityProcess, GpuRecorder  # noqa: E402
from tui.bench.capacity.search import CapacitySlo  # noqa: E402
from tui.bench.capacity.spec import CapacitySpec  # noqa: E402
from tui.bench.workload import BenchSpec  # noqa: E402
from tui.sim.box import SimBox, SimServerOptions  # noqa: E402
from tui.sim.gpu_source import SimGpuSource  # noqa: E402
from widgets.capacity_view import CapacityView  # noqa: E402


class CapacityScreenshotApp(App[None]):
    TITLE = "servedeck bench --capacity"

    def compose(self) -> ComposeResult:
        yield CapacityView()


async def run_search(view: CapacityView) -> None:
    box = SimBox(load_seconds=1.5, options=SimServerOptions(shards=8, time_scale=1.0))
    try:
        box.start()
        if await asyncio.to_thread(box.wait_until_active, 120.0) != "active":
            raise RuntimeError("the simulator did not start")
        bench = BenchSpec(base_url=box.base_url, input_tokens=128, output_tokens=64)
        process = CapacityProcess(CapacitySpec(bench, slo=CapacitySlo()))
        recorder = GpuRecorder(SimGpuSource(box))
        async for event in process.events():
            recorder.on_event(event)
            if event["event"] == "result":
                event = {**event, "result": recorder.annotate(event["result"])}
            view.show_event(event)
        recorder.close()
    finally:
        await asyncio.to_thread(box.close)


async def main() -> None:
    app = CapacityScreenshotApp()
    async with app.run_test(size=(160, 20)) as pilot:
        await pilot.pause()
        await run_search(app.query_one(CapacityView))
        await pilot.pause(0.3)
        app.save_screenshot(filename="bench-capacity.svg", path=str(ROOT / "screenshots"))


if __name__ == "__main__":
    asyncio.run(main())
