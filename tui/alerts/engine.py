"""Evaluating rules: per (rule, GPU) a pending -> firing -> resolved state, with mute and ack.

The engine is fed signal values with their timestamps and returns the changes;
who shows, rings, records or posts them is the caller's business.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from tui.core.alert_rules import AlertRule

# metric -> {GPU index or None: value}
Signals = Mapping[str, Mapping[int | None, float]]


@dataclass(frozen=True, slots=True)
class AlertChange:
    alert_id: str
    rule: AlertRule
    gpu: int | None
    state: str  # "firing" | "resolved"
    value: float
    at_s: float
    since_s: float  # when the condition started to hold
    muted: bool = False
    detail: str = ""  # the evidence behind the value, where the signal has words for it

    @property
    def text(self) -> str:
        where = f" on GPU {self.gpu}" if self.gpu is not None else ""
        what = self.rule.message or self.rule.name
        why = f" ({self.detail})" if self.detail else ""
        if self.state == "firing":
            return f"{self.rule.severity.upper()} {what}{where}: {self.rule.condition} (now {self.value:g}){why}"
        return f"resolved: {what}{where} (now {self.value:g}){why}"

    def payload(self, host_label: str) -> dict[str, object]:
        """The webhook's JSON body (redacted by the sender)."""
        return {
            "alert": self.alert_id,
            "rule": self.rule.name,
            "state": self.state,
            "severity": self.rule.severity,
            "host": host_label,
            "gpu": self.gpu,
            "condition": self.rule.condition,
            "value": self.value,
            "since": self.since_s,
            "at": self.at_s,
            "text": self.text,
        }


@dataclass(frozen=True, slots=True)
class FiringAlert:
    """One alert firing now, as the "alerts firing now" view lists it."""

    alert_id: str
    rule: AlertRule
    gpu: int | None
    since_s: float  # when the condition started to hold
    value: float  # the last value observed
    acknowledged: bool
    muted: bool


_SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}


@dataclass
class _Track:
    pending_since_s: float | None = None
    firing: bool = False
    rule: AlertRule | None = None
    gpu: int | None = None
    value: float = math.nan


@dataclass
class AlertEngine:
    rules: tuple[AlertRule, ...]
    _tracks: dict[str, _Track] = field(default_factory=dict)
    muted_until_s: dict[str, float] = field(default_factory=dict)
    acked: set[str] = field(default_factory=set)

    def observe(self, signals: Signals, now_s: float | None = None) -> list[AlertChange]:
        """Feed the current values of some signals; a signal not given keeps its state."""
        now_s = time.time() if now_s is None else now_s
        changes = []
        for rule in self.rules:
            values = signals.get(rule.metric)
            if values is None:
                continue
            for gpu, value in values.items():
                alert_id = rule.name if gpu is None else f"{rule.name}:gpu{gpu}"
                track = self._tracks.setdefault(alert_id, _Track(rule=rule, gpu=gpu))
                track.value = value
                change = self._step(rule, alert_id, gpu, track, value, now_s)
                if change is not None:
                    changes.append(change)
        return changes

    def _step(
        self,
        rule: AlertRule,
        alert_id: str,
        gpu: int | None,
        track: _Track,
        value: float,
        now_s: float,
    ) -> AlertChange | None:
        if not track.firing:
            if not rule.holds(value):
                track.pending_since_s = None
                return None
            if track.pending_since_s is None:
                track.pending_since_s = now_s
            if now_s - track.pending_since_s < rule.for_s:
                return None
            track.firing = True
            return AlertChange(
                alert_id,
                rule,
                gpu,
                "firing",
                value,
                now_s,
                track.pending_since_s,
                self.is_muted(alert_id, now_s),
            )
        if not rule.cleared(value):
            return None
        since = track.pending_since_s or now_s
        track.firing = False
        track.pending_since_s = None
        self.acked.discard(alert_id)  # an acknowledgement lasts one firing
        return AlertChange(
            alert_id, rule, gpu, "resolved", value, now_s, since, self.is_muted(alert_id, now_s)
        )

    def firing(self) -> list[str]:
        return sorted(alert_id for alert_id, track in self._tracks.items() if track.firing)

    def firing_now(self, now_s: float | None = None) -> tuple[FiringAlert, ...]:
        """Every alert firing now, the most severe and then the oldest first."""
        now_s = time.time() if now_s is None else now_s
        alerts = [
            FiringAlert(
                alert_id,
                track.rule,
                track.gpu,
                track.pending_since_s if track.pending_since_s is not None else now_s,
                track.value,
                alert_id in self.acked,
                self.is_muted(alert_id, now_s),
            )
            for alert_id, track in self._tracks.items()
            if track.firing and track.rule is not None
        ]
        alerts.sort(key=lambda a: (_SEVERITY_ORDER.get(a.rule.severity, 3), a.since_s, a.alert_id))
        return tuple(alerts)

    def mute(self, alert_id: str, for_s: float, now_s: float | None = None) -> None:
        self.muted_until_s[alert_id] = (time.time() if now_s is None else now_s) + for_s

    def is_muted(self, alert_id: str, now_s: float | None = None) -> bool:
        until = self.muted_until_s.get(alert_id) or self.muted_until_s.get(alert_id.split(":")[0])
        return until is not None and (time.time() if now_s is None else now_s) < until

    def acknowledge(self, alert_id: str) -> None:
        if alert_id in self.firing():
            self.acked.add(alert_id)
