"""servedeck's random workload next to `vllm bench serve --dataset-name random`, one real server.

Unlike test_real_vllm_bench_serve.py (vLLM's client handed servedeck's own prompts), each
client here makes its own random prompts of the asked length, as an operator would run
both: 64 input tokens, 32 output tokens with ignore_eos, closed loop at concurrency 1 and
4, alternating which client goes first in each of ROUNDS rounds.

What is asserted:
- exact workload: every servedeck request was charged exactly the asked 64 prompt tokens
  by the server (its usage per request, written by `--requests`) and 32 output tokens;
  the server's own prompt-token counter over servedeck's run agrees (warm-up included);
- per level, servedeck's median of rounds for output tok/s, request throughput and mean
  E2EL within 2 % of vLLM's, or within both clients' run-to-run spread when that is wider
  (tests/support/vllm_bench_serve.agreement: two shared cores move the server's own speed
  by about 8 % from run to run). Median TTFT and TPOT are printed with the same band.

vLLM's own prompts are printed as the server charged them (its counter over its run,
warm-up included): vLLM's random dataset re-encodes decoded token ids, and what it
reports as input tokens is its own count, not the server's.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

import httpx
import pytest

from tests.support.vllm_affinity import frontend_apart
from tests.support.vllm_bench_serve import (
    Agreement,
    Figures,
    agreement,
    client_env,
    servedeck_figures,
    side_spec,
    vllm_figures,
)
from tests.support.vllm_harness import VllmServer
from tests.support.vllm_install import VllmVenv
from tui.bench.driver import run_bench
from tui.bench.model import OUTPUT_TOKENS_FROM_USAGE

pytestmark = [pytest.mark.real_vllm, pytest.mark.quiet]

INPUT_TOKENS = 64
OUTPUT_TOKENS = 32
LEVELS = (1, 4)
PROMPTS = 32  # per level and client
ROUNDS = 2
ASSERTED = ("output_tok_s", "request_throughput", "mean_e2el_ms")
PRINTED = ("median_ttft_ms", "median_tpot_ms")


@dataclass(frozen=True)
class Charged:
    """What the server counted over one client's run: prompt tokens and requests."""

    prompt_tokens: float
    requests: float

    @property
    def per_request(self) -> float:
        return self.prompt_tokens / self.requests if self.requests else float("nan")


async def server_counters(base_url: str) -> Charged:
    """vLLM's prompt-token and finished-request totals now (its /metrics)."""
    async with httpx.AsyncClient(timeout=10.0) as client:
        text = (await client.get(f"{base_url}/metrics")).text
    prompt = requests = 0.0
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name == "vllm:prompt_tokens_total":
            prompt += float(line.rsplit(" ", 1)[1])
        elif name == "vllm:request_success_total":
            requests += float(line.rsplit(" ", 1)[1])
    return Charged(prompt, requests)


def charged_between(before: Charged, after: Charged) -> Charged:
    return Charged(after.prompt_tokens - before.prompt_tokens, after.requests - before.requests)


def vllm_random_command(
    vllm: VllmVenv, tokenizer: Path, server: VllmServer, concurrency: int, result: Path
) -> list[str]:
    return [
        str(vllm.vllm_bin), "bench", "serve", "--backend", "vllm",
        "--base-url", server.base_url, "--model", server.model, "--tokenizer", str(tokenizer),
        "--dataset-name", "random", "--random-input-len", str(INPUT_TOKENS),
        "--random-output-len", str(OUTPUT_TOKENS), "--random-range-ratio", "0",
        "--num-prompts", str(PROMPTS), "--max-concurrency", str(concurrency),
        "--request-rate", "inf", "--ignore-eos", "--num-warmups", "1", "--seed", "7",
        "--percentile-metrics", "ttft,tpot,itl,e2el", "--temperature", "0", "--disable-tqdm",
        "--save-result", "--result-dir", str(result.parent), "--result-filename", result.name,
    ]  # fmt: skip


async def vllm_level(
    vllm: VllmVenv, tokenizer: Path, server: VllmServer, concurrency: int, result: Path
) -> tuple[Figures, Charged]:
    before = await server_counters(server.base_url)
    log = result.with_suffix(".log")
    with log.open("w") as out:
        status = await asyncio.to_thread(
            subprocess.run,
            vllm_random_command(vllm, tokenizer, server, concurrency, result),
            stdout=out, stderr=subprocess.STDOUT, env=client_env(), timeout=600,
        )  # fmt: skip
    assert status.returncode == 0, log.read_text(errors="replace")[-3000:]
    charged = charged_between(before, await server_counters(server.base_url))
    return vllm_figures(json.loads(result.read_text())), charged


async def servedeck_levels(
    server: VllmServer, requests: Path, seed: int
) -> tuple[list[Figures], Charged, list[dict[str, object]]]:
    spec = side_spec(
        server.base_url, server.model, input_tokens=INPUT_TOKENS, output_tokens=OUTPUT_TOKENS,
        concurrency=LEVELS[0], num_prompts=PROMPTS, seed=seed,
    )  # fmt: skip
    spec = replace(spec, concurrency=LEVELS, requests_path=str(requests))
    before = await server_counters(server.base_url)
    result = await asyncio.wait_for(run_bench(spec), timeout=600.0)
    charged = charged_between(before, await server_counters(server.base_url))
    for level in result.levels:
        assert level.completed == PROMPTS and not level.failed, level.errors[:2]
        assert level.output_tokens_source == OUTPUT_TOKENS_FROM_USAGE  # counts are the server's
    rows = [json.loads(line) for line in requests.read_text().splitlines() if line.strip()]
    print(f"servedeck prompts: {result.client.get('prompt_method')}")
    return [servedeck_figures(level) for level in result.levels], charged, rows


def line(run: Figures) -> str:
    return (
        f"{run.client:<17} {run.output_tok_s:8.1f} tok/s {run.request_throughput:6.2f} req/s"
        f"  TTFT p50 {run.median_ttft_ms:7.2f}  TPOT p50 {run.median_tpot_ms:6.3f}"
        f"  E2EL mean {run.mean_e2el_ms:7.2f} ms  in {run.input_tokens} out {run.output_tokens}"
    )


def show(level: int, result: Agreement, asserted: bool) -> str:
    return (
        f"c={level} {result.name:<19} servedeck {result.ours:9.3f}  vllm {result.theirs:9.3f}"
        f"  ratio {result.ratio:6.3f}  band +-{result.tolerance:.3f}"
        f" ({100 * result.tolerance / max(abs(result.theirs), 1e-9):.1f} %)"
        f"  {'asserted' if asserted else 'printed'} {'ok' if result.ok else 'OUTSIDE'}"
    )


async def test_random_workload_exact_and_agrees_with_vllm_bench_serve(
    real_vllm_server: VllmServer, vllm_venv: VllmVenv, tiny_model_dir: Path, tmp_path: Path
) -> None:
    server = real_vllm_server
    theirs: dict[int, list[Figures]] = {level: [] for level in LEVELS}
    ours: dict[int, list[Figures]] = {level: [] for level in LEVELS}
    rows: list[dict[str, object]] = []
    charged_ours: list[Charged] = []
    charged_theirs: list[Charged] = []

    async def vllm_round(index: int) -> None:
        for level in LEVELS:
            result = tmp_path / f"vllm-{index}-c{level}.json"
            run, charged = await vllm_level(vllm_venv, tiny_model_dir, server, level, result)
            theirs[level].append(run)
            charged_theirs.append(charged)

    async def servedeck_round(index: int) -> None:
        requests = tmp_path / f"servedeck-{index}.jsonl"
        runs, charged, got = await servedeck_levels(server, requests, seed=100 + index)
        for level, run in zip(LEVELS, runs, strict=True):
            ours[level].append(run)
        charged_ours.append(charged)
        rows.extend(got)

    with frontend_apart(server.pid) as affinity:
        print(f"\naffinity: {affinity}")
        for index in range(ROUNDS):
            first, second = (vllm_round, servedeck_round)[:: 1 if index % 2 == 0 else -1]
            await first(index)
            await second(index)
            for level in LEVELS:
                print(f"round {index} c={level}\n  {line(theirs[level][-1])}")
                print(f"  {line(ours[level][-1])}")

    prompt_counts = sorted({row["prompt_tokens"] for row in rows})  # type: ignore[type-var]
    print(f"servedeck: {len(rows)} requests, prompt tokens charged {prompt_counts}")
    for charged in charged_ours:
        print(f"server counted for servedeck: {charged.per_request:.2f} prompt tokens/request")
    for charged in charged_theirs:
        print(f"server counted for vLLM:      {charged.per_request:.2f} prompt tokens/request")
    assert len(rows) == ROUNDS * len(LEVELS) * PROMPTS
    assert all(row["success"] for row in rows)
    assert prompt_counts == [INPUT_TOKENS], "a request was charged other than the asked length"
    assert {row["output_tokens"] for row in rows} == {OUTPUT_TOKENS}
    # The server's own counter agrees (measured requests and warm-ups alike).
    assert all(c.per_request == INPUT_TOKENS for c in charged_ours), charged_ours

    failures: list[Agreement] = []
    for level in LEVELS:
        for name in (*ASSERTED, *PRINTED):
            result = agreement(name, ours[level], theirs[level])
            print(show(level, result, name in ASSERTED))
            if name in ASSERTED and not result.ok:
                failures.append(result)
    assert not failures, failures
