"""XIDs through the alert rules: `gpu.xid_recent` / `gpu.xid_critical_recent` per GPU,
the default rules and a profile's own, and the alert recorded on the Timeline."""

from __future__ import annotations

from tests.integration.test_health_xid import BUSES, LINES
from tests.support.record_support import ListSink
from tui.alerts.monitor import AlertMonitor
from tui.alerts.signals import XID_WINDOW_S
from tui.core.config import profile_from_data
from tui.gpu.model import GpuBoxSnapshot, GpuSample
from tui.health.xid.decode import XidEvent, decode_xid
from tui.record.feed import RecordFeed

T0 = 1_790_000_000.0


def _box(at_s: float) -> GpuBoxSnapshot:
    samples = tuple(GpuSample(i, temperature_c=40.0) for i in range(8))
    return GpuBoxSnapshot("nvml", at_s, samples=samples)


def _xid(line_index: int, at_s: float, cursor: str | None = None) -> XidEvent:
    event = decode_xid(LINES[line_index][0], BUSES, at_s, cursor)
    assert event is not None
    return event


def _monitor(data: dict[str, object] | None = None) -> tuple[AlertMonitor, ListSink]:
    profile, problems = profile_from_data(data or {}, "p", None)
    assert problems == []
    sink = ListSink()
    feed = RecordFeed(sink, "box")
    return AlertMonitor(profile.alerting, "box", feed=feed), sink


def test_an_xid_fires_and_resolves_once_the_window_passes() -> None:
    monitor, sink = _monitor()
    monitor.observe_gpu(_box(T0))
    changes = monitor.observe_xid(_xid(0, T0 + 1), now_s=T0 + 1)  # XID 79 on GPU 2
    assert {(c.rule.name, c.gpu, c.state) for c in changes} == {
        ("gpu-xid", 2, "firing"),
        ("gpu-xid-critical", 2, "firing"),
    }
    assert [c.rule.severity for c in changes if c.rule.name == "gpu-xid-critical"] == ["critical"]
    assert monitor.observe_gpu(_box(T0 + 60)) == []  # still within the window: no repeat
    resolved = monitor.observe_gpu(_box(T0 + 2 + XID_WINDOW_S))
    assert {(c.rule.name, c.gpu, c.state) for c in resolved} == {
        ("gpu-xid", 2, "resolved"),
        ("gpu-xid-critical", 2, "resolved"),
    }
    recorded = [e for e in sink.events if e.kind == "alert"]
    assert len(recorded) == 4 and recorded[0].gpu == 2 and "XID" in recorded[0].text


def test_an_app_fault_xid_is_a_warning_only_and_the_backlog_is_past() -> None:
    monitor, _ = _monitor()
    monitor.observe_gpu(_box(T0))
    changes = monitor.observe_xid(_xid(3, T0 + 1), now_s=T0 + 1)  # XID 43 on GPU 3
    assert [(c.rule.name, c.gpu) for c in changes] == [("gpu-xid", 3)]
    old = _xid(0, T0 - XID_WINDOW_S - 5)  # the journal's backlog from hours ago
    assert monitor.observe_xid(old, now_s=T0 + 2) == []
    unknown_gpu = decode_xid(LINES[0][0], {}, T0 + 2)  # a bus id no GPU answers to
    assert unknown_gpu is not None and monitor.observe_xid(unknown_gpu, now_s=T0 + 2) == []


def test_profile_rule_replaces_the_default() -> None:
    data = {
        "alerts": [
            {"name": "gpu-xid", "metric": "gpu.xid_recent", "condition": ">= 3"},
        ],
    }
    monitor, _ = _monitor(data)
    monitor.observe_gpu(_box(T0))
    first = monitor.observe_xid(_xid(3, T0 + 1), now_s=T0 + 1)
    second = monitor.observe_xid(_xid(3, T0 + 2), now_s=T0 + 2)
    third = monitor.observe_xid(_xid(3, T0 + 3), now_s=T0 + 3)
    assert first == [] and second == []
    assert [(c.rule.name, c.value) for c in third] == [("gpu-xid", 3.0)]


def test_recorded_xid_lands_once_per_journal_entry() -> None:
    sink = ListSink()
    feed = RecordFeed(sink, "box")
    event = _xid(0, T0, cursor="s=abc;i=1")
    feed.observe_xid(event)
    feed.observe_xid(event)  # read again after a reconnect
    keys = {e.key for e in sink.events}
    assert len(keys) == 1 and keys == {"xid:s=abc;i=1"}
    assert sink.events[0].text == (
        "XID 79 on GPU 2: GPU has fallen off the bus -> reboot the node; RMA if it repeats"
    )
