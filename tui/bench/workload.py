"""What a run sends: the spec, synthetic prompts of a token length, arrival times.

Prompt length: the random workload's prompts are made to the exact token count
(tui.bench.prompt_fit); the other workloads use the word ratio calibrated here
against /tokenize, or one token per word (common English words with a leading
space are single tokens in the usual BPE vocabularies). Every prompt is a
different random word sequence, so prefix caching cannot shortcut the prefill.
The server's usage.prompt_tokens is what the results count.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import httpx

from tui.bench.adapters import adapter_for
from tui.bench.lengths import Lengths, parse_dist, parse_mix
from tui.bench.model import RunContext
from tui.core.config import DEFAULT_PERCENTILES, BenchmarkPreset

_WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "for",
    "on",
    "that",
    "with",
    "as",
    "it",
    "at",
    "by",
    "from",
    "this",
    "be",
    "are",
    "was",
    "or",
    "an",
    "which",
    "have",
    "not",
    "had",
    "but",
    "all",
    "were",
    "can",
    "one",
    "there",
    "their",
    "has",
    "more",
    "when",
    "will",
    "other",
    "would",
    "time",
    "about",
    "many",
    "some",
    "these",
    "may",
    "like",
    "into",
    "than",
    "first",
    "been",
    "who",
    "over",
    "new",
    "only",
    "most",
    "also",
    "after",
    "made",
    "such",
    "where",
    "could",
    "through",
    "back",
    "very",
    "long",
    "just",
    "great",
    "well",
    "because",
    "system",
    "number",
    "water",
    "people",
    "state",
    "world",
    "day",
    "part",
    "place",
    "work",
    "year",
    "house",
    "point",
    "small",
    "large",
    "every",
    "under",
    "light",
    "night",
    "early",
    "city",
    "river",
    "market",
    "power",
    "field",
    "music",
    "order",
    "story",
]

PROMPT_BY_TOKENIZE = "approximate (/tokenize word ratio)"
PROMPT_BY_APPROXIMATION = "approximate: one token per common word (server has no /tokenize)"


def approximation(why: str) -> str:
    """The prompt method when /tokenize gave no count, saying why (one line)."""
    return PROMPT_BY_APPROXIMATION.replace("server has no /tokenize", why)


def vocabulary() -> tuple[str, ...]:
    """The common words prompts are made of, each with its leading space."""
    return tuple(" " + word for word in _WORDS)


@dataclass(frozen=True, slots=True)
class SloSpec:
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2el_ms: float | None = None
    attainment: float = 0.99  # share of requests that must meet them


@dataclass(frozen=True, slots=True)
class BenchSpec:
    """Everything the runner process needs; travels as JSON on its stdin."""

    base_url: str
    model: str = ""  # empty: the first id from /v1/models
    preset: str = "custom"
    endpoint: str = "completions"
    input_tokens: int = 1024
    output_tokens: int = 256
    concurrency: tuple[int, ...] = (1,)
    request_rates: tuple[float, ...] = ()  # empty: closed loop at each concurrency
    arrival: str = "poisson"
    burstiness: float = 1.0
    num_requests: int = 0  # 0: per level, max(8, 4 x concurrency)
    temperature: float = 0.0
    ignore_eos: bool = True
    warmup_requests: int = 1
    api_key_env: str | None = None  # the NAME of the variable; the key never travels
    read_timeout_s: float = 300.0  # idle deadline: no token for this long fails the request
    request_timeout_s: float = 1800.0  # total deadline of one request
    run_timeout_s: float = 4 * 3600.0  # wall deadline of the run: then it stops, partial
    connect_timeout_s: float = 10.0
    transport: str = "httpx-aiohttp"
    processes: int = 0  # 0: one per 256 concurrent streams, at most cpu_count - 1
    seed: int = 0
    progress_interval_s: float = 0.5
    scrape_metrics: bool = True
    workload: str = "random"  # tui.bench.workloads.WORKLOADS
    prefix_groups: int = 4  # shared-prefix: groups, each with its own system prompt
    prefix_tokens: int = 512  # shared-prefix: system prompt tokens
    chat_turns: int = 4  # chat: turns per conversation
    dataset_path: str = ""  # dataset: a local ShareGPT-format JSON file
    trace_path: str = ""  # trace: a JSONL request trace (tui.bench.trace)
    trace_speed: float = 1.0  # trace: 2.0 replays twice as fast
    tokenizer_path: str = ""  # a local tokenizer.json or its folder (exact prompt lengths)
    # Lengths per request (tui.bench.lengths; the random workload): checked by the CLI.
    input_dist: str = "fixed"
    input_stddev: float | None = None
    input_range: str | None = None
    output_dist: str = "fixed"
    output_stddev: float | None = None
    output_range: str | None = None
    mix: str = ""  # NAME:SHARE:IN/OUT,...
    slos: SloSpec = field(default_factory=SloSpec)
    context: RunContext = field(default_factory=RunContext)
    percentiles: tuple[float, ...] = DEFAULT_PERCENTILES  # vLLM's --metric-percentiles
    requests_path: str = ""  # --requests: every request to this .csv or .jsonl, level by level
    lora: str = ""  # --lora NAME[:W],...: each request names one (tui.bench.adapters)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BenchSpec:
        values = dict(data)
        values["slos"] = SloSpec(**(values.get("slos") or {}))
        values["context"] = RunContext(**(values.get("context") or {}))
        values["concurrency"] = tuple(int(c) for c in values.get("concurrency") or (1,))
        values["request_rates"] = tuple(float(r) for r in values.get("request_rates") or ())
        asked = values.get("percentiles") or DEFAULT_PERCENTILES
        values["percentiles"] = tuple(float(p) for p in asked)
        return cls(**values)

    def levels(self) -> list[tuple[int, float | None]]:
        """(max concurrency, request rate or None) for each level, in order."""
        if self.request_rates:
            cap = max(self.concurrency) if self.concurrency else 256
            return [(cap, rate) for rate in self.request_rates]
        return [(concurrency, None) for concurrency in self.concurrency]

    def lengths(self) -> Lengths:
        """The per-request lengths this spec asks for (LengthSpecError when malformed)."""
        return Lengths(
            self.input_tokens,
            self.output_tokens,
            parse_dist("input", self.input_dist, self.input_stddev, self.input_range),
            parse_dist("output", self.output_dist, self.output_stddev, self.output_range),
            parse_mix(self.mix),
        )

    def drawn_lengths(self, count: int, seed: int) -> list[tuple[int, int, str]] | None:
        """Each request's (input, output, class) for the random workload, or None when fixed."""
        lengths = self.lengths()
        if self.workload != "random" or not lengths.varies:
            return None
        return lengths.draw(count, seed)

    def requests_for(self, concurrency: int) -> int:
        return self.num_requests if self.num_requests > 0 else max(8, 4 * concurrency)


def spec_from_preset(preset: BenchmarkPreset, base_url: str, **overrides: Any) -> BenchSpec:
    """A spec from a profile's preset; keyword overrides win (CLI flags)."""
    spec = BenchSpec(
        base_url=base_url,
        preset=preset.name,
        endpoint=preset.endpoint,
        input_tokens=preset.input_tokens,
        output_tokens=preset.output_tokens,
        concurrency=tuple(preset.concurrency),
        request_rates=tuple(preset.request_rate),
        arrival=preset.arrival,
        burstiness=preset.burstiness,
        num_requests=preset.num_requests,
        temperature=preset.temperature,
        ignore_eos=preset.ignore_eos,
        warmup_requests=preset.warmup_requests,
    )
    return replace(spec, **{key: value for key, value in overrides.items() if value is not None})


def api_url(base_url: str, path: str) -> str:
    """`path` under the server root, whether base_url ends in /v1 or not."""
    root = base_url.rstrip("/")
    if root.endswith("/v1"):
        root = root[:-3]
    return root + path


def endpoint_path(endpoint: str) -> str:
    return "/v1/chat/completions" if endpoint == "chat" else "/v1/completions"


def random_words(count: int, rng: random.Random) -> str:
    return "".join(" " + rng.choice(_WORDS) for _ in range(max(count, 1)))


async def count_tokens(
    client: httpx.AsyncClient, spec: BenchSpec, text: str | list[dict[str, str]]
) -> int | str:
    """Tokens in `text` (a prompt, or chat messages: template included) by the server's
    /tokenize, or why it gave none (no /tokenize, an answer that is not a JSON object
    with a count)."""
    body: dict[str, Any] = {"model": spec.model}
    body["messages" if isinstance(text, list) else "prompt"] = text
    try:
        response = await client.post(api_url(spec.base_url, "/tokenize"), json=body)
    except httpx.HTTPError as error:
        return f"/tokenize failed: {type(error).__name__}"
    if response.status_code != 200:
        return "server has no /tokenize"
    try:
        data = response.json()
    except ValueError:
        return "/tokenize answered no JSON"
    if not isinstance(data, dict):
        return f"/tokenize answered a JSON {type(data).__name__}, not an object"
    count = data.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        return "/tokenize answered no token count"
    return count


async def words_for_tokens(client: httpx.AsyncClient, spec: BenchSpec) -> tuple[int, str]:
    """How many words make `input_tokens` tokens, and how that was decided."""
    target = spec.input_tokens
    words = target
    rng = random.Random(spec.seed ^ 0x5EED)
    for _ in range(4):
        counted = await count_tokens(client, spec, random_words(words, rng))
        if isinstance(counted, str):
            return target, approximation(counted)
        if counted == target:
            break
        words = max(1, round(words * target / counted))
    return words, PROMPT_BY_TOKENIZE


def make_prompts(words: int, count: int, seed: int) -> list[str]:
    """`count` distinct prompts of `words` random words each (no shared prefix)."""
    rng = random.Random(seed)
    return [random_words(words, rng) for _ in range(count)]


def request_payload(
    spec: BenchSpec, prompt: str, output_tokens: int | None = None, index: int = 0
) -> dict[str, Any]:
    """The OpenAI request body, with temperature and ignore_eos always explicit;
    `output_tokens` overrides the spec's (lengths drawn per request); request `index`
    of a level names its LoRA adapter as the model under `--lora`."""
    output = spec.output_tokens if output_tokens is None else output_tokens
    payload: dict[str, Any] = {
        "model": adapter_for(spec.lora, index) if spec.lora else spec.model,
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": spec.temperature,
        "ignore_eos": spec.ignore_eos,
    }
    if spec.endpoint == "chat":
        payload["messages"] = [{"role": "user", "content": prompt}]
        payload["max_completion_tokens"] = output
    else:
        payload["prompt"] = prompt
        payload["max_tokens"] = output
    return payload


def arrival_gaps_s(rate: float, burstiness: float, seed: int) -> Iterator[float]:
    """Gaps between request starts: gamma(shape=burstiness, mean 1/rate); 1.0 is Poisson."""
    if rate <= 0 or math.isinf(rate):
        while True:
            yield 0.0
    rng = random.Random(seed)
    theta = 1.0 / (rate * burstiness)
    while True:
        yield rng.gammavariate(burstiness, theta)
