"""Workload presets: deterministic prompts, and the simulator's prefix cache hit as intended."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tui.bench.chat_loop import chat_questions
from tui.bench.driver import run_bench
from tui.bench.trace import load_trace, trace_prompts
from tui.bench.workload import BenchSpec
from tui.bench.workloads import (
    DatasetError,
    dataset_prompts,
    intended_prefix_hit_rate,
    load_sharegpt,
    workload_prompts,
)
from tui.cli import main
from tui.sim.box import SimBox, SimServerOptions
from tui.sim.prefix_cache import PrefixCache
from tui.sim.tokens import count_tokens


def _shared(base_url: str = "http://127.0.0.1:9", **overrides: object) -> BenchSpec:
    values: dict[str, object] = dict(
        base_url=base_url, workload="shared-prefix", prefix_groups=4, prefix_tokens=512,
        input_tokens=64, output_tokens=8, concurrency=(4,), num_requests=48,
        warmup_requests=0, read_timeout_s=60.0,
    )  # fmt: skip
    values.update(overrides)
    return BenchSpec(**values)  # type: ignore[arg-type]


def test_same_seed_same_bytes_and_groups_share_a_prefix() -> None:
    spec = _shared()
    first = workload_prompts(spec, 64, 12, seed=3)
    assert first == workload_prompts(spec, 64, 12, seed=3)
    assert first != workload_prompts(spec, 64, 12, seed=4)
    system = first[0].split("\n")[0]
    assert first[4].startswith(system + "\n") and not first[1].startswith(system)
    assert len({prompt.split("\n")[1] for prompt in first}) == 12  # every question differs


def test_intended_rate_counts_each_groups_first_request_as_a_miss() -> None:
    spec = _shared()
    assert intended_prefix_hit_rate(spec, 48) == pytest.approx(44 * 512 / (48 * 576))
    assert intended_prefix_hit_rate(spec, 4) == 0.0
    assert intended_prefix_hit_rate(BenchSpec(base_url=""), 10) is None


def test_prefix_cache_hits_whole_blocks_and_evicts_least_recent() -> None:
    cache = PrefixCache(capacity_blocks=4, block_tokens=4)
    assert cache.lookup_and_insert(list(range(10))) == 0
    assert cache.lookup_and_insert([*range(8), 99, 98]) == 8  # two shared blocks
    assert cache.lookup_and_insert(list(range(8))) == 4  # the last token is always computed
    cache.lookup_and_insert(list(range(100, 117)))  # four new blocks push the old ones out
    assert cache.lookup_and_insert(list(range(10))) == 0
    cache.reset()
    assert cache.lookup_and_insert(list(range(100, 117))) == 0


@pytest.fixture(scope="module")
def caching_box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimBox]:
    options = SimServerOptions(
        shards=4, prefix_caching=True, decode_step_s=0.004, prefill_tok_s=50_000.0
    )
    box = SimBox(tmp_path_factory.mktemp("prefix"), load_seconds=1.5, options=options)
    try:
        box.start()
        assert box.wait_until_active(timeout_s=90) == "active", box.log_path.read_text()[-3000:]
        yield box
    finally:
        box.close()


async def test_shared_prefix_hit_rate_within_five_points(caching_box: SimBox) -> None:
    for _ in range(2):  # the second run starts from a reset cache, so it measures the same
        result = await asyncio.wait_for(run_bench(_shared(caching_box.base_url)), 120)
        level = result.levels[0]
        assert (level.completed, level.failed) == (48, 0)
        notes = result.client
        assert notes["prefix_cache_reset"] == "/reset_prefix_cache"
        intended, measured = notes["intended_prefix_hit_rate"], notes["measured_prefix_hit_rate"]
        assert intended == pytest.approx(44 * 512 / (48 * 576), abs=0.02)
        assert abs(measured - intended) <= 0.05, (measured, intended)
        print(f"prefix hit rate: intended {intended:.3f}, measured {measured:.3f}")


async def test_random_prompts_do_not_hit(caching_box: SimBox) -> None:
    async with httpx.AsyncClient() as client:
        await client.post(f"{caching_box.base_url}/reset_prefix_cache")
    spec = _shared(caching_box.base_url, workload="random", num_requests=16)
    result = await asyncio.wait_for(run_bench(spec), 120)
    server = result.levels[0].server
    assert server is not None and server.prefix_queries > 0 and server.prefix_hits == 0
    assert "measured_prefix_hit_rate" not in result.client


def test_cli_workload_prints_measured_and_intended(
    caching_box: SimBox, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([
        "bench", "--url", caching_box.base_url, "--workload", "shared-prefix",
        "--prefix-groups", "2", "--prefix-tokens", "256", "--num-requests", "16",
        "--input-tokens", "32", "--output-tokens", "4",
    ])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    line = next(line for line in out.splitlines() if line.startswith("prefix cache hit rate"))
    assert "intended 77.8%" in line and "reset: /reset_prefix_cache" in line, line
    measured = float(line.split("measured ")[1].split("%")[0])
    assert abs(measured - 77.8) <= 5.0, line
    assert main(["bench", "--url", caching_box.base_url, "--prefix-groups", "0"]) == 2


def test_chat_questions_are_reproducible() -> None:
    talks = chat_questions(12, 3, 4, seed=9)
    assert talks == chat_questions(12, 3, 4, seed=9) and talks != chat_questions(12, 3, 4, 10)
    assert [len(turns) for turns in talks] == [4, 4, 4]
    assert talks[0][1].startswith("Question 2:")


async def test_chat_sends_the_real_answers_back_and_hits_its_history(caching_box: SimBox) -> None:
    spec = _shared(
        caching_box.base_url, workload="chat", chat_turns=4, input_tokens=48,
        output_tokens=24, num_requests=24, concurrency=(3,),
    )  # fmt: skip
    result = await asyncio.wait_for(run_bench(spec), 120)
    level = result.levels[0]
    assert (level.completed, level.failed) == (24, 0)
    async with httpx.AsyncClient() as client:
        records = (await client.get(f"{caching_box.base_url}/_sim/truth")).json()["requests"]
    prompts = sorted(int(r["prompt_tokens"]) for r in records[-24:])
    # Turn 4 carries three questions and three 24-token answers before its own question.
    assert prompts[-1] >= 4 * 48 + 3 * 24, prompts
    notes = result.client
    intended, measured = notes["intended_prefix_hit_rate"], notes["measured_prefix_hit_rate"]
    assert intended > 0.4 and abs(measured - intended) <= 0.05, (measured, intended)
    print(f"chat prefix hit rate: intended {intended:.3f}, measured {measured:.3f}")


async def test_shared_prefix_levels_share_the_groups(caching_box: SimBox) -> None:
    """Two levels of 24 requests reuse the same 4 system prompts: 4 misses in all."""
    spec = _shared(caching_box.base_url, concurrency=(2, 8), num_requests=24)
    result = await asyncio.wait_for(run_bench(spec), 120)
    assert [level.completed for level in result.levels] == [24, 24]
    intended, measured = (
        result.client["intended_prefix_hit_rate"],
        result.client["measured_prefix_hit_rate"],
    )
    assert intended == pytest.approx(44 * 512 / (48 * 576))
    assert abs(measured - intended) <= 0.05, (measured, intended)


def test_dataset_replays_sharegpt_prompts(
    caching_box: SimBox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = [f"How does {word} scale across eight GPUs?" * (i + 1) for i, word in
                 enumerate(["batching", "sharding", "routing"])]  # fmt: skip
    data = [
        {
            "id": str(i),
            "conversations": [{"from": "human", "value": q}, {"from": "gpt", "value": "a"}],
        }
        for i, q in enumerate(questions)
    ] + [{"id": "empty", "conversations": []}]
    path = tmp_path / "sharegpt.json"
    path.write_text(json.dumps(data))
    assert dataset_prompts(questions, 7, 1) == dataset_prompts(questions, 7, 1)
    code = main([
        "bench", "--url", caching_box.base_url, "--workload", "dataset", "--dataset", str(path),
        "--num-requests", "6", "--output-tokens", "4", "--json",
    ])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    (level,) = json.loads(capsys.readouterr().out)
    assert level["completed"] == 6
    expected = sorted(count_tokens(q) for q in questions)
    assert level["total_input_tokens"] == 2 * sum(expected)  # each prompt of the file twice


@pytest.mark.parametrize(
    ("content", "words"),
    [("not json", "not JSON"), ("{}", "expected a JSON array"), ("[]", "no conversation")],
)
def test_bad_dataset_is_one_line_naming_the_file(
    tmp_path: Path, content: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    argv = ["bench", "--url", "http://127.0.0.1:9", "--workload", "dataset", "--dataset", str(path)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert str(path) in err and words in err and "\n" not in err
    with pytest.raises(DatasetError):
        load_sharegpt(str(tmp_path / "missing.json"))


def _mooncake_trace(path: Path) -> None:
    rows = [
        {"timestamp": 50 * i, "input_length": 1100, "output_length": 8,
         "hash_ids": [1, 2, 30 + i] if i % 2 == 0 else [1, 5, 60 + i]}
        for i in range(12)
    ]  # fmt: skip
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n")


def test_trace_prompts_share_blocks_as_the_ids_say(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    _mooncake_trace(path)
    trace = load_trace(str(path))
    prompts, intent = trace_prompts(trace, 1.0, seed=1)
    assert prompts == trace_prompts(trace, 1.0, seed=1)[0]
    assert prompts[0][:2000] == prompts[2][:2000] and prompts[0][:1000] == prompts[1][:1000]
    assert prompts[0][:3000] != prompts[1][:3000]
    # Request 0: nothing reused; 1: block 1; every later one: two blocks.
    assert intent.reusable_tokens == 512 + 10 * 1024 and intent.prompt_tokens == 12 * 1100


async def test_trace_replay_hits_as_intended(caching_box: SimBox, tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    _mooncake_trace(path)
    spec = _shared(
        caching_box.base_url, workload="trace", trace_path=str(path), trace_speed=4.0,
        input_tokens=256, num_requests=0, concurrency=(8,),
    )  # fmt: skip
    result = await asyncio.wait_for(run_bench(spec), 120)
    (level,) = result.levels
    assert (level.completed, level.failed, level.total_output_tokens) == (12, 0, 96)
    intended, measured = (
        result.client["intended_prefix_hit_rate"],
        result.client["measured_prefix_hit_rate"],
    )
    assert intended == pytest.approx((512 + 10 * 1024) / (12 * 1100))
    assert abs(measured - intended) <= 0.05, (measured, intended)


def test_bad_trace_line_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 10, "output_length": 2}\n{"oops": 1}\n')
    argv = ["bench", "--url", "http://127.0.0.1:9", "--workload", "trace", "--trace", str(path)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert f"{path}:2: expected input_length" in err and "\n" not in err
