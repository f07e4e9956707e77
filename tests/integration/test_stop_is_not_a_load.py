"""Events are what happened: start -> ready -> serve -> stop -> start on the real simulator.

Issue 34: a stop after serving was taken for a finished load (a bogus loads.jsonl entry and
toast), and the next start said "readiness lost", because /health was still polled while
the server shut down. Real parts: the SimBox's server, engine and workers are processes,
the requests are real HTTP, the console runs under Textual's Pilot.
"""

from __future__ import annotations

import json
import time

import httpx

from tui.app import ServedeckApp
from tui.compose import open_deck
from tui.core import paths
from tui.core.config import demo_profile
from tui.record.model import Event

LOAD_S = 3.0


async def _until(pilot, predicate, timeout_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout_s:g} s waiting for {what}"
        await pilot.pause(0.1)


def _loads() -> list[dict[str, object]]:
    path = paths.data_dir() / "loads.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def test_a_stop_after_serving_is_not_a_load_and_the_next_start_loses_nothing() -> None:
    # no orphans left on stop: the second start must not fail for GPU memory
    deck = open_deck(demo_profile(), demo_load_s=LOAD_S, demo_orphans_on_stop=0)
    app = ServedeckApp(deck.profile, deck)
    events: list[Event] = []
    async with app.run_test(size=(120, 36)) as pilot:
        await _until(pilot, lambda: app.unit_state is not None, 60, "the unit's state")
        assert app.record.recording is not None
        app.record.recording.feed.listeners.append(events.append)
        stops: list[float] = []
        for round_ in range(2):
            app.service._run_action("start")
            await _until(pilot, lambda: app.ready, 120, f"ready, round {round_}")
            kept = round_ + 1
            await _until(pilot, lambda n=kept: len(_loads()) == n, 60, "the load kept")
            async with httpx.AsyncClient(base_url=deck.base_url, timeout=30) as client:
                for _ in range(4):  # serving traffic, as a quick benchmark sends
                    body = {"model": "m", "prompt": "hi", "max_tokens": 16}
                    await client.post("/v1/completions", json=body)
            stops.append(time.time())
            app.service._run_action("stop")
            await _until(
                pilot,
                lambda: app.unit_state is not None and not app.unit_state.is_active,
                60,
                "the stop",
            )
            await pilot.pause(3.0)  # probes that would answer during the shutdown
            assert not app.ready
        await pilot.pause(1.0)
    deck_close = getattr(deck, "close", None)
    if deck_close is not None:
        await deck_close()
    loads = _loads()
    assert len(loads) == 2, [record.get("diagnosis") for record in loads]
    texts = [event.text for event in events]
    assert not [t for t in texts if t.startswith("readiness lost")], texts
    not_ready = [e for e in events if e.source == "readiness" and not e.data.get("ready")]
    assert len(not_ready) == 2, texts  # stamped at each stop, not at the next start
    for event, stop_s in zip(not_ready, stops, strict=True):
        assert stop_s - 1 <= event.ts_s <= stop_s + 30, (event, stop_s)
    changes = [change.text for change in app.record.recording.monitor.changes]  # type: ignore[union-attr]
    assert not [c for c in changes if "readiness" in c.lower() and "lost" in c.lower()], changes
