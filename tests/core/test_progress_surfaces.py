"""A stall as an incident: the engine-stalled alert, the Timeline event, the handoff's
Incidents entry from the audit log, and the exporter's servedeck_engine_progress{state}."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from tests.support.record_support import ListSink
from tui.alerts.monitor import AlertMonitor
from tui.core.audit import read_audit
from tui.core.config import profile_from_data
from tui.exporter.metrics import ExporterView, ServedeckCollector
from tui.record.feed import RecordFeed
from tui.serving.progress.incident import StallIncidents
from tui.serving.progress.model import ProgressVerdict
from tui.summary.incidents import incidents_from_audit

T0 = 1_790_000_000.0


def verdict(state: str, at_s: float, kind: str | None = None) -> ProgressVerdict:
    evidence = ("4 running, 0 waiting, no generated token for 31 s",) if kind else ()
    if kind:
        evidence += ("Worker_TP3 (pid 42) stopped: state T, wchan do_signal_stop",)
    return ProgressVerdict(state, kind, evidence, T0, at_s, 30.0)  # type: ignore[arg-type]


def test_a_stall_fires_engine_stalled_records_the_timeline_and_the_incident(
    tmp_path: Path,
) -> None:
    profile, problems = profile_from_data({}, "p", None)
    assert problems == []
    sink = ListSink()
    feed = RecordFeed(sink, "box")
    monitor = AlertMonitor(profile.alerting, "box", feed=feed)
    audit = tmp_path / "audit.jsonl"
    incidents = StallIncidents("box", audit)

    assert incidents.note(verdict("serving", T0), feed, monitor) is None
    assert incidents.note(verdict("stalled", T0 + 31, "rank_stopped"), feed, monitor) == "entered"
    assert incidents.note(verdict("stalled", T0 + 33, "rank_stopped"), feed, monitor) is None
    assert monitor.engine.firing() == ["engine-stalled"]
    assert monitor.engine.firing_now(T0 + 33)[0].rule.severity == "critical"
    assert incidents.note(verdict("serving", T0 + 40), feed, monitor) == "left"
    assert monitor.engine.firing() == []

    progress = [event for event in sink.events if event.source == "progress"]
    assert [event.text.split(":")[0] for event in progress] == [
        "engine stalled",
        "engine serving again after a 40 s stall",
    ]
    assert "Worker_TP3 (pid 42) stopped" in progress[0].text

    found = incidents_from_audit(read_audit(audit), "box")
    assert [incident.event for incident in found] == ["engine.stalled", "engine.stall-ended"]
    assert "engine stalled (rank_stopped)" in found[0].text
    assert "Worker_TP3" in found[0].text


def test_unknown_neither_fires_nor_resolves(tmp_path: Path) -> None:
    profile, _ = profile_from_data({}, "p", None)
    monitor = AlertMonitor(profile.alerting, "box")
    incidents = StallIncidents("box", tmp_path / "audit.jsonl")
    incidents.note(verdict("stalled", T0 + 31, "gpu_spin"), None, monitor)
    incidents.note(verdict("unknown", T0 + 35), None, monitor)
    assert monitor.engine.firing() == ["engine-stalled"]


def test_exporter_engine_progress_state() -> None:
    view = ExporterView("box", "vllm.service", "m", "1", progress="stalled")
    registry = CollectorRegistry()
    registry.register(ServedeckCollector(lambda: view))
    text = generate_latest(registry).decode()
    assert (
        'servedeck_engine_progress{host="box",model="m",state="stalled",unit="vllm.service"} 1.0'
        in text
    )
    assert 'state="serving",unit="vllm.service"} 0.0' in text
    bare = CollectorRegistry()
    bare.register(ServedeckCollector(lambda: ExporterView("box", "u", "m", "1")))
    assert "servedeck_engine_progress" not in generate_latest(bare).decode()


def test_the_serving_headline_says_tokens_advance_not_a_second_ready_clock() -> None:
    """The Deck shows the load strip's "serving 0:03" (ready that long) beside this line."""
    assert verdict("serving", T0).headline().startswith("serving: tokens advancing")
