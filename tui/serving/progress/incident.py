"""A stall is an incident: a Timeline event, the engine-stalled alert and an audit record,
each once on entering `stalled` and once on leaving it (the console and the recorder share it)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tui.core.audit import append_audit
from tui.serving.progress.model import ProgressVerdict

if TYPE_CHECKING:
    from tui.alerts.monitor import AlertMonitor
    from tui.record.feed import RecordFeed

STALLED_EVENT = "engine.stalled"
RESUMED_EVENT = "engine.stall-ended"
STACKS_EVENT = "engine.stacks"


class StallIncidents:
    """Notes each verdict; on a change into or out of `stalled`, records the incident."""

    def __init__(self, host_label: str, audit_path: Path | None = None) -> None:
        self.host_label = host_label
        self.audit_path = audit_path
        self._stalled: ProgressVerdict | None = None

    def note(
        self,
        verdict: ProgressVerdict,
        feed: RecordFeed | None = None,
        monitor: AlertMonitor | None = None,
    ) -> str | None:
        """ "entered" or "left" on a change (after recording it), else None."""
        if monitor is not None:
            monitor.observe_progress(verdict)
        change: str | None = None
        details: dict[str, object]
        if verdict.state == "stalled" and self._stalled is None:
            change, self._stalled = "entered", verdict
            text = f"engine stalled: {verdict.kind_text}; " + "; ".join(verdict.evidence)
            details = {"kind": verdict.kind, "evidence": list(verdict.evidence)}
            append_audit(STALLED_EVENT, self.host_label, details, self.audit_path)
        elif verdict.state != "stalled" and self._stalled is not None:
            lasted_s = verdict.at_s - (self._stalled.since_s or self._stalled.at_s)
            change, self._stalled = "left", None
            text = f"engine {verdict.state} again after a {lasted_s:.0f} s stall"
            details = {"state": verdict.state, "stalled_s": round(lasted_s, 1)}
            append_audit(RESUMED_EVENT, self.host_label, details, self.audit_path)
        if change is not None and feed is not None:
            feed.observe_stall(verdict.at_s, text, verdict.as_dict())
        return change

    @property
    def stalled(self) -> bool:
        return self._stalled is not None

    def attach_stacks(
        self, at_s: float, summary: str, path: Path, feed: RecordFeed | None = None
    ) -> str:
        """A stack dump as evidence: an audit record (the handoff's Incidents entry while a
        stall is open) and a Timeline event, each naming the file and the per-rank summary."""
        stalled = self._stalled is not None
        text = f"engine stacks{' while stalled' if stalled else ''}: {summary} (saved to {path})"
        details = {"summary": summary, "file": str(path), "stalled": stalled}
        append_audit(STACKS_EVENT, self.host_label, details, self.audit_path)
        if feed is not None:
            feed.observe_stall(at_s, text, {"stacks": details})
        return text
