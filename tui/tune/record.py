"""The tune in the house's records: each start a Deployment attempt, the result a Timeline event.

The tune writes to the profile's recording through the recorder's own feed, so its
configurations' starts become the summary's "Deployment attempts" (the exec's argv and
environment, the load's phases, the outcome, the capacity search) exactly as a console
would have recorded them, and the finished tune is one `tune` event carrying the ranked
table, the Pareto front, the winner's margin and the skips: the handoff's "Tune" section.
A console or `servedeck record` holding the recording records the loads itself; the
tune then says it does not record and goes on. A console that holds it hands its feed
(`held_feed`): the loads are its own, the tune's result goes there.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from tui.bench.capacity.history import read_capacity_history
from tui.deck import Deck
from tui.record.feed import RecordFeed
from tui.record.model import Event
from tui.record.schema import RecordingError
from tui.record.where import recording_path
from tui.record.writer import Recorder
from tui.serving.load.progress import LoadProgress
from tui.serving.load.tracker import LoadTracker
from tui.tune.driver import Outcome
from tui.tune.results import margin_line, pareto_front, table_rows

TUNE_SOURCE = "tune"


class _Nowhere:
    """The feed's sink when the recording is another process's (it records the loads)."""

    def add_gpu(self, snapshot: object) -> None:
        pass

    def add_metrics(self, row: object) -> None:
        pass

    def add_event(self, event: Event) -> None:
        pass


def finished_event(outcomes: Sequence[Outcome], objective: str, at_s: float) -> Event:
    """The Timeline's line for a whole tune, its data what the handoff's section draws."""
    margin = margin_line(outcomes, objective)
    data: dict[str, Any] = {
        "objective": objective,
        "table": table_rows(outcomes, objective),
        "pareto": [
            {"name": o.name, "per_user_tok_s": o.per_user_tok_s, "total_tok_s": o.total_tok_s}
            for o in pareto_front(outcomes)
        ],
        "margin": margin,
        "skipped": [
            {"name": o.name, "outcome": o.outcome, "reason": o.reason or o.outcome}
            for o in outcomes
            if o.outcome in ("skipped", "over budget")
        ],
        "failed": [
            {"name": o.name, "outcome": o.outcome, "phase": o.phase, "line": o.failure_line}
            for o in outcomes
            if o.outcome in ("failed", "timeout")
        ],
        # served, searched, no capacity proved: why (the table says "none proved")
        "none_proved": [
            {"name": o.name, "reason": o.capacity_none_proved}
            for o in outcomes
            if o.capacity_none_proved
        ],
    }
    text = f"tune finished ({len(outcomes)} configurations, {objective}): {margin}"
    return Event(at_s, "action", TUNE_SOURCE, text, key=f"tune:{at_s:.3f}", data=data)


class TuneRecording:
    """The tune's feed into the profile's recording (or nowhere, said once, when busy)."""

    def __init__(
        self, deck: Deck, say: Callable[[str], None], held_feed: RecordFeed | None = None
    ) -> None:
        self.recorder: Recorder | None = None
        sink: Any = _Nowhere()
        if held_feed is None:
            self.recorder = Recorder(
                recording_path(deck.profile),
                host_label=deck.host_label,
                what=f"servedeck tune -p {deck.profile.name}",
            )
            sink = self.recorder
            try:
                self.recorder.start()
            except RecordingError as error:
                say(f"not recording the tune: {error}")
                self.recorder, sink = None, _Nowhere()
        self.feed = RecordFeed(sink, deck.host_label)
        self._result_feed = held_feed or self.feed
        self._last: LoadProgress | None = None

    def exec(self, pid: int | None, argv: list[str], env: dict[str, str]) -> None:
        """A configuration's start: its command line and its load begun, one attempt even
        when the server dies before its first log line."""
        now = time.time()
        self.feed.observe_exec(pid or 0, argv, env, now)
        self.progress(replace(LoadTracker().snapshot(), phase="starting", at_s=now))

    def progress(self, progress: LoadProgress) -> None:
        """The load as the tracker reads it; its "stopped" before the first line is not news
        (the tune records each stop itself)."""
        if progress.phase == "stopped":
            return
        self._last = progress
        self.feed.observe_progress(progress)

    def ready(self, models: list[str]) -> None:
        data = {"ready": True, "models": models}
        text = f"ready: {', '.join(models) or 'the server answers /health'}"
        self.feed.event(Event(time.time(), "engine", "readiness", text, data=data))

    def capacity(self, record: dict[str, Any]) -> None:
        self.feed.observe_capacity(record, time.time(), read_capacity_history())

    def stopped(self) -> None:
        """The configuration's end: the next start is a new attempt whatever phase this one reached."""
        if self._last is not None:
            self.feed.observe_progress(replace(self._last, phase="stopped", at_s=time.time()))
            self._last = None

    def finished(self, outcomes: Sequence[Outcome], objective: str) -> None:
        self._result_feed.event(finished_event(outcomes, objective, time.time()))

    def close(self) -> None:
        if self.recorder is not None:
            self.recorder.close()
            self.recorder = None
