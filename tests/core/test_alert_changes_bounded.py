"""The alert monitor keeps only its latest changes in memory: an alert that fires and
resolves all night (every quarter's stop leaves leftovers until the clean-up) must not
grow the console without end; the recording keeps every change."""

from __future__ import annotations

from tui.alerts.monitor import AlertMonitor
from tui.core.alert_rules import AlertingConfig, AlertRule
from tui.serving.unit.service import UnitState

LEFTOVERS = AlertRule("leftovers", "procs.leftovers_while_inactive", ">=", 1, 0, "warning")
STOPPED = UnitState("x.service", "loaded", "inactive", "dead", "success", None, None, 0, None, 0)
KEPT_AT_MOST = 256


def test_a_night_of_firing_and_resolving_keeps_only_the_latest_changes() -> None:
    monitor = AlertMonitor(AlertingConfig(rules=(LEFTOVERS,), use_defaults=False), "box")
    monitor.observe_unit(STOPPED, now_s=0.0)
    for step in range(1, 2001):
        monitor.observe_leftovers(step % 2, now_s=float(step))  # fires, resolves, fires...
    assert len(monitor.changes) <= KEPT_AT_MOST
    latest = monitor.changes[-1]
    assert latest.state == "resolved" and latest.at_s == 2000.0
