"""Bench: speculative decoding's acceptance per level, from /metrics deltas over each level.

A real SimBox drafting 3 tokens a step with each position accepted at 0.8 (tui.sim.spec_decode
writes vLLM's spec_decode counters); the real `servedeck bench` CLI runs two levels. Each
level's acceptance is its own counter deltas (their sum is the engine's own delta over the
whole run), the JSON carries them, and the text report explains ITL per chunk and per token.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.sim_fixtures import module_sim_box
from tui.bench.server_view import parse_counters
from tui.sim.box import SimBox, SimServerOptions
from tui.sim.spec import SERVED_MODEL_NAME

REPO = Path(__file__).resolve().parents[2]
OPTIONS = SimServerOptions(
    shards=2,
    decode_step_s=0.01,
    log_interval_s=1.0,
    extra_args=("--num-speculative-tokens", "3", "--spec-acceptance", "0.8"),
)
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"


spec_box = module_sim_box("spec", OPTIONS, seed=5, load_seconds=2.0)


def _bench(box: SimBox, *extra: str) -> str:
    argv = [sys.executable, "-m", "tui", "bench", "--url", box.base_url]
    argv += ["--model", SERVED_MODEL_NAME, "--concurrency", "1", "4", "--num-requests", "8"]
    argv += ["--input-tokens", "64", "--output-tokens", "48", *extra]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _counters(box: SimBox) -> dict[str, float]:
    return parse_counters(httpx.get(f"{box.base_url}/metrics", timeout=10).text)


def test_each_level_has_its_own_acceptance_and_the_sum_is_the_engines(spec_box: SimBox) -> None:
    before = _counters(spec_box)
    out = json.loads(_bench(spec_box, "--json"))
    after = _counters(spec_box)
    servers = [level["servedeck"]["server"] for level in out]  # one vLLM-style object a level
    assert len(servers) == 2
    for server in servers:
        assert 0.5 < server["spec_acceptance_rate"] <= 1.0  # drafted at 0.8 a position
        assert 1.0 < server["tokens_per_chunk"] <= 4.0  # 1 + up to 3 accepted
        rate = server["spec_accepted_tokens"] / server["spec_draft_tokens"]
        assert server["spec_acceptance_rate"] == pytest.approx(rate)
    # The levels' deltas and the warm-up request's (not a level's) make the engine's own.
    for name, key in ((ACCEPTED, "spec_accepted_tokens"), (DRAFT_TOKENS, "spec_draft_tokens")):
        in_levels = sum(server[key] for server in servers)
        whole = after[name] - before[name]
        assert 0 < whole - in_levels <= 3 * 48  # one warm-up request: at most 3 per token


def test_the_report_explains_itl_per_chunk(spec_box: SimBox) -> None:
    text = _bench(spec_box)
    spec = [line for line in text.splitlines() if line.strip().startswith("spec ")]
    assert len(spec) == 2, text  # one per level
    assert all("tokens per chunk" in line for line in spec)
    assert text.count("ITL is per chunk") == 2, text
