"""The server's side of a run: vLLM /metrics before and after, as deltas.

Histogram sum/count deltas give the server's mean queue, prefill and decode
time per request over exactly the run's window; counter deltas give the
prompt and generation tokens the server processed. Parsed with
prometheus_client's reference text parser; every label set is summed.
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tui.bench.model import ServerView

_WANTED = (
    "vllm:request_queue_time_seconds_sum",
    "vllm:request_queue_time_seconds_count",
    "vllm:request_prefill_time_seconds_sum",
    "vllm:request_prefill_time_seconds_count",
    "vllm:request_decode_time_seconds_sum",
    "vllm:request_decode_time_seconds_count",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:prefix_cache_queries_total",
    "vllm:prefix_cache_hits_total",
    # speculative decoding: vllm/v1/spec_decode/metrics.py (SpecDecodingProm)
    "vllm:spec_decode_num_drafts_total",
    "vllm:spec_decode_num_draft_tokens_total",
    "vllm:spec_decode_num_accepted_tokens_total",
)


def parse_counters(text: str) -> dict[str, float]:
    """The samples servedeck diffs, summed over label sets; absent ones are left out."""
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in _WANTED:
                totals[sample.name] = totals.get(sample.name, 0.0) + float(sample.value)
    return totals


async def scrape(client: httpx.AsyncClient, metrics_url: str) -> dict[str, float] | None:
    """One /metrics read; None when the server has no (parsable) /metrics."""
    try:
        response = await client.get(metrics_url)
        if response.status_code != 200:
            return None
        return parse_counters(response.text)
    except (httpx.HTTPError, ValueError):
        return None


def _mean_ms(before: Mapping[str, float], after: Mapping[str, float], stem: str) -> float | None:
    count = after.get(stem + "_count", 0.0) - before.get(stem + "_count", 0.0)
    total = after.get(stem + "_sum", 0.0) - before.get(stem + "_sum", 0.0)
    return total / count * 1000 if count > 0 else None


def server_delta(
    before: Mapping[str, float] | None, after: Mapping[str, float] | None
) -> ServerView | None:
    """What the server saw between two scrapes; None when either is missing."""
    if before is None or after is None or not after:
        return None

    def delta(name: str) -> float:
        return after.get(name, 0.0) - before.get(name, 0.0)

    return ServerView(
        requests=delta("vllm:request_queue_time_seconds_count"),
        mean_queue_ms=_mean_ms(before, after, "vllm:request_queue_time_seconds"),
        mean_prefill_ms=_mean_ms(before, after, "vllm:request_prefill_time_seconds"),
        mean_decode_ms=_mean_ms(before, after, "vllm:request_decode_time_seconds"),
        prompt_tokens=delta("vllm:prompt_tokens_total"),
        generation_tokens=delta("vllm:generation_tokens_total"),
        prefix_queries=delta("vllm:prefix_cache_queries_total"),
        prefix_hits=delta("vllm:prefix_cache_hits_total"),
        spec_drafts=delta("vllm:spec_decode_num_drafts_total"),
        spec_draft_tokens=delta("vllm:spec_decode_num_draft_tokens_total"),
        spec_accepted_tokens=delta("vllm:spec_decode_num_accepted_tokens_total"),
    )
