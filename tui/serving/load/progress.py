"""What a load's progress says: its phase, facts, stats and timeline (frozen snapshots).

LoadTracker (tracker.py) builds a LoadProgress; the console, the summary, the recorder,
the fleet and the ETA read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from tui.core.formatting import duration_compact

# A load step logs at least this often (tqdm each shard, vLLM each phase): a load whose log
# has been silent longer, with its unit not known to run, says nothing about now.
STALE_SILENCE_S = 3600.0


def silence_note(silent_for_s: float) -> str:
    """What a load whose log stopped long ago is (LoadProgress.silent_since_s): unknown."""
    return f"log silent for {duration_compact(silent_for_s)}; load state unknown"


class Phase(StrEnum):
    STARTING = "starting"
    WEIGHTS = "weights"
    COMPILE = "compile"
    KV_CACHE = "kv_cache"
    CUDA_GRAPHS = "cuda_graphs"
    SERVING = "serving"
    FAILED = "failed"
    STOPPED = "stopped"


LOADING_ORDER: tuple[Phase, ...] = (
    Phase.STARTING,
    Phase.WEIGHTS,
    Phase.COMPILE,
    Phase.KV_CACHE,
    Phase.CUDA_GRAPHS,
    Phase.SERVING,
)
PHASE_RANK = {phase: index for index, phase in enumerate(LOADING_ORDER)}
LOADING_PHASES = frozenset(LOADING_ORDER[:-1])


@dataclass(frozen=True, slots=True)
class PhaseSpan:
    phase: str
    started_at_s: float
    duration_s: float


@dataclass(frozen=True, slots=True)
class EngineStats:
    """The periodic `Engine 000: Avg prompt throughput ...` line (or SGLang's decode line)."""

    prompt_tokens_per_s: float | None
    generation_tokens_per_s: float | None
    running_reqs: int
    waiting_reqs: int
    kv_cache_usage_pct: float | None
    prefix_cache_hit_pct: float | None
    at_s: float


@dataclass(frozen=True, slots=True)
class LoadFacts:
    """Numbers the load reports about itself, for the summary."""

    engine: str | None = None
    version: str | None = None
    model: str | None = None
    weights_gib: float | None = None
    weights_load_s: float | None = None
    compile_s: float | None = None
    kv_cache_gib: float | None = None
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    max_concurrency_tokens: int | None = None
    graph_capture_s: float | None = None
    graph_capture_gib: float | None = None
    init_engine_s: float | None = None
    server_url: str | None = None


@dataclass(frozen=True, slots=True)
class LoadProgress:
    phase: str
    phase_elapsed_s: float
    load_elapsed_s: float | None
    shards_done: int | None
    shards_total: int | None
    shard_pct: float | None
    eta_s: float | None
    eta_source: str | None  # "shards", "tqdm", "memory"
    http_starting: bool  # "Starting vLLM server" seen: time to poll /health
    ready: bool  # the server said it is up
    failure_line: str | None
    failure_context: tuple[str, ...]
    last_error_line: str | None
    facts: LoadFacts
    timeline: tuple[PhaseSpan, ...]
    engine_stats: EngineStats | None
    mem_used_bytes: int | None
    mem_fill_bytes_per_s: float | None
    at_s: float
    # Moves at every load start, stop and failure: a readiness answer to a request sent
    # in an earlier epoch speaks of a server that is gone, and is dropped.
    epoch: int = 0
    # The time of the last line, when the log stopped mid-load longer ago than any step
    # takes (STALE_SILENCE_S) and the unit is not known to run: the load's state is unknown,
    # and phase, elapsed times and timeline stop at that line (no ETA).
    silent_since_s: float | None = None

    @property
    def is_loading(self) -> bool:
        return self.phase in LOADING_PHASES and self.silent_since_s is None
