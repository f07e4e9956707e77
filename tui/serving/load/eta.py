"""One answer to "when will the server be ready?", covering every phase still to come.

The weights phase has its own progress (shards, tqdm, memory: LoadProgress.eta_s);
compile, KV-cache profiling, CUDA-graph capture and the HTTP start have none, so
their durations come from this host's earlier loads of the same model (kept in the
data dir), else from stated defaults. Pure functions plus a small JSON file; no UI.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tui.core import paths
from tui.serving.load.tracker import LOADING_ORDER, LoadProgress, Phase

# Phases a load walks through before it answers; "serving" here is the wait between
# "Starting vLLM server" and the first good /health (vLLM binds before it listens).
ESTIMATED_PHASES: tuple[str, ...] = tuple(str(phase) for phase in LOADING_ORDER)
# Stated defaults (seconds) for a large model on a multi-GPU box, used until this host
# has finished a load of the model. Weights have no default: shard progress gives them.
DEFAULT_PHASE_S: Mapping[str, float] = {
    "starting": 30.0,
    "compile": 90.0,
    "kv_cache": 30.0,
    "cuda_graphs": 45.0,
    "serving": 10.0,
}
KEEP_LOADS = 5  # per host and model: the median of the last few
HISTORY_FILE = "load_phases.json"


@dataclass(frozen=True, slots=True)
class PhasePlan:
    """Expected seconds per phase, and where they come from (shown next to the answer)."""

    seconds: Mapping[str, float]
    basis: str  # "defaults", "simulator", "3 earlier loads"


@dataclass(frozen=True, slots=True)
class ReadyEstimate:
    remaining_s: float | None  # None: unknown yet (weights not measurable)
    basis: str
    overdue_phase: str | None = None  # the current phase has run past its expected time


def estimate_ready(progress: LoadProgress, plan: PhasePlan) -> ReadyEstimate | None:
    """Seconds until the server answers: the current phase's rest plus every later phase.

    None when no load is under way (serving and ready, stopped, failed) or its log has
    been silent too long to tell (LoadProgress.silent_since_s).
    """
    phase = progress.phase
    if (phase == Phase.SERVING and progress.ready) or progress.silent_since_s is not None:
        return None
    if phase not in ESTIMATED_PHASES:
        return None
    index = ESTIMATED_PHASES.index(phase)
    overdue = None
    if phase == Phase.WEIGHTS and progress.eta_s is not None:
        current: float | None = progress.eta_s
    elif phase in plan.seconds:
        left = plan.seconds[phase] - progress.phase_elapsed_s
        if left < 0:
            overdue = phase
        current = max(0.0, left)
    else:
        current = None
    later = [plan.seconds.get(name) for name in ESTIMATED_PHASES[index + 1 :]]
    if current is None or any(seconds is None for seconds in later):
        return ReadyEstimate(None, plan.basis, overdue)
    total = current + sum(seconds for seconds in later if seconds is not None)
    return ReadyEstimate(total, plan.basis, overdue)


def phase_durations(progress: LoadProgress) -> dict[str, float]:
    """Seconds each loading phase took (log time), once the load reached serving."""
    durations = {name: 0.0 for name in ESTIMATED_PHASES if name != "serving"}
    for span in progress.timeline:
        if span.phase in durations:
            durations[span.phase] += span.duration_s
    return durations


def _key(host_label: str, model: str | None) -> str:
    return f"{host_label}|{model or ''}"


def read_history(path: Path) -> dict[str, list[dict[str, float]]]:
    """The file's loads by host|model; an unreadable file is an empty history."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record_load(
    path: Path, host_label: str, model: str | None, durations: Mapping[str, float]
) -> None:
    """Keep one finished load's phase durations (the last KEEP_LOADS per host and model)."""
    history = read_history(path)
    loads = [entry for entry in history.get(_key(host_label, model), []) if isinstance(entry, dict)]
    loads.append({**durations, "recorded_at_s": time.time()})
    history[_key(host_label, model)] = loads[-KEEP_LOADS:]
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=".load_phases-")
    with os.fdopen(handle, "w") as out:
        json.dump(history, out, indent=1)
    os.replace(temp, path)


def plan_for(
    path: Path,
    host_label: str,
    model: str | None,
    defaults: Mapping[str, float] = DEFAULT_PHASE_S,
    default_basis: str = "defaults",
) -> PhasePlan:
    """Medians of this host's earlier loads of the model; defaults for what they lack."""
    loads = read_history(path).get(_key(host_label, model), [])
    seconds = dict(defaults)
    if not loads:
        return PhasePlan(seconds, default_basis)
    for name in ESTIMATED_PHASES:
        values = [
            float(load[name])
            for load in loads
            if isinstance(load.get(name), int | float) and load[name] >= 0
        ]
        if values:
            seconds[name] = statistics.median(values)
    count = len(loads)
    return PhasePlan(seconds, f"{count} earlier load{'s' if count > 1 else ''}")


def simulator_plan(load_seconds: float, shares: Mapping[str, float]) -> dict[str, float]:
    """The simulator's own phase times (its load is a compressed real one)."""
    names = {"api": "serving"}
    return {names.get(phase, phase): load_seconds * share for phase, share in shares.items()}


class ReadyClock:
    """Per console: the plan for the load under way, and its record once it serves."""

    def __init__(
        self,
        path: Path,
        host_label: str,
        defaults: Mapping[str, float] = DEFAULT_PHASE_S,
        default_basis: str = "defaults",
    ) -> None:
        self.path = path
        self.host_label = host_label
        self.defaults = dict(defaults)
        self.default_basis = default_basis
        self._plan: PhasePlan | None = None
        self._plan_key: tuple[float | None, str | None] | None = None
        self._recorded: set[float] = set()

    def update(self, progress: LoadProgress) -> ReadyEstimate | None:
        """The estimate for this snapshot; records the load's phases when it reaches serving."""
        started = progress.timeline[0].started_at_s if progress.timeline else None
        model = progress.facts.model
        if progress.phase == Phase.SERVING and started is not None:
            self._record(started, model, progress)
        key = (started, model)
        if self._plan is None or key != self._plan_key:
            self._plan = plan_for(
                self.path, self.host_label, model, self.defaults, self.default_basis
            )
            self._plan_key = key
        return estimate_ready(progress, self._plan)

    def _record(self, started: float, model: str | None, progress: LoadProgress) -> None:
        if started in self._recorded:
            return
        self._recorded.add(started)
        try:
            record_load(self.path, self.host_label, model, phase_durations(progress))
        except OSError:
            return  # a read-only data dir costs the next estimate its history, nothing else
        self._plan = None  # the next load plans with this one


def ready_clock_for(
    host_label: str,
    stated_load_s: float | None = None,
    stated_phase_shares: Mapping[str, float] | None = None,
) -> ReadyClock:
    """The console's clock: a box that states its load time and each phase's share of it
    (the simulator: Deck.stated_load_s, Deck.stated_phase_shares) plans with them; a real
    host with its earlier loads, else the defaults."""
    path = paths.data_dir() / HISTORY_FILE
    if stated_load_s is None or stated_phase_shares is None:
        return ReadyClock(path, host_label)
    plan = simulator_plan(stated_load_s, stated_phase_shares)
    return ReadyClock(path, host_label, plan, "simulator's phase times")
