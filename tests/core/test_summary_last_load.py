"""The summary's "Last load" section: the console's explanation of the last load, quoted
from this host's history (a real vLLM 0.32 CPU load's log, tests/support/fixtures/vllm-0.32-cpu)."""

from __future__ import annotations

import time
from pathlib import Path

from tui.core.config import demo_profile
from tui.deck import Deck
from tui.hosts.local import LocalHost
from tui.serving.load.explain import LoadExplainer
from tui.serving.load.history import record_load
from tui.serving.load.tracker import LoadTracker
from tui.summary import render_markdown
from tui.summary.collect import last_explained_load
from tui.summary.inputs import SummaryInputs
from tui.summary.last_load import last_load_lines

FIXTURE_LOG = Path(__file__).parents[1] / "support" / "fixtures" / "vllm-0.32-cpu" / "server.log"


def test_summary_quotes_the_last_explained_load_with_its_waterfall() -> None:
    profile = demo_profile()
    deck = Deck(profile, LocalHost())
    assert last_explained_load(deck) is None  # no load kept yet: no section
    tracker = LoadTracker()
    tracker.feed_many(FIXTURE_LOG.read_text().splitlines())
    progress = tracker.snapshot()
    serving = next(s for s in progress.timeline if s.phase == "serving")
    explain = LoadExplainer().explain(
        progress,
        first_answer_at_s=serving.started_at_s + 2.5,
        process_started_at_s=progress.timeline[0].started_at_s - 4,
    )
    record_load(deck.host_label, profile.model.name, explain)
    record_load("another-host", profile.model.name, explain)
    record = last_explained_load(deck)
    assert record is not None and record["diagnosis"] == explain.diagnosis

    text = render_markdown(SummaryInputs(profile, deck.host_label, time.time(), last_load=record))
    print(text)
    section = text.split("## Last load\n", 1)[1].split("\n## ", 1)[0]
    assert f"- {explain.diagnosis}" in section
    block = section.split("```\n", 1)[1].split("```", 1)[0].splitlines()
    assert len(block) == len(explain.waterfall) + 1
    assert block[0].startswith("exec -> first log line") and block[0].endswith("4.0 s gap")
    assert block[-1].startswith(f"total {explain.wall_s:.0f} s")


def test_old_or_hand_edited_history_lines_still_render() -> None:
    old = {
        "diagnosis": "load 36 s: weights 0 s (cpu-bound), cache unknown",
        "previous_prediction_error_s": -3.2,
        "waterfall": [  # kept before start_s was: each step follows the last
            {"name": "weights", "wall_s": 10.0, "logged": True},
            {"name": "unlogged after weights", "wall_s": 5.0, "logged": False},
        ],
    }
    lines = last_load_lines(old)
    assert "- The prediction made at the load before was off by -3 s." in lines
    assert any(line.startswith("weights ") and "|█" in line for line in lines)
    assert any(line.startswith("unlogged after weights") and "░|" in line for line in lines)
    broken = {"diagnosis": "load 1 s", "waterfall": [{"name": "x", "wall_s": "soon"}]}
    assert last_load_lines(broken) == ["## Last load", "", "- load 1 s", ""]
    assert last_load_lines({"wall_s": 3}) == [] and last_load_lines(None) == []
