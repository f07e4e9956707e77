"""Workload presets beyond random prompts; the same seed always gives byte-identical prompts.

`shared-prefix`: `prefix_groups` groups, each with its own system prompt of
`prefix_tokens` tokens, followed by a distinct question of `input_tokens`
tokens; requests go round-robin over the groups. With the prefix cache reset
before the run, every request but the first of its group can reuse its
group's system prompt, so the intended hit rate is
(N - G) * S / (N * (S + Q)) of the prompt tokens; the server's
`vllm:prefix_cache_hits / queries` over the run is the measured one (a server
caches whole blocks only, so it can fall a block short per request).

`dataset`: the first human turn of each conversation of a local ShareGPT
JSON file (`dataset_path`), in an order fixed by the seed; the output length
stays `output_tokens` (like vLLM's `--sharegpt-output-len`).

The prefix cache is reset where the engine offers it: vLLM's
`POST /reset_prefix_cache`, SGLang's `POST /flush_cache`.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import httpx

from tui.bench.prompt_fit import PromptPlan
from tui.bench.workload import BenchSpec, api_url, make_prompts, random_words

# chat: tui.bench.chat_loop; trace: tui.bench.trace
WORKLOADS = ("random", "shared-prefix", "chat", "dataset", "trace")
RESET_PATHS = ("/reset_prefix_cache", "/flush_cache")


def _scaled_words(spec: BenchSpec, words: int, tokens: int) -> int:
    """Words for `tokens` tokens at the calibrated words-per-token of the questions."""
    return max(1, round(tokens * words / max(spec.input_tokens, 1)))


def workload_prompts(
    spec: BenchSpec, words: int, count: int, seed: int, plan: PromptPlan | None = None
) -> list[str]:
    """`count` prompts of the spec's workload; `words` makes about `input_tokens` tokens,
    `plan` (the random workload) exactly."""
    if plan is not None and spec.workload == "random":
        rng = random.Random(seed)
        drawn = spec.drawn_lengths(count, seed)
        sizes = [size for size, _, _ in drawn] if drawn else [spec.input_tokens] * count
        return [plan.prompt(size, rng) for size in sizes]
    if spec.workload == "shared-prefix":
        return shared_prefix_prompts(spec, words, count, seed)
    if spec.workload == "dataset":
        return dataset_prompts(load_sharegpt(spec.dataset_path), count, seed)
    return make_prompts(words, count, seed)


class DatasetError(ValueError):
    """A dataset file that cannot be used; the message names the file."""


def load_sharegpt(path: str) -> list[str]:
    """The first human turn of every conversation of a local ShareGPT-format JSON file."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise DatasetError(f"{path}: cannot read ({error.strerror or error})") from None
    except ValueError as error:
        raise DatasetError(f"{path}: not JSON ({error})") from None
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON array of conversations")
    prompts = []
    for entry in data:
        turns = entry.get("conversations") if isinstance(entry, dict) else None
        if not isinstance(turns, list):
            continue
        first = next(
            (t for t in turns if isinstance(t, dict) and t.get("from") in ("human", "user")), None
        )
        if first is not None and isinstance(first.get("value"), str) and first["value"].strip():
            prompts.append(first["value"])
    if not prompts:
        raise DatasetError(f"{path}: no conversation with a human turn (ShareGPT format)")
    return prompts


def dataset_prompts(prompts: list[str], count: int, seed: int) -> list[str]:
    """`count` prompts drawn in a seeded order (cycled when the file has fewer)."""
    order = list(prompts)
    random.Random(seed).shuffle(order)
    return [order[i % len(order)] for i in range(count)]


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
