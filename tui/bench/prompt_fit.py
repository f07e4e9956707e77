"""Prompts of an exact token count: calibrate which words are one token each, then count.

Why words and not token ids: a prompt must be text for the chat endpoint and for
servers that take no ids, and every prompt must differ so prefix caching cannot
shortcut the prefill. The calibration finds the words of the list that cost one
token each and add up (a word after any other costs the same); a prompt is then an
anchor word plus exactly `tokens - base` of them, where `base` is what the anchor
costs alone (BOS and, for chat, the template). Two fitted prompts are counted
again before the plan is trusted; a tokenizer where words do not add up falls back
to the word ratio, labelled approximate.

The count comes, in this order, from the model's own tokenizer on this machine
(the `tokenizers` package, when installed, and a tokenizer.json at `--tokenizer`
or the served model's path; completions only: it knows no chat template), the
server's /tokenize, or the prompt_tokens the server charges a one-token probe.
"""

from __future__ import annotations

import asyncio
import importlib
import random
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import httpx

from tui.bench.client import stream_request
from tui.bench.model import RequestOutcome
from tui.bench.workload import (
    BenchSpec,
    api_url,
    count_tokens,
    endpoint_path,
    random_words,
    request_payload,
    vocabulary,
)

EXACT_TOKENIZER = "exact (tokenizer)"
CALIBRATED_TOKENIZE = "calibrated (/tokenize)"
CALIBRATED_USAGE = "calibrated (usage)"
APPROXIMATE = "approximate"

ANCHOR = " the"  # four characters: additive after it under 4-character tokenizers too
REPEATS = 4  # a word counts as one additive token when REPEATS of it cost REPEATS
MIN_WORDS = 8  # fewer one-token words than this: prompts too alike to trust
# Tried when too few of the common words are one token (a small vocabulary, as of a
# test model's): a digit or a letter after a space is one token in most vocabularies.
SHORT_PIECES = tuple(" " + c for c in "0123456789abcdefghijklmnopqrstuvwxyz")
PROBE_PARALLEL = 16

Counter = Callable[[str], Awaitable[int | str]]


@dataclass(frozen=True, slots=True)
class PromptPlan:
    """How this run makes a prompt of a token count, and how sure that count is."""

    method: str  # one of the four constants above
    note: str = ""  # why approximate (one line), else ""
    anchor: str = ""
    base_tokens: int = 0  # the anchor alone, with BOS and any chat template
    words: tuple[str, ...] = ()  # one additive token each
    words_per_token: float = 1.0  # the approximate route's ratio

    @property
    def label(self) -> str:
        """`prompt tokens: ...` as the report states it."""
        return f"{self.method} ({self.note})" if self.note else self.method

    @property
    def exact(self) -> bool:
        return self.method != APPROXIMATE

    def prompt(self, tokens: int, rng: random.Random) -> str:
        """A fresh prompt of `tokens` tokens (exact unless the plan is approximate)."""
        if not self.exact:
            return random_words(max(1, round(tokens * self.words_per_token)), rng)
        count = max(0, tokens - self.base_tokens)
        words = self.words
        return self.anchor + "".join([words[int(rng.random() * len(words))] for _ in range(count)])

    def words_for(self, tokens: int) -> int:
        """Words of the common list for about `tokens` tokens (the other workloads)."""
        return max(1, round(tokens * self.words_per_token))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PromptPlan:
        values = dict(data)
        values["words"] = tuple(values.get("words") or ())
        return cls(**values)


def approximate(note: str, words_per_token: float = 1.0) -> PromptPlan:
    return PromptPlan(APPROXIMATE, note=note, words_per_token=words_per_token)


@dataclass(frozen=True, slots=True)
class Miss:
    """Why a counter gave no exact plan, and the words per token it measured, if any."""

    reason: str
    words_per_token: float | None = None


async def _one_token_words(count: Counter, base: int, words: tuple[str, ...]) -> list[str]:
    """The words that cost one token each, REPEATS times in a row after the anchor."""
    gate = asyncio.Semaphore(PROBE_PARALLEL)

    async def one_token(word: str) -> bool:
        async with gate:
            counted = await count(ANCHOR + word * REPEATS)
        return not isinstance(counted, str) and counted - base == REPEATS

    flags = await asyncio.gather(*(one_token(word) for word in words))
    return [word for word, flag in zip(words, flags, strict=True) if flag]


async def calibrate(count: Counter, method: str, target: int, seed: int) -> PromptPlan | Miss:
    """The plan from a token counter, or why the words do not add up (one line)."""
    base = await count(ANCHOR)
    if isinstance(base, str):
        return Miss(base)
    words = vocabulary()
    whole = await count(ANCHOR + "".join(words))
    if isinstance(whole, str):
        return Miss(whole)
    ratio = len(words) / (whole - base) if whole > base else None
    if whole - base == len(words):
        single = list(words)
    else:
        single = await _one_token_words(count, base, words)
    if len(single) < MIN_WORDS:
        pieces = await _one_token_words(count, base, SHORT_PIECES)
        if len(single) + len(pieces) < MIN_WORDS:
            return Miss(
                f"only {len(single)} of {len(words)} words and {len(pieces)} of"
                f" {len(SHORT_PIECES)} digits and letters are one token each",
                ratio,
            )
        single += pieces
    plan = PromptPlan(method, anchor=ANCHOR, base_tokens=base, words=tuple(single))
    rng = random.Random(seed ^ 0xF17)
    for tokens in (target, max(target // 2, base + 1)):
        counted = await count(plan.prompt(tokens, rng))
        if counted != tokens:
            return Miss(f"a fitted prompt of {tokens} tokens counted {counted}", ratio)
    return replace(plan, words_per_token=1.0)


def local_tokenizer(spec: BenchSpec) -> tuple[Callable[[str], int], str] | str:
    """The model's tokenizer on this machine as a counter, or why there is none."""
    if spec.endpoint == "chat":
        return "a local tokenizer knows no chat template"
    places = [spec.tokenizer_path] if spec.tokenizer_path else []
    places += [spec.model] if spec.model and not spec.tokenizer_path else []
    files = [Path(place) / "tokenizer.json" for place in places] + [
        Path(place) for place in places if place.endswith(".json")
    ]
    found = next((f for f in files if f.is_file()), None)
    if found is None:
        return (
            "no tokenizer.json at the model's path"
            if not spec.tokenizer_path
            else (f"{spec.tokenizer_path}: no tokenizer.json")
        )
    try:
        module = importlib.import_module("tokenizers")
    except ImportError:
        return "the tokenizers package is not installed"
    try:
        tokenizer = module.Tokenizer.from_file(str(found))
    except Exception as error:  # the library raises its own exception types
        return f"{found}: {type(error).__name__}: {error}"
    return (lambda text: len(tokenizer.encode(text).ids)), str(found)


async def plan_prompts(client: httpx.AsyncClient, spec: BenchSpec) -> PromptPlan:
    """The best plan this server and machine allow, trying each source of counts in turn."""
    reasons: list[str] = []
    ratios: list[float] = []  # words per token as each counter measured it

    def missed(prefix: str, miss: Miss) -> None:
        reasons.append(prefix + miss.reason)
        if miss.words_per_token is not None:
            ratios.append(miss.words_per_token)

    local = local_tokenizer(spec)
    if isinstance(local, tuple):
        counter = local[0]

        async def by_tokenizer(text: str) -> int | str:
            return counter(text)

        plan = await calibrate(by_tokenizer, EXACT_TOKENIZER, spec.input_tokens, spec.seed)
        if isinstance(plan, PromptPlan):
            return plan
        missed("tokenizer: ", plan)
    elif spec.tokenizer_path:
        reasons.append(local)

    async def by_tokenize(text: str) -> int | str:
        return await count_tokens(client, spec, _as_chat(spec, text))

    plan = await calibrate(by_tokenize, CALIBRATED_TOKENIZE, spec.input_tokens, spec.seed)
    if isinstance(plan, PromptPlan):
        return plan
    missed("", plan)
    plan = await calibrate(_usage_counter(client, spec), CALIBRATED_USAGE, spec.input_tokens, 0)
    if isinstance(plan, PromptPlan):
        return plan
    missed("usage: ", plan)
    # Approximate, but at the measured ratio: one word per token would be far off where
    # a word costs several tokens (3.7 times the asked length was sent so).
    return approximate("; ".join(reasons), ratios[0] if ratios else 1.0)


def _as_chat(spec: BenchSpec, text: str) -> str | list[dict[str, str]]:
    return [{"role": "user", "content": text}] if spec.endpoint == "chat" else text


def _usage_counter(client: httpx.AsyncClient, spec: BenchSpec) -> Counter:
    """Prompt tokens as the server charges a one-token request (its usage)."""
    url = api_url(spec.base_url, endpoint_path(spec.endpoint))
    probe_spec = replace(spec, output_tokens=1)

    async def count(text: str) -> int | str:
        outcome = await stream_request(
            client, url, request_payload(probe_spec, text), RequestOutcome(),
            read_timeout_s=spec.read_timeout_s, total_timeout_s=spec.request_timeout_s,
        )  # fmt: skip
        if not outcome.success:
            return f"probe request failed: {outcome.error}"
        if not outcome.usage_seen or outcome.prompt_tokens <= 0:
            return "the server reports no usage"
        return outcome.prompt_tokens

    return count
