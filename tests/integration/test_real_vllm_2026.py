"""vLLM's 2026 engine features as servedeck reads them, on the real vLLM 0.32.0 CPU build.

Each server runs what the CPU build supports for real: n-gram speculative decoding and a
LoRA adapter made at test time (zero weights, tests/support/vllm_tiny_lora.py) on one
server, two data-parallel engines, and prefix caching with a 32-token block (the session
server).
What servedeck shows (`servedeck status`'s report, the serving line's poller) must equal
what the engine itself counts, read here with the reference Prometheus parser.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.vllm_harness import (
    PREFIX_BLOCK_TOKENS,
    VllmServer,
    VllmServerFactory,
    end_servers,
    start_vllm_server,
)
from tests.support.vllm_install import VllmVenv
from tests.support.vllm_tiny_lora import write_zero_adapter
from tui.commands.status import status_report
from tui.core.config import ServiceConfig, demo_profile
from tui.deck import Deck
from tui.hosts.local import LocalHost
from tui.serving.metrics import MetricsPoller
from tui.serving.prefix_cache import PrefixCacheInputs, explain, explain_metrics
from tui.serving.spec_decode import spec_decode_line

pytestmark = pytest.mark.real_vllm

NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}
# Repeats give the n-gram proposer matches to draft from.
REPEATING = "the model serves tokens fast " * 6


async def engine_samples(server: VllmServer) -> list[tuple[str, dict[str, str], float]]:
    """Every sample of /metrics, read with the reference parser (not servedeck's)."""
    async with httpx.AsyncClient(timeout=30.0) as client:
        text = (await client.get(f"{server.base_url}/metrics")).text
    return [
        (sample.name, dict(sample.labels), sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    ]


def total(samples: list[tuple[str, dict[str, str], float]], name: str, **labels: str) -> float:
    return sum(
        value
        for sample, got, value in samples
        if sample == name and all(got.get(k) == v for k, v in labels.items())
    )


async def complete(
    server: VllmServer, prompt: str, model: str | None = None, max_tokens: int = 24
) -> dict[str, Any]:
    body = {
        "model": model or server.model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "ignore_eos": True,
    }
    async with httpx.AsyncClient(timeout=180.0) as client:
        response = await client.post(f"{server.base_url}/v1/completions", json=body)
    assert response.status_code == 200, response.text
    return response.json()


async def settle(server: VllmServer, finished: float) -> list[tuple[str, dict[str, str], float]]:
    """The samples once the engine has counted `finished` requests (stats land after replies)."""
    deadline = time.monotonic() + 60.0
    samples = await engine_samples(server)
    while total(samples, "vllm:request_success_total") < finished:
        assert time.monotonic() < deadline, "the engine did not count its requests"
        await asyncio.sleep(0.2)
        samples = await engine_samples(server)
    return samples


@pytest.fixture(scope="module")
def spec_lora_module_server(
    vllm_venv: VllmVenv, tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VllmServer]:
    """One server with n-gram speculative decoding and the test-time LoRA adapter.

    vLLM's CPU build runs both at once, and a start is ~23 s of CPU on two quiet cores
    (tests/perf/vllm_idle_cpu.py): the two tests share it (tiers.py runs them on one
    worker), each reading what its own requests moved.
    """
    workdir = tmp_path_factory.mktemp("vllm-spec-lora")
    config = json.loads((tiny_model_dir / "config.json").read_text())
    adapter = write_zero_adapter(workdir / "tiny-sql", config, rank=8)
    server = start_vllm_server(
        vllm_venv,
        tiny_model_dir,
        workdir / "server",
        (
            *("--speculative-config", json.dumps(NGRAM)),
            *("--enable-lora", "--max-loras", "2", "--max-lora-rank", "8"),
            *("--lora-modules", f"tiny-sql={adapter}"),
        ),
    )
    yield server
    survivors = end_servers([server])
    assert not survivors, f"processes survived cleanup: {survivors}"


@pytest.fixture
async def deck_of(tmp_path: Path) -> AsyncIterator[Any]:
    """A real Deck (LocalHost) on a running server: its URL and its log file, no unit."""
    decks: list[Deck] = []

    def make(server: VllmServer) -> Deck:
        base = demo_profile()
        profile = replace(
            base,
            name="real-vllm",
            host=replace(base.host, kind="local"),
            service=ServiceConfig(log_file=str(server.log_path), base_url=server.base_url),
        )
        decks.append(Deck(profile, LocalHost()))
        return decks[-1]

    yield make
    for deck in decks:
        await deck.close()


async def test_ngram_speculative_decoding_acceptance_is_the_engines(
    spec_lora_module_server: VllmServer, deck_of: Any
) -> None:
    server = spec_lora_module_server
    before = await engine_samples(server)
    for _ in range(3):
        await complete(server, REPEATING, max_tokens=32)
    samples = await settle(server, total(before, "vllm:request_success_total") + 3)
    moved = total(samples, "vllm:spec_decode_num_drafts_total") - total(
        before, "vllm:spec_decode_num_drafts_total"
    )
    assert moved > 0, "the n-gram proposer drafted nothing for these requests"
    report = await status_report(deck_of(server))
    spec = report["metrics"]["spec_decode"]
    drafts = total(samples, "vllm:spec_decode_num_drafts_total")
    draft_tokens = total(samples, "vllm:spec_decode_num_draft_tokens_total")
    accepted = total(samples, "vllm:spec_decode_num_accepted_tokens_total")
    assert drafts > 0 and draft_tokens == 3 * drafts, "the n-gram proposer drafted nothing"
    assert (spec["drafts"], spec["draft_tokens"], spec["accepted_tokens"]) == (
        drafts,
        draft_tokens,
        accepted,
    )
    assert spec["acceptance_rate"] == pytest.approx(accepted / draft_tokens)
    assert spec["mean_accepted_length"] == pytest.approx(1 + accepted / drafts)
    per_pos = [
        total(samples, "vllm:spec_decode_num_accepted_tokens_per_pos_total", position=str(p))
        / drafts
        for p in range(3)
    ]
    assert spec["per_position"] == pytest.approx(per_pos)
    print(f"\nn-gram: {spec_decode_line(deck_metrics(report))}")


def deck_metrics(report: dict[str, Any]) -> Any:
    """The report's spec-decode figures back as the dataclass the serving line draws."""
    from tui.serving.spec_decode import SpecDecode

    spec = dict(report["metrics"]["spec_decode"])
    spec["per_position"] = tuple(spec["per_position"])
    return SpecDecode(**spec)


async def test_a_lora_adapter_made_at_test_time_is_listed_as_loaded(
    spec_lora_module_server: VllmServer, deck_of: Any
) -> None:
    server = spec_lora_module_server
    before = await engine_samples(server)
    answer = await complete(server, "select the rows", model="tiny-sql")
    assert answer["model"] == "tiny-sql"
    await settle(server, total(before, "vllm:request_success_total") + 1)
    report = await status_report(deck_of(server))
    assert report["readiness"]["adapters"] == ["tiny-sql"]
    samples = await engine_samples(server)
    info = [labels for name, labels, _ in samples if name == "vllm:lora_requests_info"]
    line = report["lora"]
    if info:  # vLLM registers the gauge with LoRA on: its max_lora is the flag's
        assert info[-1]["max_lora"] == "2"
        assert line.startswith("LoRA 1/2 loaded: tiny-sql;"), line
    else:
        assert line.startswith("LoRA 1/n/a loaded: tiny-sql"), line
    print(f"\nLoRA: {line}")


async def test_two_data_parallel_engines_are_read_apart(
    vllm_server_factory: VllmServerFactory, deck_of: Any
) -> None:
    server = vllm_server_factory("--data-parallel-size", "2")
    await asyncio.gather(*(complete(server, f"request {i} to the pair") for i in range(8)))
    samples = await settle(server, 8)
    report = await status_report(deck_of(server))
    engines = {row["engine"]: row for row in report["engines"]}
    assert sorted(engines) == ["0", "1"]
    for rank, row in engines.items():
        assert row["kv_cache_usage_pct"] is not None
        assert row["running_reqs"] == total(samples, "vllm:num_requests_running", engine=rank)
    served = [total(samples, "vllm:request_success_total", engine=r) for r in ("0", "1")]
    assert sum(served) == 8
    print(f"\nDP=2: requests per engine {served}, warnings {report['engine_warnings']}")


async def test_prefix_hits_and_a_prefix_shorter_than_a_block_explained(
    real_vllm_server: VllmServer,
) -> None:
    server = real_vllm_server
    poller = MetricsPoller(server.base_url, timeout_s=30.0)
    stamp = f"{time.time_ns()}"  # nothing an earlier run cached
    long_prefix = f"{stamp} " + "cache block worker engine shard tensor " * 12  # > 2 blocks
    short_prefix = f"{stamp[::-1]} kv "  # well under one 32-token block
    async with httpx.AsyncClient(timeout=60.0) as client:
        await poller.poll(client)
        before = await engine_samples(server)
        for i in range(4):
            await complete(server, f"{long_prefix} question {i}", max_tokens=4)
        after = await settle(server, total(before, "vllm:request_success_total") + 4)
        shared = await poller.poll(client)
        for i in range(4):
            await complete(server, f"{short_prefix}{i} {'x' * (40 + i)} {i * 7919}", max_tokens=4)
        await settle(server, total(after, "vllm:request_success_total") + 4)
        short = await poller.poll(client)
        tokenized = await client.post(
            f"{server.base_url}/tokenize", json={"model": server.model, "prompt": short_prefix}
        )
    short_tokens = int(tokenized.json()["count"])
    assert short_tokens < PREFIX_BLOCK_TOKENS

    def rate(a: list, b: list) -> float:
        def moved(name: str) -> float:
            return total(b, name) - total(a, name)

        return moved("vllm:prefix_cache_hits_total") / moved("vllm:prefix_cache_queries_total")

    figures = shared.prefix_cache
    assert figures is not None and figures.enabled is True
    assert figures.block_size_tokens == PREFIX_BLOCK_TOKENS  # from vllm:cache_config_info
    assert figures.hit_rate == pytest.approx(rate(before, after)) and figures.hit_rate > 0.3
    assert explain_metrics(shared) is None  # hits: nothing to explain
    # The short prefix shares no whole block: 0 hits, and with the workload's prefix known
    # the reason is the block, not a guess.
    assert short.prefix_cache is not None and short.prefix_cache.hit_rate == 0.0
    verdict = explain(
        PrefixCacheInputs(
            hit_rate=short.prefix_cache.hit_rate,
            queries_tokens=short.prefix_cache.queries_tokens,
            enabled=short.prefix_cache.enabled,
            block_size_tokens=short.prefix_cache.block_size_tokens,
            intended_hit_rate=0.1,
            shared_prefix_tokens=short_tokens,
        )
    )
    assert verdict is not None and verdict.reason == "short-prefix", verdict
    assert f"shorter than one KV block ({PREFIX_BLOCK_TOKENS} tokens)" in verdict.text
    print(f"\nprefix: shared {100 * figures.hit_rate:.0f}% hits; short: {verdict.text}")
