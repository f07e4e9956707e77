"""The progress verdict and what it is judged from: frozen, no I/O.

A stall is judged on generated tokens alone (requests running or waiting and no token
for `stall_after_s`), never on /health: an engine hung in a collective answers 200.
The kind and the evidence say which signal points where.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

ProgressState = Literal["idle", "serving", "slow", "stalled", "unknown"]
PROGRESS_STATES: tuple[ProgressState, ...] = ("idle", "serving", "slow", "stalled", "unknown")

# The kinds of a stall (id -> the words the Deck and the summary use).
STALL_KINDS: dict[str, str] = {
    "rank_stopped": "a rank stopped",
    "rank_dead": "a rank dead or a zombie",
    "rank_blocked": "a rank blocked in the kernel",
    "log": "the log says why",
    "gpu_spin": "GPUs busy with no tokens",
    "cpu_block": "GPUs idle with requests queued",
    "unknown": "cause unknown",
}


@dataclass(frozen=True, slots=True)
class RankSample:
    """One engine process (EngineCore, a worker rank) at one reading of /proc."""

    pid: int
    name: str  # its title: VLLM::EngineCore, VLLM::Worker_TP3, or the comm
    state: str  # /proc/PID/stat field 3: R S D T t Z X
    cpu_ticks: int | None  # utime + stime, in clock ticks
    wchan: str | None  # the kernel function it sleeps in ("" or "0" when running)


@dataclass(frozen=True, slots=True)
class RankReading:
    """The engine's processes under the service's main pid; `root_alive` False: it is gone."""

    root_pid: int
    root_alive: bool
    ranks: tuple[RankSample, ...]
    clock_ticks: int = 100


@dataclass(frozen=True, slots=True)
class ProgressInputs:
    """What one refresh knows. None is unknown (never zero)."""

    at_s: float  # wall clock
    running_reqs: int | None
    waiting_reqs: int | None
    generation_tokens_per_s: float | None  # None: no earlier scrape to take a delta from
    prompt_tokens_per_s: float | None
    engine_healthy: float | None = None  # vllm:engine_healthy, where exposed
    gpu_utilization_pct: tuple[float, ...] = ()  # the GPUs that report it
    gpu_power_w: tuple[float, ...] = ()
    ranks: RankReading | None = None
    loading: bool = False  # the log says a load is under way
    warmup: bool = False  # a benchmark's warm-up requests are running


@dataclass(frozen=True, slots=True)
class ProgressVerdict:
    state: ProgressState
    kind: str | None  # a STALL_KINDS id while stalled
    evidence: tuple[str, ...]
    since_s: float | None  # wall clock: in this state since then
    at_s: float
    stall_after_s: float

    @property
    def kind_text(self) -> str | None:
        return STALL_KINDS.get(self.kind) if self.kind else None

    def headline(self) -> str:
        """One line for the Deck and the summary: "stalled: a rank stopped (42 s)".

        Serving says what it means here, tokens advancing: beside the load strip's
        "serving 0:03" (ready that long) a bare "serving (0 s)" read as a second clock.
        """
        text: str = self.state
        if self.state == "serving":
            text += ": tokens advancing"
        if self.kind_text:
            text += f": {self.kind_text}"
        if self.since_s is not None and self.state != "idle":
            text += f" ({max(self.at_s - self.since_s, 0.0):.0f} s)"
        return text

    def as_dict(self) -> dict[str, Any]:
        """`servedeck status --json`'s `progress`: since_s is the seconds in this state."""
        return {
            "state": self.state,
            "kind": self.kind,
            "kind_text": self.kind_text,
            "evidence": list(self.evidence),
            "since_s": None if self.since_s is None else round(self.at_s - self.since_s, 1),
            "stall_after_s": self.stall_after_s,
        }
