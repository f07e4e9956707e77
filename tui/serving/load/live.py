"""Why the load is slow right now: the line the Deck shows while a model loads (pure).

`LiveLoad` is one reading (tui.serving.load.live_watch takes them); `describe` words it:
the phase and its time, I/O-bound, CPU-bound or waiting, and the figures behind
that (tree and device read rates, CPU cores, page-cache residency, a GPU that lags).
What could not be read is `problem`, said on the line instead of a guessed figure.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from tui.gpu.model import GpuBoxSnapshot
from tui.serving.load.tracker import LoadProgress

GB = 1e9
COLD_PCT = 90.0  # below this share cached, a read-bound weights phase is reading the disk
LAG_FRACTION = 0.7  # a GPU below 70 % of the others' median memory ...
LAG_MIN_BYTES = 2 * 1024**3  # ... and 2 GiB behind them lags
GIB = 1024**3

_PHASES = {
    "starting": "starting",
    "weights": "weights",
    "compile": "torch.compile",
    "kv_cache": "KV-cache profile",
    "cuda_graphs": "CUDA graphs",
    "serving": "API up",
}
# Why a phase that neither reads nor computes is slow: it waits on something else.
_WAITS = {
    "starting": "waiting (imports done, engine not yet up)",
    "weights": "waiting on GPU copies or other ranks",
    "compile": "waiting on torch.compile (its cache lock or workers)",
    "kv_cache": "waiting on the GPUs: profiling the KV cache",
    "cuda_graphs": "waiting on the GPUs: capturing CUDA graphs",
    "serving": "waiting for the API server to listen",
}
_CPU = {
    "starting": "CPU-bound: Python imports and engine setup",
    "weights": "CPU-bound: deserializing shards from the page cache",
    "compile": "CPU-bound: torch.compile",
    "kv_cache": "CPU-bound: KV-cache profile",
    "cuda_graphs": "CPU-bound: capturing CUDA graphs",
    "serving": "CPU-bound: API server start",
}


@dataclass(frozen=True, slots=True)
class LiveLoad:
    """The load as of the last sample; `text` is the line the Deck shows."""

    phase: str
    phase_elapsed_s: float
    bound: str  # io | cpu | wait | unknown
    read_bytes_per_s: float | None
    cpu_cores: float | None
    device: str | None
    device_read_bytes_per_s: float | None
    device_peak_bytes_per_s: float | None
    cache_resident_pct: float | None
    cache_resident_start_pct: float | None
    lagging_gpu: int | None
    problem: str | None  # what could not be read, one line
    text: str
    at_s: float
    final: bool = False  # the after-ready diagnosis, no longer a live reading


def final_load(diagnosis: str, phase: str = "serving") -> LiveLoad:
    """The line once the load is over: the after-ready explainer's diagnosis."""
    return LiveLoad(
        phase, 0.0, "unknown", None, None, None, None, None, None, None, None, None,
        diagnosis, time.time(), final=True,
    )  # fmt: skip


def lagging_gpu(snapshot: GpuBoxSnapshot | None) -> tuple[int, int, int] | None:
    """(GPU index, its bytes, the others' median bytes) when one loading GPU lags the rest.

    Only GPUs the load has touched (over 1 GiB used) count; with TP every rank fills
    alike, so one far behind is reading or copying slower than the others."""
    if snapshot is None or not snapshot.available:
        return None
    used = [
        (s.index, s.memory_used_bytes)
        for s in snapshot.samples
        if s.memory_used_bytes is not None and s.memory_used_bytes > GIB and not s.lost
    ]
    if len(used) < 3:
        return None
    index, low = min(used, key=lambda item: item[1])
    others = sorted(b for i, b in used if i != index)
    median = others[len(others) // 2]
    if low < LAG_FRACTION * median and median - low >= LAG_MIN_BYTES:
        return index, low, median
    return None


def _gbs(rate: float) -> str:
    return f"{rate / GB:.2f} GB/s" if rate >= GB else f"{rate / 1e6:.1f} MB/s"


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}:{secs:02d}"


def describe(live: LiveLoad, lag: tuple[int, int, int] | None = None) -> str:
    """The one line: phase and time in it, why it is slow, the figures behind that."""
    head = f"{_PHASES.get(live.phase, live.phase)} {_clock(live.phase_elapsed_s)}: "
    parts: list[str] = []
    if lag is not None:  # the likeliest why: say it first
        index, low, median = lag
        parts.append(f"GPU {index} lags: {low / GIB:.1f} GiB vs {median / GIB:.1f} GiB")
    cached = live.cache_resident_pct
    if live.bound == "io":
        cold = live.phase == "weights" and cached is not None and cached < COLD_PCT
        why = "I/O-bound: reading a cold checkpoint" if cold else "I/O-bound: reading"
        parts.append(why)
    elif live.bound == "cpu":
        parts.append(_CPU.get(live.phase, "CPU-bound"))
    elif live.bound == "wait":
        parts.append(_WAITS.get(live.phase, "waiting"))
    figures = []
    if live.read_bytes_per_s is not None:
        figures.append(f"tree reads {_gbs(live.read_bytes_per_s)}")
    if live.device and live.device_read_bytes_per_s is not None:
        peak = live.device_peak_bytes_per_s
        peak_text = f" (peak {_gbs(peak)})" if peak else ""
        figures.append(f"{live.device} {_gbs(live.device_read_bytes_per_s)}{peak_text}")
    if live.cpu_cores is not None:
        figures.append(f"CPU {live.cpu_cores:.1f} cores")
    if cached is not None:
        start = live.cache_resident_start_pct
        was = f" (was {start:.0f} %)" if start is not None and abs(start - cached) >= 1 else ""
        figures.append(f"{cached:.0f} % cached{was}")
    if figures:
        parts.append(", ".join(figures))
    if live.problem:
        parts.append(live.problem)
    if not parts:
        parts.append("reading the counters ...")
    return head + "; ".join(parts)


def ended_load(progress: LoadProgress, last: LiveLoad | None, pid: int | None) -> LiveLoad:
    """The line when a load ended without getting ready: the phase it got to, and why.

    `pid`: the serving process the load ran in (the unit no longer names one)."""
    where = last.phase if last is not None else progress.phase
    failure = progress.failure_line if progress.phase == "failed" else None
    if failure and not failure.startswith("process exited"):
        why = failure  # the log said why: the engine's own error
    elif last is not None and last.problem and last.problem.endswith("is gone"):
        why = last.problem
    elif pid is not None:
        why = f"serving process {pid} is gone"
    else:
        why = failure or "the service stopped"
    text = f"load ended in {_PHASES.get(where, where)} after {_clock(progress.load_elapsed_s or 0)}: {why}"
    return LiveLoad(
        where, 0.0, "unknown", None, None, None, None, None, None, None, None, why,
        text, time.time(), final=True,
    )  # fmt: skip


def with_text(live: LiveLoad, lag: tuple[int, int, int] | None = None) -> LiveLoad:
    return replace(live, text=describe(live, lag))
