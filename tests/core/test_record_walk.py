"""What the Timeline records is what happened (found walking the demo twice).

A console opened while its unit was starting recorded "load phase: stopped" first (where its
log reader begins, not an event), and a kill's outcome read "kill-outcome by root:
action=console kill" with nothing of what the kill did.
"""

from __future__ import annotations

from dataclasses import replace

from tests.core.test_summary_startup_column import _load
from tests.support.record_support import ListSink
from tui.record.feed import RecordFeed


def test_a_console_opening_records_no_stop_that_did_not_happen() -> None:
    sink = ListSink()
    feed = RecordFeed(sink, "simulator")
    base = _load()
    for at_s, phase in ((1.0, "stopped"), (2.0, "starting"), (9.0, "serving"), (60.0, "stopped")):
        feed.observe_progress(replace(base, phase=phase, at_s=at_s))
    phases = [(e.ts_s, e.text) for e in sink.events if e.text.startswith("load phase: ")]
    assert phases == [
        (2.0, "load phase: starting"),
        (9.0, "load phase: serving"),
        (60.0, "load phase: stopped"),
    ], phases
    assert feed.phase_seen == "stopped"


def test_a_kill_outcome_on_the_timeline_says_what_the_kill_did() -> None:
    sink = ListSink()
    feed = RecordFeed(sink, "simulator")
    feed.observe_audit(
        {"ts": 5.0, "event": "kill-outcome", "operator": "root", "host": "simulator",
         "action": "console kill", "freed_bytes": 181791998604,
         "summary": "simulator: 2 terminated; 169.31 GiB GPU memory freed"}
    )  # fmt: skip
    (event,) = sink.events
    assert "2 terminated; 169.31 GiB GPU memory freed" in event.text, event.text
