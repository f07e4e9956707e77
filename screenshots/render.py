"""Render the SVG screenshots under screenshots/ headlessly (Textual run_test + save_screenshot).

Run from the repository root:  python screenshots/render.py [NAME ...]
Each scene builds an app, lets it settle, optionally presses keys, and saves NAME.svg.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from textual.app import App  # noqa: E402

from screenshots.render_bench import BenchScreenshotApp  # noqa: E402
from screenshots.render_bench import prepare as run_bench_sweep  # noqa: E402
from tests.support.canned_host import canned_deck  # noqa: E402
from tui.app import ServedeckApp  # noqa: E402
from tui.compose import open_deck  # noqa: E402
from tui.core.config import demo_profile, load_profile_file  # noqa: E402
from tui.serving.load.tracker import Phase  # noqa: E402

OUT = REPO / "screenshots"


@dataclass
class Scene:
    name: str
    make_app: Callable[[], App]
    size: tuple[int, int] = (120, 36)
    keys: tuple[str, ...] = ()
    settle_s: float = 0.5
    prepare: Callable[[App], Awaitable[None]] | None = None
    notes: list[str] = field(default_factory=list)


def _shell() -> App:
    profile = load_profile_file(REPO / "profiles" / "kimi-k25-int4-lxc.toml")
    return ServedeckApp(profile, canned_deck(profile))


def _demo(
    load_s: float, stall_after_s: float | None = None, server_args: tuple[str, ...] = ()
) -> Callable[[], App]:
    """The `servedeck demo` console over a fresh SimBox; history and audit go to a temp dir."""

    def make() -> App:
        scratch = Path(tempfile.mkdtemp(prefix="servedeck-screens-"))
        for name in ("CONFIG", "DATA", "LOG"):
            os.environ[f"SERVEDECK_{name}_DIR"] = str(scratch / name.lower())
        profile = demo_profile()
        if stall_after_s is not None:
            service = replace(profile.service, stall_after_s=stall_after_s)
            profile = replace(profile, service=service)
        deck = open_deck(
            profile, demo_load_s=load_s, demo_autostart=True, demo_server_args=server_args
        )
        return ServedeckApp(deck.profile, deck)

    return make


async def _until(app: App, done: Callable[[], bool], what: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError(f"screenshot: timed out waiting for {what}")
        await asyncio.sleep(0.1)


async def _mid_load(app: App) -> None:
    """Weights about 40% in: the shard bar, its ETA and GPU memory rising."""

    def loading() -> bool:
        progress = app.progress  # type: ignore[attr-defined]
        return (
            progress is not None
            and progress.phase == Phase.WEIGHTS
            and progress.shards_total is not None
            and (progress.shards_done or 0) >= progress.shards_total * 0.4
        )

    await _until(app, loading, "the weights phase")
    await asyncio.sleep(1.2)  # one load-clock tick: ETA and the GPU pane catch up


async def _serving_under_bench(app: App) -> None:
    """Ready, and the Deck's live metrics while the one-key benchmark drives traffic."""
    await _until(app, lambda: app.ready, "ready")  # type: ignore[attr-defined]
    app.action_bench()  # type: ignore[attr-defined]
    app.action_show_tab("deck")  # type: ignore[attr-defined]

    def generating() -> bool:
        metrics = app.serving.metrics  # type: ignore[attr-defined]
        return bool(metrics and metrics.generation_tokens_per_s and metrics.running_reqs)

    await _until(app, generating, "live serving metrics")
    await asyncio.sleep(0.5)


async def _bench_done(app: App) -> None:
    await _serving_under_bench(app)
    app.action_show_tab("bench")  # type: ignore[attr-defined]
    await _until(app, lambda: app.bench.process is None, "the benchmark")  # type: ignore[attr-defined]
    await asyncio.sleep(0.5)


async def _dp_starved(app: App) -> None:
    """Two data-parallel engines under the one-key benchmark: engine 1 gets nothing."""
    await _until(app, lambda: app.ready, "ready")  # type: ignore[attr-defined]
    app.action_bench()  # type: ignore[attr-defined]
    app.action_show_tab("deck")  # type: ignore[attr-defined]

    def one_busy() -> bool:
        metrics = app.serving.metrics  # type: ignore[attr-defined]
        engines = metrics.engines if metrics else ()
        return len(engines) == 2 and bool(engines[0].running_reqs) and not engines[1].running_reqs

    await _until(app, one_busy, "engine 0 serving, engine 1 starved")
    await asyncio.sleep(1.5)  # a second scrape: both engines' tok/s over an interval


async def _stalled(app: App) -> None:
    """A stream in flight, worker rank 3 SIGSTOPped (a real process): the Deck says stalled,
    offers D and R, and D's stacks toast names where each rank is."""
    import httpx

    await _until(app, lambda: app.ready, "ready")  # type: ignore[attr-defined]
    url = app.deck.box.base_url  # type: ignore[attr-defined]
    body = {"model": "kimi-k2.5-int4", "prompt": "hi", "max_tokens": 4000, "stream": True}
    client = httpx.AsyncClient(base_url=url, timeout=120)
    stream = asyncio.ensure_future(client.post("/v1/completions", json=body))
    stream.add_done_callback(lambda done: done.cancelled() or done.exception())  # cut at the end
    app._screenshot_stream = (client, stream)  # type: ignore[attr-defined]  # kept until the render

    def state() -> str | None:
        verdict = app.serving.engine_progress.verdict  # type: ignore[attr-defined]
        return verdict.state if verdict is not None else None

    await _until(app, lambda: state() == "serving", "serving")
    await client.post("/_sim/fault", json={"stop_rank": 3})
    await _until(app, lambda: state() == "stalled", "stalled")
    app.action_show_tab("deck")  # type: ignore[attr-defined]
    app.action_stacks()  # type: ignore[attr-defined]
    await _until(
        app,
        lambda: any(n.title == "Engine stacks" and "rank" in n.message for n in app._notifications),
        "the stacks",
    )
    await asyncio.sleep(0.5)


SCENES: dict[str, Scene] = {
    "shell": Scene("shell", _shell),
    # `servedeck demo` (a real simulated box, about 15 s): loading, then serving.
    "demo-loading": Scene("demo-loading", _demo(20.0), prepare=_mid_load),
    "demo-serving": Scene("demo-serving", _demo(6.0), prepare=_serving_under_bench),
    "demo-bench": Scene("demo-bench", _demo(6.0), prepare=_bench_done),
    # `servedeck demo --data-parallel-size 2 --starve-engine 1` under the benchmark.
    "deck-dp": Scene(
        "deck-dp",
        _demo(6.0, server_args=("--data-parallel-size", "2", "--starve-engine", "1")),
        prepare=_dp_starved,
    ),
    # The same box stalled: a rank SIGSTOPped mid-stream, then D (about 20 s).
    "stall": Scene("stall", _demo(6.0, stall_after_s=5.0), prepare=_stalled),
    # A real sweep against a simulated box (about 20 s).
    "bench-sweep": Scene("bench-sweep", BenchScreenshotApp, prepare=run_bench_sweep),
}


async def render(scene: Scene) -> Path:
    app = scene.make_app()
    async with app.run_test(size=scene.size) as pilot:
        await pilot.pause(scene.settle_s)
        if scene.prepare is not None:
            await scene.prepare(app)
        for key in scene.keys:
            await pilot.press(key)
            await pilot.pause(0.2)
        await pilot.pause(0.2)
        path = app.save_screenshot(filename=f"{scene.name}.svg", path=str(OUT))
    return Path(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "names", nargs="*", help=f"scenes to render (default all: {', '.join(SCENES)})"
    )
    args = parser.parse_args()
    for name in args.names or list(SCENES):
        if name not in SCENES:
            parser.error(f"unknown scene {name!r}")
        print(asyncio.run(render(SCENES[name])))


if __name__ == "__main__":
    main()
