"""Wires the alert engine to the sources and to delivery: recorder, webhook, the screen.

The console and `servedeck record` call the same `observe_*` methods the feed
gets; a change is recorded always, and shown, rung and posted unless muted.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from tui.alerts.engine import AlertChange, AlertEngine, Signals
from tui.alerts.signals import (
    XID_WINDOW_S,
    gpu_signals,
    metrics_signals,
    progress_signals,
    readiness_signals,
    unit_signals,
    xid_signals,
)
from tui.alerts.webhook import Delivery, WebhookSender, url_for_display
from tui.core.alert_rules import AlertingConfig
from tui.gpu.model import GpuBoxSnapshot
from tui.serving.metrics import ServerMetrics
from tui.serving.progress.model import ProgressVerdict
from tui.serving.slo_live import LiveSloWatch
from tui.serving.unit.service import UnitState

if TYPE_CHECKING:
    from tui.health.xid.decode import XidEvent

DELIVERY_FAILED = "alert.delivery_failed"  # the data's `event` of a failed webhook POST
# The latest changes kept in memory, for a look at what just fired; the recording has them
# all, and a console open for weeks must not keep every change it ever saw.
CHANGES_KEPT = 256


class AlertSink(Protocol):
    """Where a change lands in the recording (`tui.record.feed.RecordFeed` is one): the
    recorder opens the monitor with its feed, so alerts never import the recorder."""

    def alert_event(
        self, ts_s: float, source: str, text: str, gpu: int | None, data: dict[str, Any]
    ) -> None: ...


class AlertMonitor:
    def __init__(
        self,
        config: AlertingConfig,
        host_label: str,
        *,
        feed: AlertSink | None = None,
        notify: Callable[[AlertChange], None] | None = None,
        extra_secrets: tuple[str, ...] = (),
    ) -> None:
        self.engine = AlertEngine(config.effective_rules())
        self.host_label = host_label
        self.feed = feed
        self.notify = notify
        self.webhook = WebhookSender(config.webhook, extra_secrets) if config.webhook else None
        self.changes: deque[AlertChange] = deque(maxlen=CHANGES_KEPT)
        self._ready_ever = False
        self._unit: UnitState | None = None
        self._leftovers: int | None = None
        self._xids: list[tuple[float, int, bool]] = []  # (time, GPU, critical), the window's
        self._gpus: list[int] = []
        self.slo = LiveSloWatch(config.slo)

    def close(self) -> None:
        if self.webhook is not None:
            self.webhook.close()
            self.record_delivery_failures()

    def record_delivery_failures(self) -> list[Delivery]:
        """Each webhook POST that failed since the last call becomes a Timeline event
        (`alert.delivery_failed`, the reason and the URL without its path); called on the
        caller's thread at every observation, never from a delivery's thread."""
        failures = self.webhook.take_failures() if self.webhook is not None else []
        if self.feed is None or self.webhook is None:
            return failures
        url = url_for_display(self.webhook.config.url)
        for failure in failures:
            self.feed.alert_event(
                time.time(),
                "webhook",
                f"alert delivery failed: {failure.alert_id} to {url}: {failure.detail}",
                None,
                {
                    "event": DELIVERY_FAILED,
                    "alert": failure.alert_id,
                    "reason": failure.detail,
                    "attempts": failure.attempts,
                    "url": url,
                },
            )
        return failures

    def _observe(
        self, signals: Signals, now_s: float | None = None, details: dict[str, str] | None = None
    ) -> list[AlertChange]:
        changes = self.engine.observe(signals, now_s)
        if details:
            changes = [replace(c, detail=details.get(c.rule.metric, "")) for c in changes]
        for change in changes:
            self._deliver(change)
        if self.webhook is not None:
            self.record_delivery_failures()
        return changes

    def _deliver(self, change: AlertChange) -> None:
        self.changes.append(change)
        if self.feed is not None:
            data = change.payload(self.host_label) | {"muted": change.muted}
            self.feed.alert_event(change.at_s, "alert", change.text, change.gpu, data)
        if change.muted:
            return
        if self.webhook is not None:
            self.webhook.send(change.alert_id, change.payload(self.host_label))
        if self.notify is not None:
            self.notify(change)

    # --- the sources -----------------------------------------------------------------------
    def observe_gpu(self, snapshot: GpuBoxSnapshot) -> list[AlertChange]:
        changes = self._observe(gpu_signals(snapshot), snapshot.taken_at_s)
        if snapshot.available:
            self._gpus = [sample.index for sample in snapshot.samples]
        if self._xids:  # the window moves: XIDs that aged out resolve their alert
            changes += self._observe_xids(snapshot.taken_at_s)
        return changes

    def observe_xid(self, event: XidEvent, now_s: float | None = None) -> list[AlertChange]:
        """An XID on a known GPU; one from before the window (the journal's backlog) is past."""
        now_s = time.time() if now_s is None else now_s
        if event.gpu_index is None:
            return []
        at_s = event.timestamp_s if event.timestamp_s is not None else now_s
        if now_s - at_s > XID_WINDOW_S:
            return []
        self._xids.append((at_s, event.gpu_index, event.severity == "crit"))
        return self._observe_xids(now_s)

    def _observe_xids(self, now_s: float) -> list[AlertChange]:
        signals = xid_signals(self._xids, self._gpus, now_s)
        self._xids = [x for x in self._xids if now_s - x[0] <= XID_WINDOW_S]
        return self._observe(signals, now_s)

    def observe_metrics(self, metrics: ServerMetrics) -> list[AlertChange]:
        changes = self._observe(metrics_signals(metrics), metrics.at_s)
        if metrics.slo is not None:  # the live SLO windows: each burn with its evidence
            burns = self.slo.observe(metrics.slo)
            signals: Signals = {name: {None: value} for name, (value, _) in burns.items()}
            details = {name: words for name, (_, words) in burns.items()}
            changes += self._observe(signals, metrics.at_s, details)
        return changes

    def observe_progress(self, verdict: ProgressVerdict) -> list[AlertChange]:
        return self._observe(progress_signals(verdict), verdict.at_s)

    def observe_unit(self, state: UnitState, now_s: float | None = None) -> list[AlertChange]:
        self._unit = state
        changes = self._observe(unit_signals(state, self._leftovers), now_s)
        if not state.is_active:
            changes += self.observe_stopped(now_s)
        return changes

    def observe_stopped(self, now_s: float | None = None) -> list[AlertChange]:
        """The server stopped (its unit, or its log): a stopped service is not "lost
        readiness", and its readiness is forgotten, so the next start's first not-ready
        answer is a load under way, not a loss."""
        self._ready_ever = False
        return self._observe(readiness_signals(False, False), now_s)

    def observe_leftovers(self, count: int, now_s: float | None = None) -> list[AlertChange]:
        self._leftovers = count
        if self._unit is None:
            return []
        return self._observe(unit_signals(self._unit, count), now_s)

    def observe_ready(self, ready: bool, now_s: float | None = None) -> list[AlertChange]:
        self._ready_ever = self._ready_ever or ready
        active = self._unit is None or self._unit.is_active
        return self._observe(
            readiness_signals(self._ready_ever and active, ready), now_s or time.time()
        )
