"""Frozen result types of a benchmark run, and their JSON round trip.

Field names carry units (`_ms`, `_s`, `_tok_s`); the vLLM-named export lives
in tui.bench.export.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from tui.bench.client_load import ClientLoad, client_load_from_dict
from tui.bench.over_time import TimeSlice, slices_from_dicts
from tui.bench.uncertainty import LevelUncertainty, uncertainty_from_dict

OUTPUT_TOKENS_FROM_USAGE = "usage"
OUTPUT_TOKENS_FROM_CHUNKS = "chunks (server sent no usage; one token per chunk assumed)"
OUTPUT_TOKENS_MIXED = "mixed (some requests had no usage; chunks counted)"


@dataclass(frozen=True, slots=True)
class LatencyStats:
    """Summary of one latency list in milliseconds (vLLM: mean, median, std, percentiles).

    `percentiles_ms` holds (percentile, value) for the percentiles the run asked for
    (vLLM's `--metric-percentiles`); p90 and p99 are always kept, for comparisons.
    """

    count: int = 0
    mean_ms: float = 0.0
    median_ms: float = 0.0
    std_ms: float = 0.0
    p90_ms: float = 0.0
    p99_ms: float = 0.0
    percentiles_ms: tuple[tuple[float, float], ...] = ()

    def selected_ms(self) -> tuple[tuple[float, float], ...]:
        """The asked percentiles; p99 alone for a run stored before they could be chosen."""
        return self.percentiles_ms or ((99.0, self.p99_ms),)


def percentile_word(percentile: float) -> str:
    """vLLM's spelling of a percentile in keys and labels: 99 -> "99", 99.9 -> "99.9"."""
    return str(int(percentile)) if int(percentile) == percentile else str(percentile)


@dataclass(frozen=True, slots=True)
class Spread:
    """A distribution in the unit its field names (per-user tok/s): mean, median, std and
    the asked percentiles, as (percentile, value)."""

    count: int = 0
    mean: float = 0.0
    median: float = 0.0
    std: float = 0.0
    percentiles: tuple[tuple[float, float], ...] = ()


@dataclass(frozen=True, slots=True)
class HttpPhases:
    """Each request's HTTP phases over a level (tui.bench.http_phases), in ms."""

    connect: LatencyStats  # 0 for a reused connection
    send: LatencyStats
    wait: LatencyStats  # request sent to the response's headers
    new_connections: int  # requests that opened one (the rest reused a kept-alive one)


@dataclass(frozen=True, slots=True)
class ServerView:
    """The server's own account of a level: /metrics deltas between before and after."""

    requests: float = 0.0  # count delta of the queue-time histogram
    mean_queue_ms: float | None = None
    mean_prefill_ms: float | None = None
    mean_decode_ms: float | None = None
    prompt_tokens: float = 0.0
    generation_tokens: float = 0.0
    prefix_queries: float = 0.0  # prompt tokens looked up in the prefix cache
    prefix_hits: float = 0.0  # of which served from it
    spec_drafts: float = 0.0  # speculative decoding: draft steps (0: none, or spec decode off)
    spec_draft_tokens: float = 0.0  # tokens proposed by those drafts
    spec_accepted_tokens: float = 0.0  # of which the target model accepted

    @property
    def prefix_hit_rate(self) -> float | None:
        return self.prefix_hits / self.prefix_queries if self.prefix_queries > 0 else None

    @property
    def spec_acceptance_rate(self) -> float | None:
        """Accepted / proposed draft tokens over the level; None without a draft."""
        if self.spec_draft_tokens <= 0:
            return None
        return self.spec_accepted_tokens / self.spec_draft_tokens

    @property
    def tokens_per_chunk(self) -> float | None:
        """Tokens a request gets per engine step: 1 + accepted / drafts (vLLM's mean
        acceptance length), so a streamed chunk bundles this many; None without a draft."""
        return 1 + self.spec_accepted_tokens / self.spec_drafts if self.spec_drafts > 0 else None


@dataclass(frozen=True, slots=True)
class AdapterLevel:
    """One LoRA adapter's requests within a level (tui.bench.adapters)."""

    name: str
    completed: int
    failed: int
    output_throughput: float | None  # tok/s over the level's duration; None: none completed
    ttft: LatencyStats
    tpot: LatencyStats


@dataclass(frozen=True, slots=True)
class LevelResult:
    """One concurrency level (closed loop) or one request rate (open loop)."""

    concurrency: int
    request_rate: float | None  # requests/s; None for closed loop
    burstiness: float
    num_requests: int
    completed: int
    failed: int
    cancelled: int
    partial: bool
    duration_s: float
    total_input_tokens: int
    total_output_tokens: int
    output_tokens_source: str
    request_throughput: float
    output_throughput: float
    total_token_throughput: float
    request_goodput: float | None
    decode_tok_s_per_stream: float | None  # 1 / mean TPOT
    prefill_tok_s_per_request: float | None  # mean(prompt tokens / TTFT)
    ttft: LatencyStats
    tpot: LatencyStats
    itl: LatencyStats
    e2el: LatencyStats
    errors: tuple[str, ...] = ()  # the first error of each failed request
    server: ServerView | None = None
    # prompt tokens / duration: the prefill side of a run (None in runs stored before it)
    input_tok_s: float | None = None
    # 95 % intervals over the requests (tui.bench.uncertainty; None in older runs)
    uncertainty: LevelUncertainty | None = None
    # send lag, loop lag, CPU share; client-bound when past a limit (None in older runs)
    client_load: ClientLoad | None = None
    # time to second token (TTFT + the first gap), per-user output tok/s (output tokens /
    # E2EL) and the HTTP phases, each a distribution (None in older runs)
    ttst: LatencyStats | None = None
    user_tok_s: Spread | None = None
    http: HttpPhases | None = None
    # per-second output tok/s, requests running and TTFT (tui.bench.over_time)
    over_time: tuple[TimeSlice, ...] = ()
    # each LoRA adapter's requests (`bench --lora`; empty without)
    adapters: tuple[AdapterLevel, ...] = ()

    @property
    def client_bound(self) -> bool:
        return self.client_load is not None and self.client_load.bound


@dataclass(frozen=True, slots=True)
class RunContext:
    """What was measured: enough to compare runs across configurations of one host."""

    profile: str = ""
    host: str = ""
    base_url: str = ""
    model: str = ""
    engine: str = "vllm"
    engine_version: str = ""
    gpus: str = ""
    tp: int = 1
    ep: bool = False
    config_hash: str = ""


@dataclass(frozen=True, slots=True)
class BenchResult:
    """A whole run: its context, the workload, and one LevelResult per level."""

    run_id: str
    started_at: str  # ISO 8601, local time with offset
    preset: str
    endpoint: str
    input_tokens: int
    output_tokens: int
    temperature: float
    ignore_eos: bool
    context: RunContext
    levels: tuple[LevelResult, ...]
    partial: bool = False
    client: dict[str, Any] = field(default_factory=dict)  # transport, processes, prompt method

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def best_output_throughput(self) -> float:
        return max((level.output_throughput for level in self.levels), default=0.0)

    @property
    def input_tokens_sent(self) -> int | None:
        """Prompt tokens per request as the server counted them (usage), over every level."""
        completed = sum(level.completed for level in self.levels)
        total = sum(level.total_input_tokens for level in self.levels)
        return round(total / completed) if completed and total else None

    def _single_level(self) -> LevelResult | None:
        return next(
            (lv for lv in self.levels if lv.concurrency == 1 and lv.request_rate is None), None
        )

    @property
    def single_stream_tok_s(self) -> float | None:
        """Single-stream speed: output tok/s at concurrency 1 (vLLM's output_throughput).

        The one definition used everywhere (Bench pane, history, CLI, summary), so two
        screens never show two "single-stream" numbers for one run. A prefill run (one
        output token per request) has none: its output tok/s measures prompt processing.
        """
        level = self._single_level()
        if level is None or not level.completed or self.output_tokens <= 1:
            return None
        return level.output_throughput

    @property
    def decode_tok_s_per_stream(self) -> float | None:
        """Decode speed of one stream at concurrency 1: 1 / mean TPOT (excludes prefill)."""
        level = self._single_level()
        return level.decode_tok_s_per_stream if level is not None else None


def _build(cls: type, data: dict[str, Any]) -> Any:
    known = {f.name for f in fields(cls)}
    return cls(**{key: value for key, value in data.items() if key in known})


def _pairs(pairs: Any) -> tuple[tuple[float, float], ...]:
    return tuple((float(p), float(v)) for p, v in pairs or ())


def _latency(data: dict[str, Any] | None) -> LatencyStats:
    stats = dict(data or {})
    stats["percentiles_ms"] = _pairs(stats.get("percentiles_ms"))
    return _build(LatencyStats, stats)


def level_from_dict(data: dict[str, Any]) -> LevelResult:
    values = dict(data)
    for name in ("ttft", "tpot", "itl", "e2el"):
        values[name] = _latency(values.get(name))
    values["ttst"] = _latency(values["ttst"]) if values.get("ttst") else None
    spread = values.get("user_tok_s")
    values["user_tok_s"] = (
        _build(Spread, {**spread, "percentiles": _pairs(spread.get("percentiles"))})
        if spread
        else None
    )
    http = values.get("http")
    values["http"] = (
        HttpPhases(
            _latency(http.get("connect")),
            _latency(http.get("send")),
            _latency(http.get("wait")),
            int(http.get("new_connections", 0)),
        )
        if http
        else None
    )
    server = values.get("server")
    values["server"] = _build(ServerView, server) if server else None
    values["errors"] = tuple(values.get("errors") or ())
    values["uncertainty"] = uncertainty_from_dict(values.get("uncertainty"))
    values["client_load"] = client_load_from_dict(values.get("client_load"))
    values["over_time"] = slices_from_dicts(values.get("over_time"))
    values["adapters"] = tuple(
        AdapterLevel(
            str(a["name"]),
            int(a["completed"]),
            int(a["failed"]),
            a.get("output_throughput"),
            _latency(a.get("ttft")),
            _latency(a.get("tpot")),
        )
        for a in values.get("adapters") or ()
    )
    return _build(LevelResult, values)


def result_from_dict(data: dict[str, Any]) -> BenchResult:
    """Rebuild a BenchResult from `to_dict()` output (history lines, runner events)."""
    values = dict(data)
    values["context"] = _build(RunContext, values.get("context") or {})
    values["levels"] = tuple(level_from_dict(level) for level in values.get("levels") or ())
    values["client"] = dict(values.get("client") or {})
    return _build(BenchResult, values)


@dataclass(slots=True)
class RequestOutcome:
    """One request as the client saw it (times from time.perf_counter, in seconds).

    Mutable while the stream is read; sent between processes as a dict.
    """

    success: bool = False
    start_s: float = 0.0
    ttft_s: float = 0.0
    latency_s: float = 0.0  # E2EL: last `choices` chunk minus send time
    itl_s: list[float] = field(default_factory=list)
    output_tokens: int = 0  # from the final usage chunk; see `usage_seen`
    chunks: int = 0  # chunks with non-empty `choices`
    prompt_tokens: int = 0  # from usage, else the workload's target
    usage_seen: bool = False
    end_s: float = 0.0  # completion time (last byte or failure)
    scheduled_s: float = 0.0  # when it was due to be sent (0: unknown); start_s is when it was
    # HTTP phases (tui.bench.http_phases); None: not measured
    connect_s: float | None = None  # 0.0: a kept-alive connection reused
    send_s: float | None = None
    wait_s: float | None = None  # request sent to the response's headers
    error: str = ""
    model: str = ""  # the model it named (a LoRA adapter's name under `bench --lora`)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RequestOutcome:
        return _build(cls, data)
