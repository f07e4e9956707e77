"""The live load explainer on the Timeline: one event when what the line says changes."""

from __future__ import annotations

from dataclasses import replace

from tests.support.record_support import ListSink
from tui.record.feed import RecordFeed
from tui.serving.load.live import LiveLoad, final_load


def reading(at_s: float, bound: str = "io", **changes: object) -> LiveLoad:
    base = LiveLoad(
        "weights", 12.0, bound, 1.2e9, 0.8, "nvme0n1", 1.3e9, 3.1e9, 35.0, 0.0, None, None,
        f"weights 0:12: reading a cold checkpoint at 1.2 GB/s ({bound})", at_s,
    )  # fmt: skip
    return replace(base, **changes)  # type: ignore[arg-type]


def test_only_changes_become_events_and_the_diagnosis_closes_the_load() -> None:
    sink = ListSink()
    feed = RecordFeed(sink, "gpu-box", extra_secrets=("s3cr3t",))
    feed.observe_load_live(None)
    feed.observe_load_live(reading(100.0))
    feed.observe_load_live(reading(103.0, read_bytes_per_s=1.1e9))  # same story: no event
    feed.observe_load_live(reading(106.0, bound="cpu"))
    feed.observe_load_live(reading(109.0, bound="cpu", lagging_gpu=3))
    feed.observe_load_live(reading(112.0, bound="cpu", problem="/proc/77/io: token s3cr3t"))
    feed.observe_load_live(final_load("load 52 s: weights read at 1.2 GB/s, 35 % cached"))
    texts = [event.text for event in sink.events]
    assert len(texts) == 5, texts
    assert [event.ts_s for event in sink.events[:4]] == [100.0, 106.0, 109.0, 112.0]
    assert all(event.kind == "engine" and event.source == "load" for event in sink.events)
    assert texts[0].startswith("load explainer: weights 0:12: reading a cold checkpoint")
    assert sink.events[2].data["lagging_gpu"] == 3
    assert "s3cr3t" not in str(sink.events[3].data) and "s3cr3t" not in texts[3]
    assert texts[4] == "load diagnosis: load 52 s: weights read at 1.2 GB/s, 35 % cached"
    assert sink.events[4].data["final"] is True
