"""The summary's view of the flight recorder: incidents, deployment attempts and the last tune in a window.

Incidents run from the last exported summary (the previous handoff) or, without one, the
last 24 h, to now. Deployment attempts are the deployment's history, not news: they go
back at least 24 h whenever the last summary was written (a handoff exported a minute
after another still lists the starts the first one did). No recording, no sections.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from tui.core import paths
from tui.core.config import Profile
from tui.core.errors import ServedeckError
from tui.record.attempts import Attempt, deployment_attempts, recorded_incidents
from tui.record.model import Event
from tui.record.query import RecordingReader
from tui.record.where import recording_path
from tui.summary.inputs import Incident

DEFAULT_WINDOW_S = 86400.0


@dataclass(frozen=True, slots=True)
class RecordedHistory:
    since_s: float
    since_what: str  # "the last summary" | "24 h"
    incidents: tuple[Incident, ...]
    attempts: tuple[Attempt, ...]
    tune: Event | None = None  # the last `servedeck tune` finished in the window
    attempts_since_what: str = "24 h"  # the attempts' window: at least the last 24 h


def last_summary_s() -> float | None:
    """When the newest exported summary was written (the console's `e`/`E` exports)."""
    folder = paths.data_dir() / "summaries"
    try:
        return max((path.stat().st_mtime for path in folder.glob("summary-*")), default=None)
    except OSError:
        return None


def recorded_history(
    profile: Profile, host_label: str, now_s: float | None = None
) -> RecordedHistory | None:
    """None when this host has no recording (nothing to say, no section)."""
    now_s = time.time() if now_s is None else now_s
    db = recording_path(profile)
    if not db.exists():
        return None
    previous = last_summary_s()
    if previous is not None and previous < now_s:
        since_s, since_what = previous, "the last summary"
    else:
        since_s, since_what = now_s - DEFAULT_WINDOW_S, "24 h"
    try:
        with RecordingReader(db) as reader:
            window = reader.events(since_s, now_s)
            # attempts need their start even when it is older than the window
            starts = reader.events(
                now_s - 7 * DEFAULT_WINDOW_S, now_s, kinds=("engine", "service", "action")
            )
    except ServedeckError:
        return None
    incidents = tuple(
        Incident(
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(event.ts_s)),
            event.kind,
            host_label,
            event.text,
        )
        for event in recorded_incidents(window)
    )
    day_s = now_s - DEFAULT_WINDOW_S
    attempts_since_s = min(since_s, day_s)
    attempts = tuple(
        a
        for a in deployment_attempts(starts)
        if a.started_s >= attempts_since_s or a.outcome == "in progress"
    )
    tune = next((e for e in reversed(window) if e.source == "tune"), None)
    attempts_since_what = since_what if since_s <= day_s else "24 h"
    return RecordedHistory(
        since_s, since_what, incidents, attempts, tune=tune, attempts_since_what=attempts_since_what
    )
