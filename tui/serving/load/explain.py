"""Why a load took as long as it did: per-phase cost, a waterfall with its gaps, a prediction.

Pure: feed it I/O samples (tui.serving.load.io.IoSample), the checkpoint's residency and
the tracker's LoadProgress; ask for a LoadExplain. A phase is I/O-bound when the
serving tree read fast while its CPU idled, CPU-bound when it kept at least half a
core busy, "wait" otherwise (GPU, network, a lock). The waterfall shows the time
the log does not account for as gaps. The prediction of the next load scales the
weights phase by the bytes not in the page cache; it is checked at the next load.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from tui.core.formatting import duration_markdown
from tui.serving.load.io import IoSample, Residency
from tui.serving.load.tracker import LoadProgress, silence_note
from tui.serving.load.waterfall import ANSWER_GAP, EXEC_GAP, GAP_MIN_S, span_said, unlogged_s

IO_FLOOR_BYTES_PER_S = 8 * 1024**2
CPU_FLOOR_CORES = 0.5
GB = 1e9
STEP_NAMES = {
    "starting": "process start",
    "weights": "weights",
    "compile": "compile",
    "kv_cache": "KV profile",
    "cuda_graphs": "CUDA graphs",
    "serving": "API up",
}


@dataclass(frozen=True, slots=True)
class PhaseCost:
    name: str
    wall_s: float
    bound: str  # io | cpu | wait | unknown
    read_bytes: int | None = None
    cpu_s: float | None = None


@dataclass(frozen=True, slots=True)
class WaterfallStep:
    name: str
    start_s: float  # from the start of the load
    wall_s: float  # a phase's: its span in the log's own times, as everywhere else
    logged: bool  # False: a gap the log does not explain
    stated_s: float | None = None  # what vLLM says the step took ("torch.compile took 3.1 s")


@dataclass(frozen=True, slots=True)
class LoadExplain:
    read_bytes_per_s: float | None
    device: str | None
    device_read_bytes_per_s: float | None
    device_peak_bytes_per_s: float | None
    cache_resident_pct: float | None
    cache_resident_before_pct: float | None
    checkpoint_bytes: int | None
    phases: tuple[PhaseCost, ...] = ()
    waterfall: tuple[WaterfallStep, ...] = ()
    wall_s: float | None = None
    predicted_next_load_s: float | None = None
    previous_prediction_error_s: float | None = None
    earlier_wall_s: tuple[float, ...] = ()
    # The last earlier load's waterfall, (step name, wall_s): each step is compared with it.
    earlier_steps_s: tuple[tuple[str, float], ...] = ()
    diagnosis: str = ""

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["phases"] = [
            {"name": p.name, "wall_s": round(p.wall_s, 3), "bound": p.bound} for p in self.phases
        ]
        return data


def _at(samples: Sequence[IoSample], t: float, attr: str) -> float | None:
    """A cumulative counter at time t, interpolated between the samples around it."""
    points = [(s.at_s, getattr(s, attr)) for s in samples if getattr(s, attr) is not None]
    if not points or t < points[0][0] - 1.0 or t > points[-1][0] + 1.0:
        return None
    if t <= points[0][0]:
        return float(points[0][1])
    for (t0, v0), (t1, v1) in itertools.pairwise(points):
        if t0 <= t <= t1:
            return v0 + (v1 - v0) * ((t - t0) / (t1 - t0) if t1 > t0 else 1.0)
    return float(points[-1][1])


def _between(samples: Sequence[IoSample], t0: float, t1: float, attr: str) -> float | None:
    start, end = _at(samples, t0, attr), _at(samples, t1, attr)
    return None if start is None or end is None else max(0.0, end - start)


def bound_of(read_bytes: float | None, cpu_s: float | None, wall_s: float) -> str:
    if wall_s <= 0 or read_bytes is None or cpu_s is None:
        return "unknown"
    rate, cores = read_bytes / wall_s, cpu_s / wall_s
    if rate >= IO_FLOOR_BYTES_PER_S and cores < 0.8:
        return "io"
    if cores >= CPU_FLOOR_CORES:
        return "cpu"
    return "io" if rate >= IO_FLOOR_BYTES_PER_S else "wait"


def latest_rate(samples: Sequence[IoSample], attr: str) -> float | None:
    points = [(s.at_s, getattr(s, attr)) for s in samples if getattr(s, attr) is not None]
    if len(points) < 2:
        return None
    (t0, v0), (t1, v1) = points[-2], points[-1]
    return max(0.0, (v1 - v0) / (t1 - t0)) if t1 > t0 else None


def peak_rate(samples: Sequence[IoSample], attr: str) -> float | None:
    points = [(s.at_s, getattr(s, attr)) for s in samples if getattr(s, attr) is not None]
    rates = [(v1 - v0) / (t1 - t0) for (t0, v0), (t1, v1) in itertools.pairwise(points) if t1 > t0]
    return max(rates) if rates else None


def phase_costs(progress: LoadProgress, samples: Sequence[IoSample]) -> tuple[PhaseCost, ...]:
    costs = []
    for span in progress.timeline:
        if span.phase in ("failed", "stopped", "serving"):
            continue  # serving is after the load
        t0, t1 = span.started_at_s, span.started_at_s + span.duration_s
        read = _between(samples, t0, t1, "tree_read_bytes")
        cpu = _between(samples, t0, t1, "tree_cpu_s")
        costs.append(
            PhaseCost(
                span.phase,
                span.duration_s,
                bound_of(read, cpu, span.duration_s),
                int(read) if read is not None else None,
                cpu,
            )
        )
    return tuple(costs)


def _logged_s(phase: str, progress: LoadProgress) -> float | None:
    facts = progress.facts
    return {
        "weights": facts.weights_load_s,
        "compile": facts.compile_s,
        "cuda_graphs": facts.graph_capture_s,
    }.get(phase)


def waterfall(
    progress: LoadProgress,
    first_answer_at_s: float | None = None,
    process_started_at_s: float | None = None,
) -> tuple[WaterfallStep, ...]:
    """process start -> weights -> compile -> KV profile -> CUDA graphs -> API up -> first
    answer. A phase's step is its span (the load timeline's duration, one figure per phase
    everywhere); where vLLM states its own figure for it, that is kept beside it
    (stated_s) and the rest of the span is unlogged. The time from the process's start
    (systemd's ExecMainStartTimestamp) to its first log line (Python imports) is a gap."""
    spans = [s for s in progress.timeline if s.phase in STEP_NAMES]
    if not spans:
        return ()
    origin = spans[0].started_at_s
    steps: list[WaterfallStep] = []
    if process_started_at_s is not None and origin - process_started_at_s >= GAP_MIN_S:
        steps.append(WaterfallStep(EXEC_GAP, 0.0, origin - process_started_at_s, False))
        origin = process_started_at_s
    for span in spans:
        start = span.started_at_s - origin
        if span.phase == "serving":
            if first_answer_at_s is not None:
                gap = max(0.0, first_answer_at_s - span.started_at_s)
                steps.append(WaterfallStep(ANSWER_GAP, start, gap, False))
            continue
        stated = _logged_s(span.phase, progress)
        steps.append(WaterfallStep(STEP_NAMES[span.phase], start, span.duration_s, True, stated))
    return tuple(steps)


def predict_next_s(
    costs: Sequence[PhaseCost],
    checkpoint_bytes: int | None,
    resident_before_pct: float | None,
    resident_now_pct: float | None,
    wall_s: float | None,
    disk_bytes_per_s: float | None = None,
    warm_weights_s: float | None = None,
) -> float | None:
    """Next load = this load with its weights phase re-estimated for what is cached now.

    weights_next = max(floor, uncached_next / disk_rate): disk_rate is the fastest the
    tree read during the weights phase (or its average), the floor is what the phase
    costs without disk reads (its CPU time, the unexplained rest of this phase, or an
    earlier warm load's weights phase). The other phases are taken as they were."""
    if wall_s is None:
        return None
    weights = next((c for c in costs if c.name == "weights"), None)
    if weights is None or checkpoint_bytes is None or resident_now_pct is None:
        return wall_s
    before = resident_before_pct if resident_before_pct is not None else resident_now_pct
    uncached_now = checkpoint_bytes * (1 - before / 100)
    uncached_next = checkpoint_bytes * (1 - resident_now_pct / 100)
    read = weights.read_bytes or 0
    if read <= 0 or uncached_now <= 0 or weights.wall_s <= 0:
        return wall_s  # nothing was read from disk: the next load reads as little
    rate = disk_bytes_per_s or read / weights.wall_s
    floor = max(weights.wall_s - uncached_now / rate, weights.cpu_s or 0.0, 0.0)
    if warm_weights_s is not None:
        floor = max(floor, warm_weights_s)
    return wall_s - weights.wall_s + max(floor, uncached_next / rate)


def weights_read_peak(progress: LoadProgress, samples: Sequence[IoSample]) -> float | None:
    """The fastest sample-to-sample read rate of the tree during the weights phase."""
    span = next((s for s in progress.timeline if s.phase == "weights"), None)
    if span is None:
        return None
    inside = [
        s
        for s in samples
        if span.started_at_s - 1 <= s.at_s <= span.started_at_s + span.duration_s + 1
    ]
    return peak_rate(inside, "tree_read_bytes") or None


def last_steps(earlier: Sequence[dict[str, Any]]) -> tuple[tuple[str, float], ...]:
    """The waterfall of the latest earlier load that kept one, as (name, wall_s)."""
    for record in reversed(earlier):
        steps = record.get("waterfall")
        if isinstance(steps, list) and steps:
            return tuple(
                (str(step["name"]), float(step["wall_s"]))
                for step in steps
                if isinstance(step, dict) and "name" in step and "wall_s" in step
            )
    return ()


# Below this a read rate rounds to 0.00 GB/s: too little read to be the weights' reading.
MEASURABLE_READ_BYTES_PER_S = 5e6


def _weights_read(weights: PhaseCost, device: str | None) -> str:
    """How the weights were read, or what of it is unknown and why."""
    took = f"weights {duration_markdown(weights.wall_s)}"
    if weights.read_bytes is None or weights.wall_s <= 0:
        bound = "" if weights.bound == "unknown" else f" ({weights.bound}-bound)"
        return f"{took}{bound}, read rate unknown: no I/O reading of the server's processes"
    rate = weights.read_bytes / weights.wall_s
    if rate < MEASURABLE_READ_BYTES_PER_S:
        return (
            f"{took}, read rate unknown: the server's processes read only "
            f"{weights.read_bytes / 1e6:.0f} MB (the weights came from memory, or another process read them)"
        )
    return f"weights read at {rate / GB:.2f} GB/s from {device or 'the page cache'}"


def _cache_said(explain: LoadExplain) -> str:
    """The page cache's share of the checkpoint before the load, or why it is unknown."""
    cached = explain.cache_resident_before_pct
    if cached is not None:
        return f"{cached:.0f} % cached"
    if explain.checkpoint_bytes is None:
        return "page cache unknown: the checkpoint directory could not be measured"
    return "page cache before the load unknown: not measured before it began"


def diagnose(explain: LoadExplain) -> str:
    weights = next((c for c in explain.phases if c.name == "weights"), None)
    if weights is None or explain.wall_s is None:
        return "no load seen in the log yet"
    head = f"{_weights_read(weights, explain.device)}, {_cache_said(explain)}"
    gaps = sum(unlogged_s(s.wall_s, s.logged, s.stated_s) for s in explain.waterfall)
    tail = f"; {gaps:.0f} s unlogged" if gaps >= 1 else ""
    if explain.predicted_next_load_s is not None:
        tail += f"; the next load should take about {explain.predicted_next_load_s:.0f} s"
    said = span_said([step.name for step in explain.waterfall])
    return f"load {duration_markdown(explain.wall_s)} ({said}): {head}{tail}"


@dataclass
class LoadExplainer:
    """Collects samples and residency while a load runs; `explain` at any time."""

    samples: list[IoSample] = field(default_factory=list)
    residency_before: Residency | None = None
    residency_now: Residency | None = None

    def observe(self, sample: IoSample) -> None:
        self.samples.append(sample)

    def explain(
        self,
        progress: LoadProgress,
        first_answer_at_s: float | None = None,
        earlier: Sequence[dict[str, Any]] = (),
        process_started_at_s: float | None = None,
    ) -> LoadExplain:
        costs = phase_costs(progress, self.samples)
        steps = waterfall(progress, first_answer_at_s, process_started_at_s)
        wall = (steps[-1].start_s + steps[-1].wall_s) if steps else None
        now = self.residency_now or self.residency_before
        before_pct = self.residency_before.resident_pct if self.residency_before else None
        now_pct = now.resident_pct if now else None
        size = now.size_bytes if now else None
        warm = [
            phase["wall_s"]
            for record in earlier
            if (record.get("cache_resident_before_pct") or 0) >= 95
            for phase in record.get("phases") or ()
            if phase.get("name") == "weights"
        ]
        predicted = predict_next_s(
            costs,
            size,
            before_pct,
            now_pct,
            wall,
            weights_read_peak(progress, self.samples),
            min(warm) if warm else None,
        )
        previous = next(
            (r for r in reversed(earlier) if r.get("predicted_next_load_s") is not None), None
        )
        error = (
            wall - float(previous["predicted_next_load_s"])
            if previous is not None and wall is not None
            else None
        )
        explain = LoadExplain(
            read_bytes_per_s=latest_rate(self.samples, "tree_read_bytes"),
            device=next((s.device for s in reversed(self.samples) if s.device), None),
            device_read_bytes_per_s=latest_rate(self.samples, "device_read_bytes"),
            device_peak_bytes_per_s=peak_rate(self.samples, "device_read_bytes"),
            cache_resident_pct=now_pct,
            cache_resident_before_pct=before_pct,
            checkpoint_bytes=size,
            phases=costs,
            waterfall=steps,
            wall_s=wall,
            predicted_next_load_s=predicted,
            previous_prediction_error_s=error,
            earlier_wall_s=tuple(float(r["wall_s"]) for r in earlier if r.get("wall_s")),
            earlier_steps_s=last_steps(earlier),
        )
        if progress.silent_since_s is not None:  # no prediction from a load that may be dead
            explain = replace(explain, predicted_next_load_s=None, previous_prediction_error_s=None)
            silent_for_s = progress.at_s - progress.silent_since_s
            return replace(explain, diagnosis=silence_note(silent_for_s))
        return replace(explain, diagnosis=diagnose(explain))
