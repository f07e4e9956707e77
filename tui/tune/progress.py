"""A running tune as a board: each configuration's state, the run's words, the result.

The driver tells a `TuneBoard` what each configuration is doing (`state`, `loading`);
the console's Tune view draws its frozen `TuneSnapshot`. A loading configuration's ETA is
the Plan's predicted load time less the time it has loaded, or the log's own ETA (shards)
when the Plan could not predict; neither known, it is unknown.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the view imports this module's snapshot: no Deck, no I/O behind it
    from tui.serving.load.progress import LoadProgress
    from tui.tune.preflight import PlannedConfig

# planned, starting (drop-in, leftovers, guarded start), loading, benchmarking, then
# one of the ends: done, failed (with why), skipped (with the arithmetic), cancelled.
ENDS = ("done", "failed", "skipped", "cancelled")
MAX_LINES = 200


@dataclass(frozen=True, slots=True)
class ConfigState:
    """One configuration as the view shows it."""

    name: str
    state: str
    detail: str = ""  # a skip's arithmetic, a failure's phase and line, the figures measured
    phase: str | None = None  # the load's phase, while loading
    loaded_s: float | None = None
    eta_s: float | None = None  # None: unknown

    @property
    def ended(self) -> bool:
        return self.state in ENDS


@dataclass(frozen=True, slots=True)
class TuneSnapshot:
    """The whole board at one moment, frozen for the view."""

    configs: tuple[ConfigState, ...]
    lines: tuple[str, ...]  # what the run said, newest last
    result: tuple[str, ...] = ()  # the ranked table and its notes, once over
    finished: bool = False
    cancelling: bool = False


class TuneBoard:
    """The states the driver reports, kept for the view (one run's)."""

    def __init__(self, planned: Sequence[PlannedConfig]) -> None:
        self._configs = {
            item.config.name: ConfigState(
                item.config.name,
                "planned" if item.runnable else "skipped",
                "" if item.runnable else item.reason,
            )
            for item in planned
        }
        self._predicted = {item.config.name: item.predicted_load_s for item in planned}
        self._lines: list[str] = []
        self._result: tuple[str, ...] = ()
        self._finished = False
        self._cancelling = False
        self._load_started: dict[str, float] = {}

    def say(self, line: str) -> None:
        self._lines = [*self._lines[-(MAX_LINES - 1) :], line]

    def state(self, name: str, state: str, detail: str = "") -> None:
        if state == "loading":
            self._load_started[name] = time.monotonic()
        self._configs[name] = ConfigState(name, state, detail)

    def loading(self, name: str, progress: LoadProgress) -> None:
        """A load's progress: its phase, the time it has taken and its ETA (or unknown)."""
        started = self._load_started.get(name)
        loaded_s = None if started is None else time.monotonic() - started
        predicted = self._predicted.get(name)
        if predicted is not None and loaded_s is not None:
            eta_s: float | None = max(predicted - loaded_s, 0.0)
        else:
            eta_s = progress.eta_s
        current = self._configs.get(name, ConfigState(name, "loading"))
        self._configs[name] = replace(
            current, state="loading", phase=progress.phase, loaded_s=loaded_s, eta_s=eta_s
        )

    def cancelling(self) -> None:
        self._cancelling = True

    def finish(self, result: Sequence[str], cancelled: bool = False) -> None:
        """The run is over: its result lines; what had not ended is cancelled."""
        if cancelled:
            for name, config in self._configs.items():
                if not config.ended:
                    self._configs[name] = replace(config, state="cancelled", eta_s=None)
        self._result = tuple(result)
        self._finished = True
        self._cancelling = False

    def snapshot(self) -> TuneSnapshot:
        return TuneSnapshot(
            tuple(self._configs.values()),
            tuple(self._lines),
            self._result,
            self._finished,
            self._cancelling,
        )
