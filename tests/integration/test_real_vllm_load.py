"""The load tracker on the live log of a real vLLM 0.32.0 CPU server (tiny Llama, 4 shards).

The log is the server's own stdout/stderr as the harness captured it, read the
way the console reads a profile's `service.log_file`: through Deck.log_lines.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

import httpx
import pytest

from tests.support.vllm_harness import VllmServer
from tui.core.config import Profile, ServiceConfig
from tui.deck import Deck
from tui.hosts.local import LocalHost
from tui.serving.load.tracker import LOADING_ORDER, LoadProgress, LoadTracker, Phase

pytestmark = pytest.mark.real_vllm

# The log's timestamps have whole seconds; the harness times the start to /health.
CLOCK_SLACK_S = 2.0


def log_deck(server: VllmServer) -> Deck:
    profile = Profile(
        name="real-vllm",
        service=ServiceConfig(base_url=server.base_url, log_file=str(server.log_path)),
    )
    return Deck(profile, LocalHost())


async def tracked_log(server: VllmServer) -> tuple[LoadTracker, int]:
    """The whole log so far through the deck's log source into a tracker."""
    deck = log_deck(server)
    tracker = LoadTracker()
    count = 0
    try:
        lines = deck.log_lines(initial_lines=100_000, follow=False)
        assert lines is not None
        async for line in lines:
            tracker.apply(line)
            count += 1
    finally:
        await deck.close()
    return tracker, count


def shard_total(model_dir: Path) -> int:
    index = json.loads((model_dir / "model.safetensors.index.json").read_text())
    return len(set(index["weight_map"].values()))


async def test_load_of_the_real_server_reads_phases_shards_and_ready(
    real_vllm_server: VllmServer, tiny_model_dir: Path
) -> None:
    server = real_vllm_server
    tracker, count = await tracked_log(server)
    assert count > 20, server.log_tail()
    progress = tracker.snapshot()
    assert progress.phase == Phase.SERVING, server.log_tail()
    assert progress.ready and progress.http_starting
    assert progress.failure_line is None
    # The tiny checkpoint's shards, as the tqdm bar counted them.
    shards = shard_total(tiny_model_dir)
    assert shards == 4
    assert (progress.shards_done, progress.shards_total, progress.shard_pct) == (4, 4, 100.0)
    assert progress.eta_s is None  # nothing left to wait for
    facts = progress.facts
    assert (facts.engine, facts.version, facts.model) == ("vllm", "0.32.0", server.model)
    assert facts.server_url == server.base_url
    assert facts.weights_load_s is not None and facts.weights_load_s >= 0
    assert facts.kv_cache_gib == 1.0  # VLLM_CPU_KVCACHE_SPACE=1
    assert facts.kv_cache_tokens and facts.kv_cache_tokens > 512
    assert facts.max_concurrency_tokens == 512  # --max-model-len
    assert facts.init_engine_s is not None
    _check_timeline(progress, server)


def _check_timeline(progress: LoadProgress, server: VllmServer) -> None:
    phases = [span.phase for span in progress.timeline]
    # --enforce-eager: no compile and no graph capture; the rest in load order.
    assert phases == ["starting", "weights", "kv_cache", "serving"], progress.timeline
    ranks = [LOADING_ORDER.index(Phase(phase)) for phase in phases]
    assert ranks == sorted(ranks)
    spans = progress.timeline
    for span, following in itertools.pairwise(spans):
        assert span.duration_s >= 0
        assert span.started_at_s + span.duration_s == pytest.approx(following.started_at_s)
    loading_s = spans[-1].started_at_s - spans[0].started_at_s
    # The log is read back after the start, in one chunk: a file's lines carry the time they
    # were read (the same for a chunk), so the spans here are as long as the reading took,
    # not the load. Following the log live gives the load's own times
    # (tests/integration/test_load_live_ui.py); this only bounds them.
    assert 0 <= loading_s <= server.start_s + CLOCK_SLACK_S
    assert progress.load_elapsed_s is not None and progress.load_elapsed_s >= loading_s


async def _keep_generating(server: VllmServer, stop: asyncio.Event) -> int:
    """Streams of 64 tokens, one after another, until told to stop; returns how many ran."""
    body = {
        "model": server.model,
        "prompt": "servedeck follows the log while the engine is busy",
        "max_tokens": 64,
        "ignore_eos": True,
        "temperature": 0.0,
    }
    done = 0
    async with httpx.AsyncClient(timeout=120.0) as client:
        while not stop.is_set():
            response = await client.post(f"{server.base_url}/v1/completions", json=body)
            assert response.status_code == 200, response.text
            done += 1
    return done


async def test_following_the_live_log_sees_the_engines_throughput_line(
    real_vllm_server: VllmServer,
) -> None:
    """vLLM logs `Engine 000: Avg prompt throughput ...` every 10 s while it works."""
    server = real_vllm_server
    deck = log_deck(server)
    tracker = LoadTracker()
    lines = deck.log_lines(initial_lines=100_000, follow=True)
    assert lines is not None
    stop = asyncio.Event()
    load = asyncio.create_task(_keep_generating(server, stop))

    async def follow_until_busy_stats() -> None:
        async for line in lines:
            tracker.apply(line)
            stats = tracker.snapshot().engine_stats
            if stats and stats.generation_tokens_per_s and stats.generation_tokens_per_s > 0:
                return

    try:
        await asyncio.wait_for(follow_until_busy_stats(), timeout=120.0)
    finally:
        stop.set()
        requests_done = await asyncio.wait_for(load, timeout=120.0)
        await lines.aclose()  # type: ignore[attr-defined]
        await deck.close()
    progress = tracker.snapshot()
    stats = progress.engine_stats
    assert stats is not None and requests_done >= 1
    assert stats.generation_tokens_per_s is not None and stats.generation_tokens_per_s > 0
    assert stats.kv_cache_usage_pct is not None and 0 <= stats.kv_cache_usage_pct <= 100
    assert stats.running_reqs >= 0 and stats.waiting_reqs >= 0
    # Runtime lines do not disturb the finished load.
    assert progress.phase == Phase.SERVING and progress.ready
