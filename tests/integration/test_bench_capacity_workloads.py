"""Chat and trace workloads inside the capacity search, against a real simulator process.

The simulator runs on a fast clock with its prefix cache on; what it served is
read back from `/_sim/truth` (every request's prompt and output tokens), so the
checks are on what reached the server, not on what the client meant to send.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from tui.bench.capacity.driver import CapacityProcess
from tui.bench.capacity.search import CapacitySlo
from tui.bench.capacity.spec import CapacitySpec
from tui.bench.capacity.workloads import cycled_trace, trace_rate
from tui.bench.trace import TraceRequest
from tui.bench.workload import BenchSpec
from tui.cli import main
from tui.commands.capacity_cmd import format_capacity
from tui.sim.box import SimBox, SimServerOptions

# ITL p99 relaxed: on a loaded two-core runner it measures scheduling jitter (test_bench_capacity).
SLO = CapacitySlo(itl_p99_ms=250)


@pytest.fixture(scope="module")
def caching_fast_box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimBox]:
    options = SimServerOptions(shards=4, time_scale=2.0, log_interval_s=1.0, prefix_caching=True)
    box = SimBox(tmp_path_factory.mktemp("capacity-wl"), load_seconds=1.5, options=options)
    try:
        box.start()
        assert box.wait_until_active(timeout_s=90) == "active", box.log_path.read_text()[-3000:]
        yield box
    finally:
        box.close()


async def search(spec: CapacitySpec) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The search's result and the simulator's record of every request it served then."""
    async with httpx.AsyncClient(timeout=30) as client:
        url = f"{spec.bench.base_url}/_sim/truth"
        seen = len((await client.get(url)).json()["requests"])
        process = CapacityProcess(spec)
        events = [event async for event in process.events()]
        records = (await client.get(url)).json()["requests"][seen:]
    assert process.result is not None, events[-3:]
    return process.result, records


def write_trace(path: Path, rows: int = 16) -> Path:
    """Mooncake-style: two prefix families of one 512-token block; outputs of 5 or 11 tokens."""
    lines = [
        {"timestamp": 100 * i, "input_length": 600, "output_length": 5 if i % 2 else 11,
         "hash_ids": [7 if i % 2 else 9]}
        for i in range(rows)
    ]  # fmt: skip
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


async def test_chat_users_send_their_growing_history(caching_fast_box: SimBox) -> None:
    bench = BenchSpec(
        base_url=caching_fast_box.base_url, workload="chat", chat_turns=3, input_tokens=40,
        output_tokens=12,
    )  # fmt: skip
    spec = CapacitySpec(
        bench,
        slo=SLO,
        rounds=5,
        min_requests=1,
        max_levels=1,
        max_level_requests=0,  # what the workload sends, not the verdict: never run again
    )
    result, records = await search(spec)
    (level,) = result["levels"]
    assert result["workload"]["name"] == "chat" and "truth" not in result
    assert (level["concurrency"], level["completed"], level["failed"]) == (1, 6, 0)
    # One user, two conversations of three turns: each turn carries the earlier
    # questions and the real answers, and a new conversation starts over.
    prompts = [int(r["prompt_tokens"]) for r in sorted(records, key=lambda r: r["number"])]
    assert len(prompts) == 6, prompts
    assert prompts[0] < prompts[1] < prompts[2] and prompts[3] < prompts[4] < prompts[5]
    assert prompts[3] < prompts[2] and prompts[1] >= prompts[0] + 40 + 12 - 8, prompts


async def test_chat_search_reports_intended_and_measured_reuse(caching_fast_box: SimBox) -> None:
    bench = BenchSpec(
        base_url=caching_fast_box.base_url, workload="chat", chat_turns=4, input_tokens=64,
        output_tokens=24,
    )  # fmt: skip
    spec = CapacitySpec(
        bench,
        slo=SLO,
        rounds=3,
        max_levels=3,
        max_concurrency=4,
        max_level_requests=0,  # what the workload sends, not the verdict: never run again
    )
    result, _ = await search(spec)
    levels = result["levels"]
    assert 1 <= len(levels) <= 3 and result["answer"]
    for level in levels:
        assert level["failed"] == 0 and level["measured"] > 0
        intended = level["intended_prefix_hit_rate_pct"]
        measured = level["server"]["prefix_hit_rate_pct"]
        assert intended is not None and intended > 40, level
        # Turns 2-4 reuse the history; the server's steady window sees the same turns.
        assert measured is not None and abs(measured - intended) <= 10, (measured, intended)


async def test_trace_users_send_the_traces_requests(
    caching_fast_box: SimBox, tmp_path: Path
) -> None:
    path = write_trace(tmp_path / "trace.jsonl")
    bench = BenchSpec(
        base_url=caching_fast_box.base_url, workload="trace", trace_path=str(path),
        input_tokens=600, output_tokens=11,
    )  # fmt: skip
    spec = CapacitySpec(
        bench,
        slo=SLO,
        rounds=2,
        min_requests=4,
        max_levels=2,
        max_level_requests=0,  # what the workload sends, not the verdict: never run again
    )
    result, records = await search(spec)
    levels = result["levels"]
    assert result["workload"]["name"] == "trace" and "truth" not in result
    assert levels[0]["concurrency"] == 1 and len(levels) <= 2
    assert all(level["failed"] == 0 and level["measured"] > 0 for level in levels)
    # Every request had the trace's output length, and the trace's lengths of prompt.
    assert {int(r["output_tokens"]) for r in records} == {5, 11}
    assert all(550 <= int(r["prompt_tokens"]) <= 700 for r in records), records[:3]
    for level in levels:
        # Two families of one block each: all but the first of each family reuse 512 tokens.
        assert level["intended_prefix_hit_rate_pct"] > 40
        assert level["server"]["prefix_hit_rate_pct"] is not None
    text = format_capacity(result)
    assert "prefix-cache hit rate, intended / measured: 1: " in text, text


async def test_trace_search_by_rate_replays_its_arrivals(
    caching_fast_box: SimBox, tmp_path: Path
) -> None:
    path = write_trace(tmp_path / "trace.jsonl")
    bench = BenchSpec(
        base_url=caching_fast_box.base_url, workload="trace", trace_path=str(path),
        input_tokens=600, output_tokens=11,
    )  # fmt: skip
    spec = CapacitySpec(
        bench, slo=SLO, by="rate", rate_step=1.0, rate_level_s=8.0, max_levels=2, min_requests=4
    )
    result, records = await search(spec)
    levels = result["levels"]
    assert result["by"] == "rate" and levels
    assert all(level["request_rate"] == level["search_step"] * 1.0 for level in levels)
    assert all(level["completed"] > 0 and level["failed"] == 0 for level in levels)
    assert {int(r["output_tokens"]) for r in records} == {5, 11}


def test_cycled_trace_keeps_its_pace_and_its_own_prefixes() -> None:
    trace = [TraceRequest(0.5 * i, 600, 8, (1, 2)) for i in range(4)]
    cycled = cycled_trace(trace, 10)
    assert len(cycled) == 10 and trace_rate(trace) == pytest.approx(2.0)
    assert [r.at_s for r in cycled[3:6]] == [1.5, 2.0, 2.5]  # one gap between copies
    # Within a copy requests share prefixes as the trace does; copies share none.
    assert cycled[4].blocks == cycled[5].blocks != trace[0].blocks
    assert cycled[8].blocks not in (trace[0].blocks, cycled[4].blocks)
    assert cycled_trace([], 3) == [] and trace_rate(trace[:1]) is None


def test_chat_by_rate_and_a_missing_trace_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["bench", "--url", "http://127.0.0.1:9", "--capacity"]
    assert main([*base, "--by", "rate", "--workload", "chat"]) == 1
    err = capsys.readouterr().err.strip()
    assert "chat workload is searched by concurrent users" in err and "\n" not in err
    missing = tmp_path / "none.jsonl"
    code = main([*base, "--workload", "trace", "--trace", str(missing)])
    err = capsys.readouterr().err.strip()
    assert code in (1, 2) and str(missing) in err and "\n" not in err


def test_spec_round_trip_keeps_the_workload(tmp_path: Path) -> None:
    bench = BenchSpec(base_url="http://x", workload="trace", trace_path=str(tmp_path / "t.jsonl"))
    spec = replace(CapacitySpec(bench), by="rate")
    assert CapacitySpec.from_dict(spec.to_dict()) == spec
