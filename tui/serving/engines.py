"""Per-engine figures of a data-parallel deployment, and the imbalance they can show.

vLLM labels every scheduler metric with `engine` (the data-parallel rank) and
`model_name` (labelnames = ["model_name", "engine"] in vllm/v1/metrics/loggers.py,
PrometheusStatLogger.__init__). Summed, one engine at 100 % KV and one idle read
as 50 %: each engine keeps its own row, and an engine taking no work while
another queues is said with the numbers that show it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EngineMetrics:
    """One engine's figures over the last interval (None: not exposed or not yet known)."""

    engine: str  # the `engine` label: the data-parallel rank
    model_name: str | None
    running_reqs: int | None
    waiting_reqs: int | None
    kv_cache_usage_pct: float | None
    prompt_tokens_per_s: float | None
    generation_tokens_per_s: float | None
    ttft_p50_s: float | None
    itl_p50_s: float | None

    @property
    def idle(self) -> bool:
        """Known to hold no request at all (unknown is not idle)."""
        return self.running_reqs == 0 and self.waiting_reqs == 0


def idle_engine_warnings(engines: tuple[EngineMetrics, ...]) -> tuple[str, ...]:
    """One line per engine that is idle while another has requests waiting.

    A data-parallel front end that stopped routing to a rank (a dead coordinator,
    a wedged engine) looks healthy summed: the queue simply grows elsewhere.
    """
    queued = [e for e in engines if e.waiting_reqs]
    if not queued:
        return ()
    busiest = max(queued, key=lambda e: e.waiting_reqs or 0)
    return tuple(
        f"engine {e.engine} idle while engine {busiest.engine} has {busiest.waiting_reqs} waiting"
        for e in engines
        if e.idle
    )
