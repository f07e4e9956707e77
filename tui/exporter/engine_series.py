"""The exporter's engine families: data-parallel engines, spec decode, sleep, adapters, P/D.

Each family is written only when the server exposes what it comes from, so Prometheus
shows it absent rather than 0: per-engine rows need vLLM's `engine` label, acceptance
needs the spec-decode counters, the sleep gauges `vllm:engine_sleep_state`, the adapter
count an engine with LoRA on, transfer failures the NIXL counter (the names servedeck
reads are in tui.serving: engines, spec_decode, sleep, lora, disagg).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily, Metric

from tui.serving.disagg import KvTransfers
from tui.serving.engines import EngineMetrics
from tui.serving.spec_decode import SpecDecode

ENGINE_METRICS: dict[str, str] = {
    "servedeck_engine_running_requests": "Requests running on that engine (vLLM's `engine` "
    "label: one data-parallel rank).",
    "servedeck_engine_waiting_requests": "Requests waiting on that engine.",
    "servedeck_engine_kv_cache_usage_ratio": "Fraction of that engine's KV cache in use, 0 to 1.",
    "servedeck_spec_decode_acceptance_ratio": "Draft tokens accepted over draft tokens proposed, "
    "over the last metrics interval.",
    "servedeck_spec_decode_mean_accepted_length": "Tokens per draft step over the last metrics "
    "interval: 1 + accepted / drafts.",
    "servedeck_asleep": "1 while the engine sleeps (vLLM sleep mode), 0 awake.",
    "servedeck_sleep_level": "The level the engine sleeps at: 1 weights offloaded, 2 discarded.",
    "servedeck_lora_adapters_loaded": "LoRA adapters the server lists in /v1/models.",
    "servedeck_kv_role": "1 for the engine's prefill/decode role (prefill, decode, prefill+decode).",
    "servedeck_kv_transfers_failed": "KV transfers failed on that engine since it started "
    "(vllm:nixl_num_failed_transfers).",
}


@dataclass(frozen=True, slots=True)
class EngineView:
    """The engine figures of the last poll; None or () where the server did not say."""

    engines: tuple[EngineMetrics, ...] = ()
    spec: SpecDecode | None = None
    sleep_level: int | None = None  # 0 awake, 1 or 2 asleep; None: sleep mode not exposed
    adapters: int | None = None  # None: LoRA off or /v1/models not read
    kv_role: str | None = None
    transfers: tuple[KvTransfers, ...] = ()


Gauge = Callable[[str, tuple[str, ...]], GaugeMetricFamily]


def engine_families(v: EngineView, base: list[str], gauge: Gauge) -> Iterator[Metric]:
    """The families `v` knows, each with the base labels (and `engine` or `role`)."""

    def single(name: str, value: float | None) -> Iterator[Metric]:
        if value is not None:
            family = gauge(name, ())
            family.add_metric(base, float(value))
            yield family

    for name, pick in (
        ("servedeck_engine_running_requests", lambda e: e.running_reqs),
        ("servedeck_engine_waiting_requests", lambda e: e.waiting_reqs),
        (
            "servedeck_engine_kv_cache_usage_ratio",
            lambda e: None if e.kv_cache_usage_pct is None else e.kv_cache_usage_pct / 100,
        ),
    ):
        yield from _per_engine(name, [(e.engine, pick(e)) for e in v.engines], base, gauge)
    if v.spec is not None:
        yield from single("servedeck_spec_decode_acceptance_ratio", v.spec.acceptance_rate)
        yield from single("servedeck_spec_decode_mean_accepted_length", v.spec.mean_accepted_length)
    if v.sleep_level is not None:
        yield from single("servedeck_asleep", 1.0 if v.sleep_level > 0 else 0.0)
        yield from single("servedeck_sleep_level", v.sleep_level or None)
    yield from single("servedeck_lora_adapters_loaded", v.adapters)
    if v.kv_role is not None:
        role = gauge("servedeck_kv_role", ("role",))
        role.add_metric([*base, v.kv_role], 1.0)
        yield role
    failed = [(t.engine, t.failed_total) for t in v.transfers]
    yield from _per_engine("servedeck_kv_transfers_failed", failed, base, gauge)


def _per_engine(
    name: str, values: Sequence[tuple[str, float | None]], base: list[str], gauge: Gauge
) -> Iterator[Metric]:
    known = [(engine, value) for engine, value in values if value is not None]
    if known:
        family = gauge(name, ("engine",))
        for engine, value in known:
            family.add_metric([*base, engine], float(value))
        yield family
