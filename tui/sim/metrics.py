"""/metrics for the simulator: vLLM's metric names and labels, via prometheus_client.

A custom collector reads the engine's counters at scrape time (so the hot path
only bumps integers) and prometheus_client writes the exposition text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from tui.sim.engine import SimEngine
from tui.sim.prefix_cache import BLOCK_TOKENS

FINISHED_REASONS = ("stop", "length", "abort", "error", "repetition")
HISTOGRAM_HELP = {
    "time_to_first_token_seconds": "Histogram of time to first token in seconds.",
    "inter_token_latency_seconds": "Histogram of inter-token latency in seconds.",
    "request_time_per_output_token_seconds": (
        "Histogram of time_per_output_token_seconds per request."
    ),
    "e2e_request_latency_seconds": "Histogram of e2e request latency in seconds.",
    "request_queue_time_seconds": "Histogram of time spent in WAITING phase for request.",
    "request_inference_time_seconds": "Histogram of time spent in RUNNING phase for request.",
    "request_prefill_time_seconds": "Histogram of time spent in PREFILL phase for request.",
    "request_decode_time_seconds": "Histogram of time spent in DECODE phase for request.",
    "request_prompt_tokens": "Number of prefill tokens processed.",
    "request_generation_tokens": "Number of generation tokens processed.",
    "request_params_max_tokens": "Histogram of the max_tokens request parameter.",
    "iteration_tokens_total": "Histogram of number of tokens per engine_step.",
}


class VllmCollector(Collector):
    """Engine state as vLLM's `vllm:*` metric families, one label set per engine.

    Labels as vLLM writes them: labelnames ["model_name", "engine"] with the engine's
    data-parallel rank (vllm/v1/metrics/loggers.py, PrometheusStatLogger.__init__).
    """

    def __init__(self, engines: SimEngine | list[SimEngine], model_name: str) -> None:
        self._engines = engines if isinstance(engines, list) else [engines]
        self._model = model_name

    def collect(self) -> Iterator[Metric]:
        labels = ["engine", "model_name"]
        ranks = [(str(rank), engine) for rank, engine in enumerate(self._engines)]
        created = self._engines[0].created_s

        def gauge(name: str, doc: str, value: Callable[[SimEngine], float]) -> GaugeMetricFamily:
            family = GaugeMetricFamily(f"vllm:{name}", doc, labels=labels)
            for rank, engine in ranks:
                family.add_metric([rank, self._model], value(engine))
            return family

        def counter(
            name: str, doc: str, value: Callable[[SimEngine], float]
        ) -> CounterMetricFamily:
            family = CounterMetricFamily(f"vllm:{name}", doc, labels=labels)
            for rank, engine in ranks:
                family.add_metric([rank, self._model], value(engine), created=created)
            return family

        yield gauge(
            "num_requests_running",
            "Number of requests in model execution batches.",
            lambda e: len(e.running),
        )
        yield gauge(
            "num_requests_waiting",
            "Number of requests waiting to be processed.",
            lambda e: len(e.waiting),
        )
        yield gauge(
            "kv_cache_usage_perc",
            "KV-cache usage. 1 means 100 percent usage.",
            lambda e: e.kv_usage(),
        )
        yield counter(
            "prefix_cache_queries",
            "Prefix cache queries, in terms of number of queried tokens.",
            lambda e: e.prefix_queries_total,
        )
        yield counter(
            "prefix_cache_hits",
            "Prefix cache hits, in terms of number of cached tokens.",
            lambda e: e.prefix_hits_total,
        )
        yield counter(
            "num_preemptions", "Cumulative number of preemption from the engine.", lambda e: 0
        )
        yield counter(
            "prompt_tokens",
            "Number of prefill tokens processed.",
            lambda e: e.prompt_tokens_total,
        )
        yield counter(
            "generation_tokens",
            "Number of generation tokens processed.",
            lambda e: e.generation_tokens_total,
        )
        success = CounterMetricFamily(
            "vllm:request_success",
            "Count of successfully processed requests.",
            labels=["engine", "finished_reason", "model_name"],
        )
        for rank, engine in ranks:
            for reason in FINISHED_REASONS:
                success.add_metric(
                    [rank, reason, self._model], engine.success[reason], created=created
                )
        yield success
        for name in self._engines[0].histograms:
            family = HistogramMetricFamily(f"vllm:{name}", HISTOGRAM_HELP[name], labels=labels)
            for rank, engine in ranks:
                histogram = engine.histograms[name]
                family.add_metric([rank, self._model], histogram.cumulative(), histogram.total)
            yield family
        yield from self._spec_decode(ranks, created)
        info = GaugeMetricFamily(
            "vllm:cache_config_info",
            "Information of the LLMEngine CacheConfig",
            labels=["block_size", "cache_dtype", "enable_prefix_caching", "num_gpu_blocks"],
        )
        settings = self._engines[0].settings
        blocks = settings.kv_cache_tokens // BLOCK_TOKENS
        info.add_metric([str(BLOCK_TOKENS), "auto", str(settings.prefix_caching), str(blocks)], 1.0)
        yield info

    def _spec_decode(self, ranks: list[tuple[str, SimEngine]], created: float) -> Iterator[Metric]:
        """vllm/v1/spec_decode/metrics.py SpecDecodingProm's counters, when drafting."""
        drafting = [(rank, e.spec) for rank, e in ranks if e.spec is not None]
        if not drafting:
            return
        labels = ["engine", "model_name"]
        for name, doc, value in (
            ("num_drafts", "Number of spec decoding drafts.", "drafts"),
            ("num_draft_tokens", "Number of draft tokens.", "draft_tokens"),
            ("num_accepted_tokens", "Number of accepted tokens.", "accepted_tokens"),
        ):
            family = CounterMetricFamily(f"vllm:spec_decode_{name}", doc, labels=labels)
            for rank, spec in drafting:
                family.add_metric([rank, self._model], getattr(spec, value), created=created)
            yield family
        per_pos = CounterMetricFamily(
            "vllm:spec_decode_num_accepted_tokens_per_pos",
            "Accepted tokens per draft position.",
            labels=[*labels, "position"],
        )
        for rank, spec in drafting:
            for position, accepted in enumerate(spec.accepted_per_pos):
                per_pos.add_metric([rank, self._model, str(position)], accepted, created=created)
        yield per_pos


def build_registry(engines: SimEngine | list[SimEngine], model_name: str) -> CollectorRegistry:
    """A private registry: process/GC/platform metrics plus the vLLM families."""
    registry = CollectorRegistry(auto_describe=False)
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    registry.register(VllmCollector(engines, model_name))
    return registry


def exposition(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)
