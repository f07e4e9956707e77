"""Workload presets beyond random prompts; the same seed always gives byte-identical prompts.

`shared-prefix`: `prefix_groups` groups, each with its own system prompt of
`prefix_tokens` tokens, followed by a distinct question of `input_tokens`
tokens; requests go round-robin over the groups. With the prefix cache reset
before the run, every request but the first of its group can reuse its
group's system prompt, so the intended hit rate is
(N - G) * S / (N * (S + Q)) of the prompt tokens; the server's
`vllm:prefix_cache_hits / queries` over the run is the measured one (a server
caches whole blocks only, so it can fall a block short per request).

The prefix cache is reset where the engine offers it: vLLM's
`POST /reset_prefix_cache`, SGLang's `POST /flush_cache`.
"""

from __future__ import annotations

import random

import httpx

from tui.bench.workload import BenchSpec, api_url, make_prompts, random_words

WORKLOADS = ("random", "shared-prefix", "chat")  # chat: tui.bench.chat_loop
RESET_PATHS = ("/reset_prefix_cache", "/flush_cache")


def _scaled_words(spec: BenchSpec, words: int, tokens: int) -> int:
    """Words for `tokens` tokens at the calibrated words-per-token of the questions."""
    return max(1, round(tokens * words / max(spec.input_tokens, 1)))


def workload_prompts(spec: BenchSpec, words: int, count: int, seed: int) -> list[str]:
    """`count` prompts of the spec's workload; `words` makes `input_tokens` tokens."""
    if spec.workload == "shared-prefix":
        return shared_prefix_prompts(spec, words, count, seed)
    return make_prompts(words, count, seed)


def shared_prefix_prompts(spec: BenchSpec, words: int, count: int, seed: int) -> list[str]:
    """Round-robin over the groups: group g's system prompt, then a fresh question.

    The system prompts depend on the run's seed only, so every level and every
    load-generator process of a run shares the same G prefixes.
    """
    groups = max(1, spec.prefix_groups)
    system_words = _scaled_words(spec, words, spec.prefix_tokens)
    systems_rng = random.Random(spec.seed ^ 0x5AFE)
    systems = [
        f"System {g}:" + random_words(system_words, systems_rng) + "\n" for g in range(groups)
    ]
    rng = random.Random(seed)
    return [systems[i % groups] + random_words(words, rng) for i in range(count)]


def intended_prefix_hit_rate(spec: BenchSpec, requests: int) -> float | None:
    """Share of prompt tokens the workload means to serve from the prefix cache (0..1)."""
    if spec.workload != "shared-prefix" or requests <= 0:
        return None if spec.workload != "shared-prefix" else 0.0
    groups = min(max(1, spec.prefix_groups), requests)
    s, q = spec.prefix_tokens, spec.input_tokens
    return (requests - groups) * s / (requests * (s + q))


async def reset_prefix_cache(client: httpx.AsyncClient, base_url: str) -> str:
    """Empty the server's prefix cache; the path that did it, or "" when none did."""
    for path in RESET_PATHS:
        try:
            response = await client.post(api_url(base_url, path))
        except httpx.HTTPError:
            return ""
        if response.status_code == 200:
            return path
    return ""
