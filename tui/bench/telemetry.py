"""The engine's side of a capacity level: vLLM /metrics polled while the level runs.

Gauges (running, waiting, KV cache usage) are sampled for peak and mean once
the level is in steady state; counters and histogram sums (preemptions,
prefix-cache queries and hits, server TTFT and ITL) are diffed between the
first and last steady sample. Parsed with prometheus_client's text parser;
label sets are summed (one engine per label set). A server without /metrics
gives no samples, never an error.
"""

from __future__ import annotations

import time

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tui.bench.capacity.search import ServerLevelStats

GAUGES = ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc")
COUNTERS = (
    "vllm:num_preemptions_total",
    "vllm:prefix_cache_queries_total",
    "vllm:prefix_cache_hits_total",
    "vllm:time_to_first_token_seconds_sum",
    "vllm:time_to_first_token_seconds_count",
    "vllm:inter_token_latency_seconds_sum",
    "vllm:inter_token_latency_seconds_count",
)


def parse_sample(text: str) -> dict[str, float]:
    """The gauges and counters above, summed over label sets."""
    wanted = set(GAUGES) | set(COUNTERS)
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in wanted:
                totals[sample.name] = totals.get(sample.name, 0.0) + float(sample.value)
    return totals


class MetricsPoller:
    """Steady-state samples of one level; `stats()` turns them into ServerLevelStats."""

    def __init__(self, client: httpx.AsyncClient, metrics_url: str, scale: float = 1.0) -> None:
        self._client = client
        self._url = metrics_url
        self._scale = scale
        self.samples: list[tuple[float, dict[str, float]]] = []

    async def sample(self, *, steady: bool) -> None:
        """One scrape, kept only in steady state; a failed scrape is skipped."""
        if not steady:
            return
        try:
            response = await self._client.get(self._url)
            if response.status_code != 200:
                return
            values = parse_sample(response.text)
        except (httpx.HTTPError, ValueError):
            return
        if values:
            self.samples.append((time.monotonic(), values))

    def _series(self, name: str) -> list[float]:
        return [values.get(name, 0.0) for _, values in self.samples]

    def _delta(self, name: str) -> float:
        if len(self.samples) < 2:
            return 0.0
        return self.samples[-1][1].get(name, 0.0) - self.samples[0][1].get(name, 0.0)

    def waiting_growing(self, concurrency: int) -> bool:
        """The waiting queue rose through the level by more than a quarter of the users.

        In a closed loop the queue is bounded by the users; a queue that keeps
        rising over the whole steady window means the engine falls further behind.
        """
        waiting = self._series("vllm:num_requests_waiting")
        if len(waiting) < 8:
            return False
        half = len(waiting) // 2
        first, second = waiting[:half], waiting[half:]
        rise = sum(second) / len(second) - sum(first) / len(first)
        return rise > max(2.0, 0.25 * concurrency) and waiting[-1] >= max(waiting[:half])

    def oversaturated(self, concurrency: int) -> bool:
        return self._delta("vllm:num_preemptions_total") > 0 or self.waiting_growing(concurrency)

    def _mean_ms(self, stem: str) -> float | None:
        count = self._delta(stem + "_count")
        return self._delta(stem + "_sum") / count * 1000 * self._scale if count > 0 else None

    def stats(self, concurrency: int) -> ServerLevelStats:
        if not self.samples:
            return ServerLevelStats()
        running = self._series("vllm:num_requests_running")
        waiting = self._series("vllm:num_requests_waiting")
        kv = self._series("vllm:kv_cache_usage_perc")
        queries = self._delta("vllm:prefix_cache_queries_total")
        hits = self._delta("vllm:prefix_cache_hits_total")
        return ServerLevelStats(
            samples=len(self.samples),
            running_peak=max(running),
            running_mean=sum(running) / len(running),
            waiting_peak=max(waiting),
            waiting_mean=sum(waiting) / len(waiting),
            kv_usage_peak_pct=100.0 * max(kv),
            preemptions=self._delta("vllm:num_preemptions_total"),
            prefix_hit_rate_pct=100.0 * hits / queries if queries > 0 else None,
            server_ttft_mean_ms=self._mean_ms("vllm:time_to_first_token_seconds"),
            server_itl_mean_ms=self._mean_ms("vllm:inter_token_latency_seconds"),
            waiting_growing=self.waiting_growing(concurrency),
        )
