"""Server metrics from Prometheus /metrics (vLLM and SGLang names), with a log fallback.

Parsing is prometheus_client's reference text parser. Rates and latency quantiles need two
scrapes: tokens/s are counter deltas over the interval, and TTFT/ITL quantiles come from
histogram bucket deltas, so they describe the last interval rather than the server's whole life.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tui.core.errors import ServedeckError
from tui.serving.disagg import DISAGG_FAMILIES, KvTransfers, kv_transfers
from tui.serving.engines import EngineMetrics
from tui.serving.load.tracker import EngineStats
from tui.serving.lora import LORA_FAMILIES, LoraRequests, lora_requests
from tui.serving.prefix_cache import PREFIX_CACHE_FAMILIES, PrefixCacheFigures, prefix_cache_figures
from tui.serving.sleep import SLEEP_STATE, sleep_level
from tui.serving.slo_live import E2E, FINISHED, SloCounters, bucket_delta, slo_counters
from tui.serving.spec_decode import FAMILIES as SPEC_DECODE_FAMILIES
from tui.serving.spec_decode import SpecDecode, spec_decode

if TYPE_CHECKING:  # httpx and the parser load on the first scrape, not at console start
    import httpx

# family names (as the parser gives them: counters without `_total`)
RUNNING = ("vllm:num_requests_running", "sglang:num_running_reqs")
WAITING = ("vllm:num_requests_waiting", "sglang:num_queue_reqs")
KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage")
PROMPT_TOKENS = ("vllm:prompt_tokens", "sglang:prompt_tokens")
GENERATION_TOKENS = ("vllm:generation_tokens", "sglang:generation_tokens")
PREEMPTIONS = ("vllm:num_preemptions", "sglang:num_retracted_reqs")
TTFT = ("vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds")
ITL = (
    "vllm:inter_token_latency_seconds",
    "vllm:time_per_output_token_seconds",
    "sglang:inter_token_latency_seconds",
    "sglang:time_per_output_token_seconds",
)
ENGINE_HEALTHY = ("vllm:engine_healthy",)
QUANTILES = (0.5, 0.9, 0.99)


# One sample's labels other than le, as sorted (name, value) pairs.
Labels = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class MetricsScrape:
    """One parsed /metrics page: values summed over label sets (engines, models).

    `engines`: the same page split by the `engine` label (a data-parallel rank each),
    `samples`: every gauge/counter sample with its labels, for families whose labels
    carry the figure (a draft position, the LoRA adapters, the sleep level).
    """

    at_s: float
    values: dict[str, float] = field(default_factory=dict)
    buckets: dict[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    engines: dict[str, MetricsScrape] = field(default_factory=dict)
    model_name: str | None = None
    samples: tuple[tuple[str, Labels, float], ...] = ()

    def labelled(self, name: str) -> tuple[tuple[dict[str, str], float], ...]:
        """The samples of one family with their labels."""
        return tuple(
            (dict(labels), value) for family, labels, value in self.samples if family == name
        )

    def first(self, names: tuple[str, ...]) -> float | None:
        for name in names:
            if name in self.values:
                return self.values[name]
        return None

    def histogram(self, names: tuple[str, ...]) -> tuple[tuple[float, float], ...] | None:
        for name in names:
            if name in self.buckets:
                return self.buckets[name]
        return None


@dataclass(frozen=True, slots=True)
class ServerMetrics:
    running_reqs: int | None
    waiting_reqs: int | None
    kv_cache_usage_pct: float | None
    prompt_tokens_per_s: float | None
    generation_tokens_per_s: float | None
    preemptions_total: int | None
    preemptions_in_interval: int | None
    ttft_p50_s: float | None
    ttft_p90_s: float | None
    ttft_p99_s: float | None
    itl_p50_s: float | None
    itl_p90_s: float | None
    itl_p99_s: float | None
    interval_s: float | None
    source: str  # "metrics" or "log"
    at_s: float
    engine_healthy: float | None = None  # vllm:engine_healthy where exposed (0: the engine died)
    engines: tuple[EngineMetrics, ...] = ()  # one row per `engine` label (DP ranks); () without
    spec_decode: SpecDecode | None = None  # None: no speculative decoding exposed
    prefix_cache: PrefixCacheFigures | None = None  # None: the server exposes none of it
    lora: LoraRequests | None = None  # None: no LoRA gauge (LoRA off)
    kv_transfers: tuple[KvTransfers, ...] = ()  # P/D: each engine's NIXL figures; () without
    slo: SloCounters | None = None  # cumulative, for the live SLO windows (None: from the log)
    sleep_level: int | None = None  # 0 awake, 1/2 asleep (tui.serving.sleep); None not exposed


USED_FAMILIES = frozenset(
    (
        *RUNNING,
        *WAITING,
        *KV_USAGE,
        *PROMPT_TOKENS,
        *GENERATION_TOKENS,
        *PREEMPTIONS,
        *TTFT,
        *ITL,
        *ENGINE_HEALTHY,
        *E2E,
        *FINISHED,
        *SPEC_DECODE_FAMILIES,
        *PREFIX_CACHE_FAMILIES,
        *LORA_FAMILIES,
        *DISAGG_FAMILIES,
        SLEEP_STATE,
    )
)
_SAMPLE_SUFFIXES = ("_bucket", "_sum", "_count", "_total", "_created")
_BAD_TEXT = (ValueError, KeyError, TypeError, IndexError, AttributeError)
_PARSE_ERRORS = (*_BAD_TEXT, RecursionError, OverflowError)  # what the parser raises on junk


def _family_of(line: str) -> str:
    """The family a text-format line belongs to (a sample or a # HELP/# TYPE comment)."""
    if line.startswith("#"):
        parts = line.split(" ", 3)
        name = parts[2] if len(parts) > 2 else ""
    else:
        name = line.split("{", 1)[0].split(" ", 1)[0]
    for suffix in _SAMPLE_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def keep_families(text: str, families: frozenset[str]) -> str:
    """Only the lines of the wanted families: the reference parser then reads ~1/10 of a page."""
    return (
        "\n".join(line for line in text.splitlines() if line and _family_of(line) in families)
        + "\n"
    )


def parse_metrics(
    text: str, at_s: float | None = None, families: frozenset[str] | None = None
) -> MetricsScrape:
    """Parse a /metrics page (optionally only some families); non-Prometheus text raises."""
    if families is not None:
        text = keep_families(text, families)
    from prometheus_client.parser import text_string_to_metric_families

    values: dict[str, float] = {}
    buckets: dict[str, dict[float, float]] = {}
    per_engine: dict[str, tuple[dict[str, float], dict[str, dict[float, float]]]] = {}
    models: dict[str, str] = {}
    samples: list[tuple[str, Labels, float]] = []
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name.endswith("_created") or not math.isfinite(sample.value):
                    continue  # Prometheus allows NaN/+Inf/-Inf: not a number to show (n/a)
                engine = sample.labels.get("engine")
                if engine is not None and engine != "":
                    into = per_engine.setdefault(engine, ({}, {}))
                    if "model_name" in sample.labels:
                        models.setdefault(engine, sample.labels["model_name"])
                else:
                    into = None
                if family.type == "histogram":
                    if sample.name.endswith("_bucket"):
                        upper = float(sample.labels["le"])
                        if math.isnan(upper):
                            continue
                        for target in (buckets, into[1] if into else None):
                            if target is not None:
                                per = target.setdefault(family.name, {})
                                per[upper] = per.get(upper, 0.0) + sample.value
                    continue
                if family.type in ("gauge", "counter", "untyped", "unknown"):
                    values[family.name] = values.get(family.name, 0.0) + sample.value
                    if into is not None:
                        into[0][family.name] = into[0].get(family.name, 0.0) + sample.value
                    samples.append(
                        (family.name, tuple(sorted(sample.labels.items())), sample.value)
                    )
    except _PARSE_ERRORS as error:
        raise ServedeckError(f"/metrics: not Prometheus text ({error})") from None
    at = at_s if at_s is not None else time.time()

    def sorted_buckets(
        found: dict[str, dict[float, float]],
    ) -> dict[str, tuple[tuple[float, float], ...]]:
        return {name: tuple(sorted(per.items())) for name, per in found.items()}

    return MetricsScrape(
        at_s=at,
        values=values,
        buckets=sorted_buckets(buckets),
        engines={
            engine: MetricsScrape(
                at_s=at,
                values=found[0],
                buckets=sorted_buckets(found[1]),
                model_name=models.get(engine),
            )
            for engine, found in sorted(per_engine.items(), key=lambda item: _engine_order(item[0]))
        },
        samples=tuple(samples),
    )


def _engine_order(engine: str) -> tuple[int, str]:
    """Ranks in numeric order (engine 10 after engine 2)."""
    return (int(engine), "") if engine.isdigit() else (1 << 30, engine)


def histogram_quantile(q: float, cumulative: tuple[tuple[float, float], ...]) -> float | None:
    """Prometheus' histogram_quantile: linear interpolation inside the bucket holding rank q."""
    if not cumulative:
        return None
    total = cumulative[-1][1]
    if total <= 0:
        return None
    rank = q * total
    lower_bound, lower_count = 0.0, 0.0
    for upper, count in cumulative:
        if count >= rank:
            if math.isinf(upper):
                return lower_bound  # the +Inf bucket: the highest finite bound is all we know
            if count == lower_count:
                return upper
            return lower_bound + (upper - lower_bound) * (rank - lower_count) / (
                count - lower_count
            )
        lower_bound, lower_count = upper, count
    return cumulative[-1][0]


def _rate(now: float | None, before: float | None, interval_s: float | None) -> float | None:
    if now is None or before is None or not interval_s or interval_s <= 0:
        return None
    change = now - before
    return (change if change >= 0 else now) / interval_s


def _int(value: float | None) -> int | None:
    return int(value) if value is not None and math.isfinite(value) else None


def compute_metrics(current: MetricsScrape, previous: MetricsScrape | None = None) -> ServerMetrics:
    """Gauges from `current`; rates and quantiles over the interval since `previous`."""
    interval = current.at_s - previous.at_s if previous is not None else None
    kv = current.first(KV_USAGE)
    if kv is not None and len(current.engines) > 1:
        kv /= len(current.engines)  # fractions of each engine's cache: their mean, not a sum

    def before(names: tuple[str, ...]) -> float | None:
        return previous.first(names) if previous is not None else None

    def quantiles(names: tuple[str, ...]) -> tuple[float | None, ...]:
        now = current.histogram(names)
        delta = bucket_delta(now, previous.histogram(names) if previous else None) if now else None
        return tuple(histogram_quantile(q, delta) if delta else None for q in QUANTILES)

    ttft = quantiles(TTFT)
    itl = quantiles(ITL)
    preempt_now = current.first(PREEMPTIONS)
    preempt_before = before(PREEMPTIONS)
    return ServerMetrics(
        running_reqs=_int(current.first(RUNNING)),
        waiting_reqs=_int(current.first(WAITING)),
        kv_cache_usage_pct=kv * 100 if kv is not None else None,
        prompt_tokens_per_s=_rate(current.first(PROMPT_TOKENS), before(PROMPT_TOKENS), interval),
        generation_tokens_per_s=_rate(
            current.first(GENERATION_TOKENS), before(GENERATION_TOKENS), interval
        ),
        preemptions_total=_int(preempt_now),
        preemptions_in_interval=_int(preempt_now - preempt_before)
        if preempt_now is not None and preempt_before is not None
        else None,
        ttft_p50_s=ttft[0],
        ttft_p90_s=ttft[1],
        ttft_p99_s=ttft[2],
        itl_p50_s=itl[0],
        itl_p90_s=itl[1],
        itl_p99_s=itl[2],
        interval_s=interval,
        source="metrics",
        at_s=current.at_s,
        engine_healthy=current.first(ENGINE_HEALTHY),
        engines=_per_engine(current, previous),
        spec_decode=spec_decode(current, previous),
        prefix_cache=prefix_cache_figures(current, previous),
        lora=lora_requests(current),
        kv_transfers=kv_transfers(current, previous),
        slo=slo_counters(current, {"ttft": TTFT, "itl": ITL, "e2e": E2E}, PREEMPTIONS),
        sleep_level=sleep_level(current),
    )


def _per_engine(now: MetricsScrape, earlier: MetricsScrape | None) -> tuple[EngineMetrics, ...]:
    """Each engine label's own figures, computed as the whole page's are."""
    rows = []
    for engine, scrape in now.engines.items():
        before = earlier.engines.get(engine) if earlier is not None else None
        figures = compute_metrics(scrape, before)
        rows.append(
            EngineMetrics(
                engine=engine,
                model_name=scrape.model_name,
                running_reqs=figures.running_reqs,
                waiting_reqs=figures.waiting_reqs,
                kv_cache_usage_pct=figures.kv_cache_usage_pct,
                prompt_tokens_per_s=figures.prompt_tokens_per_s,
                generation_tokens_per_s=figures.generation_tokens_per_s,
                ttft_p50_s=figures.ttft_p50_s,
                itl_p50_s=figures.itl_p50_s,
            )
        )
    return tuple(rows)


def metrics_from_log(stats: EngineStats) -> ServerMetrics:
    """The fallback when /metrics cannot be reached: the engine's periodic stats line."""
    return ServerMetrics(
        running_reqs=stats.running_reqs,
        waiting_reqs=stats.waiting_reqs,
        kv_cache_usage_pct=stats.kv_cache_usage_pct,
        prompt_tokens_per_s=stats.prompt_tokens_per_s,
        generation_tokens_per_s=stats.generation_tokens_per_s,
        preemptions_total=None,
        preemptions_in_interval=None,
        ttft_p50_s=None,
        ttft_p90_s=None,
        ttft_p99_s=None,
        itl_p50_s=None,
        itl_p90_s=None,
        itl_p99_s=None,
        interval_s=None,
        source="log",
        at_s=stats.at_s,
    )


class MetricsPoller:
    """Scrapes /metrics and keeps the previous scrape so each call gives interval figures."""

    def __init__(
        self, base_url: str, *, api_key: str | None = None, timeout_s: float = 3.0
    ) -> None:
        self.url = base_url.rstrip("/") + "/metrics"
        import httpx

        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, 2.0))
        self._previous: MetricsScrape | None = None

    async def poll(self, client: httpx.AsyncClient | None = None) -> ServerMetrics:
        """One scrape; raises ServedeckError with the URL when the server cannot be read."""
        import httpx

        try:
            if client is None:
                async with httpx.AsyncClient(timeout=self._timeout) as own:
                    response = await own.get(self.url, headers=self._headers)
            else:
                get = client.get(self.url, headers=self._headers, timeout=self._timeout)
                try:
                    response = await get
                except httpx.RemoteProtocolError:
                    # The pooled connection was closed under the request: a server ends an
                    # idle keep-alive connection after its own timeout (uvicorn's is 5 s), and
                    # a poll landing then would read as an outage. Once more, on a fresh one.
                    response = await client.get(
                        self.url, headers=self._headers, timeout=self._timeout
                    )
            response.raise_for_status()
        except httpx.HTTPError as error:
            raise ServedeckError(f"{self.url}: {type(error).__name__}: {error}") from None
        scrape = parse_metrics(response.text, families=USED_FAMILIES)
        result = compute_metrics(scrape, self._previous)
        self._previous = scrape
        return result
