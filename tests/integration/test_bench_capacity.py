"""Capacity under an SLO: the search, its answer, and the simulator's truth.

The search is checked two ways: against the simulator's capacity model on its
virtual clock (noise-free, many configurations, fast), and end to end through
`servedeck bench --demo --capacity --json` against a real simulator process on a
fast clock, where it must land within 10 % of `/_sim/truth/capacity` in at most
8 levels and 10 simulated minutes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, replace

import httpx
import pytest

from tui.bench.capacity.driver import CapacityProcess
from tui.bench.capacity.history import read_capacity_history
from tui.bench.capacity.result import answer_sentence
from tui.bench.capacity.search import (
    CapacityLevel,
    CapacitySearch,
    CapacitySlo,
    ServerLevelStats,
    level_failures,
    parse_slo,
)
from tui.bench.capacity.spec import CapacitySpec
from tui.bench.workload import BenchSpec
from tui.cli import main
from tui.core.config import profile_from_data
from tui.core.errors import UsageError
from tui.sim.box import SimBox, SimServerOptions
from tui.sim.capacity import SloTarget, simulate_level, true_capacity
from tui.sim.spec import GIB, ServerSettings

# The simulator's TTFT and ITL against an SLO decide each level: quiet (tests/support/quiet.py).
pytestmark = pytest.mark.quiet

MAX_LEVELS = 8
MAX_SIMULATED_S = 600.0


def test_slo_text_overrides_the_profile_and_bad_items_are_one_line() -> None:
    profile, problems = profile_from_data(
        {"benchmark": {"slo": {"ttft_p99_ms": 500, "itl_p99_ms": 0}}}, "p", None
    )
    assert problems == []
    from tui.commands.capacity_cmd import slo_from_profile

    base = slo_from_profile(profile.benchmark.slo)
    assert base == CapacitySlo(ttft_p99_ms=500, itl_p99_ms=None, min_user_tok_s=20)
    assert parse_slo("min_user_tok_s=30, itl_p99_ms=80", base) == CapacitySlo(500, 80, 30)
    assert parse_slo("ttft_p99_ms=off").ttft_p99_ms is None
    for bad, words in [("ttft=1", "unknown objective"), ("itl_p99_ms=fast", "must be a number")]:
        with pytest.raises(UsageError, match=words) as caught:
            parse_slo(bad)
        assert "\n" not in str(caught.value)
    _, problems = profile_from_data({"benchmark": {"slo": {"ttft_p99_ms": -1}}}, "p", None)
    assert problems and problems[0].startswith("benchmark.slo.ttft_p99_ms")


def _virtual_level(settings: ServerSettings, slo: CapacitySlo, users: int) -> CapacityLevel:
    """A level measured on the simulator's virtual clock (no network, no noise)."""
    seen = simulate_level(settings, users, 128, 64)
    failures = level_failures(
        slo,
        ttft_p99_ms=seen.ttft_p99_ms,
        itl_p99_ms=seen.itl_p99_ms,
        per_user_tok_s=seen.per_user_tok_s,
        failed=0,
        server=ServerLevelStats(samples=1, waiting_mean=seen.peak_waiting),
    )
    return CapacityLevel(
        concurrency=users, completed=users * 4, failed=0, measured=users * 3,
        duration_s=seen.simulated_s, ttft_p99_ms=seen.ttft_p99_ms, itl_p99_ms=seen.itl_p99_ms,
        per_user_tok_s=seen.per_user_tok_s, output_throughput=seen.output_tok_s, goodput=0.0,
        failures=failures, server=ServerLevelStats(samples=1, waiting_mean=seen.peak_waiting),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("settings", "slo"),
    [
        (ServerSettings("", 0), CapacitySlo()),  # the demo box: per-user speed binds
        (ServerSettings("", 0), CapacitySlo(ttft_p99_ms=2000, itl_p99_ms=None, min_user_tok_s=8)),
        # A small KV cache: a queue forms past 40 users and TTFT jumps (the knee).
        (
            ServerSettings("", 0, kv_bytes_per_gpu=40 * 192 * 70_272, decode_step_s=0.004),
            CapacitySlo(ttft_p99_ms=100, itl_p99_ms=None, min_user_tok_s=None),
        ),
        (ServerSettings("", 0, prefill_tok_s=800.0), CapacitySlo(itl_p99_ms=250)),
        (ServerSettings("", 0, decode_alpha=0.01), CapacitySlo()),
        (ServerSettings("", 0, decode_alpha=0.3), CapacitySlo()),
    ],
)
def test_search_lands_on_the_model_truth(settings: ServerSettings, slo: CapacitySlo) -> None:
    truth = true_capacity(settings, SloTarget(**asdict(slo)), 128, 64)
    search = CapacitySearch(slo)
    while (users := search.next_concurrency()) is not None:
        search.record(_virtual_level(settings, slo, users))
    best, above = search.answer()
    assert best is not None and above is not None, search.levels
    target = int(truth["concurrency"])  # type: ignore[call-overload]
    assert abs(best.concurrency - target) <= 0.1 * target, (truth, search.levels)
    assert len(search.levels) <= MAX_LEVELS
    assert sum(level.duration_s for level in search.levels) <= MAX_SIMULATED_S
    sentence = answer_sentence(slo, best, above)
    assert sentence.startswith(f"{best.concurrency} users at once (")
    assert "; limited by " in sentence and sentence.endswith(f" at {above.concurrency}")


def test_kv_knee_is_limited_by_queueing_ttft() -> None:
    settings = ServerSettings("", 0, kv_bytes_per_gpu=40 * 192 * 70_272, decode_step_s=0.004)
    slo = CapacitySlo(ttft_p99_ms=100, itl_p99_ms=None, min_user_tok_s=None)
    search = CapacitySearch(slo)
    while (users := search.next_concurrency()) is not None:
        search.record(_virtual_level(settings, slo, users))
    best, above = search.answer()
    assert best is not None and above is not None
    assert best.concurrency <= settings.kv_cache_tokens // 192 < above.concurrency
    assert answer_sentence(slo, best, above).endswith(f"TTFT (queueing) at {above.concurrency}")


def test_nothing_meets_the_slo_is_said_plainly() -> None:
    slo = CapacitySlo(min_user_tok_s=500)
    search = CapacitySearch(slo)
    search.record(_virtual_level(ServerSettings("", 0), slo, search.next_concurrency() or 1))
    assert search.next_concurrency() is None
    best, above = search.answer()
    assert best is None and above is not None
    assert answer_sentence(slo, best, above).startswith("not even 1 user meets the SLO")


def test_demo_capacity_json_lands_within_ten_percent_of_truth(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # No ITL objective here: on a two-core runner beside other tests, one stall of the
    # client or the server of ~125 ms (250 ms of the simulator's doubled clock) in a level's
    # few hundred gaps is its p99, and the search then stops at 7 of 21 users (seen in full
    # runs). The demo's truth is bound by per-user speed, which stays strict with TTFT; the
    # ITL objective's part in the search is checked on the virtual clock above.
    code = main([
        "bench", "--demo", "--capacity", "--json", "--save", "--input-tokens", "128",
        "--output-tokens", "32", "--slo", "itl_p99_ms=off",
    ])  # fmt: skip
    assert code == 0
    body = json.loads(capsys.readouterr().out)
    assert set(body) >= {"answer", "capacity", "slo", "levels", "truth"}
    assert set(body["capacity"]) == {"concurrency", "output_tok_s", "per_user_tok_s", "limited_by"}
    assert body["slo"] == {"ttft_p99_ms": 2000.0, "itl_p99_ms": None, "min_user_tok_s": 20.0}
    truth = body["truth"]["concurrency"]
    found = body["capacity"]["concurrency"]
    assert abs(found - truth) <= 0.1 * truth, (body["answer"], truth)
    assert len(body["levels"]) <= MAX_LEVELS
    assert body["simulated_s"] <= MAX_SIMULATED_S and body["time_scale"] == 2.0
    assert body["answer"].startswith(f"{found} users at once (p99 TTFT <= 2 s")
    for level in body["levels"]:
        assert {"concurrency", "ttft_p99_ms", "itl_p99_ms", "output_throughput"} <= set(level)
        assert level["server"]["running_peak"] >= 1 and level["server"]["preemptions"] == 0
        assert level["gpu"]["power_mean_w"] > 0 and level["gpu"]["tokens_per_joule"] > 0
        assert isinstance(level["meets_slo"], bool)
    # The answer stands on decided levels: its own met on every interval, and its p99
    # TTFT shown over >= 368 requests of it and the busier levels that ran whole (latency
    # rises with load: their values bound its p99 from above; tui.bench.capacity.judge).
    (answer,) = [level for level in body["levels"] if level["concurrency"] == found]
    assert answer["verdict"] == "met" and answer["undecided"] == []
    assert sum(
        level["measured"] for level in body["levels"]
        if level["concurrency"] >= found and not level["partial"] and not level["client_bound"]
        and not {"errors", "preemptions", "queue"} & set(level["failures"])
    ) >= 368, body["levels"]  # fmt: skip
    if body["undecided_at"] is not None:
        assert f"too few requests to decide at {body['undecided_at']} (" in body["answer"]
    busiest = max(body["levels"], key=lambda level: level["concurrency"])
    assert busiest["server"]["running_mean"] > 0.5 * busiest["concurrency"]
    from tui.core import paths

    with paths.demo_records():
        (saved,) = read_capacity_history()
    assert saved["answer"] == body["answer"] and saved["context"]["model"]


@pytest.fixture(scope="module")
def fast_box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimBox]:
    options = SimServerOptions(shards=4, time_scale=2.0, log_interval_s=1.0)
    box = SimBox(tmp_path_factory.mktemp("capacity"), load_seconds=1.5, options=options)
    try:
        box.start()
        assert box.wait_until_active(timeout_s=90) == "active", box.log_path.read_text()[-3000:]
        yield box
    finally:
        box.close()


def _spec(box: SimBox, **slo: float | None) -> CapacitySpec:
    bench = BenchSpec(base_url=box.base_url, input_tokens=128, output_tokens=32)
    return CapacitySpec(bench, slo=CapacitySlo(**slo), rounds=2)  # type: ignore[arg-type]


async def test_cancel_keeps_the_finished_levels(fast_box: SimBox) -> None:
    process = CapacityProcess(_spec(fast_box))
    kinds = []
    async for event in process.events():
        kinds.append(event["event"])
        if event["event"] == "level" and kinds.count("level") == 1:
            process.cancel()
    result = process.result
    assert result is not None and result["partial"] is True
    assert [level["concurrency"] for level in result["levels"]] == [1]
    assert kinds[-1] == "result" and "truth" not in result


async def test_server_errors_fail_a_level_as_over_saturation(fast_box: SimBox) -> None:
    async with httpx.AsyncClient(timeout=10) as client:
        await client.post(f"{fast_box.base_url}/_sim/fault", json={"http_5xx_rate": 1.0})
        try:
            process = CapacityProcess(_spec(fast_box))
            _ = [event async for event in process.events()]
        finally:
            await client.post(f"{fast_box.base_url}/_sim/fault", json={"http_5xx_rate": 0.0})
    result = process.result
    assert result is not None
    (level,) = result["levels"]
    assert level["failed"] > 0 and level["failures"][0] == "errors" and not level["meets_slo"]
    assert result["answer"] == (
        "not even 1 user meets the SLO (p99 TTFT <= 2 s, p99 ITL <= 100 ms, >= 20 tok/s each); "
        "limited by errors at 1"
    )


async def test_truth_endpoint_refuses_bad_queries(fast_box: SimBox) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        url = f"{fast_box.base_url}/_sim/truth/capacity"
        bad = await client.get(url, params={"ttft_p99_ms": "soon"})
        assert bad.status_code == 400 and "bad capacity query" in bad.json()["error"]["message"]
        good = await client.get(url, params={"input_tokens": 128, "output_tokens": 32})
        assert good.status_code == 200 and good.json()["concurrency"] > 1
        clock = await client.get(f"{fast_box.base_url}/_sim/clock")
        assert clock.json() == {"time_scale": 2.0}


def test_unreachable_server_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--url", "http://127.0.0.1:9", "--capacity"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("servedeck: error: capacity:") and "\n" not in err


def test_slo_without_capacity_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--url", "http://127.0.0.1:9", "--slo", "ttft_p99_ms=1"]) == 2
    assert "--slo needs --capacity" in capsys.readouterr().err


def test_virtual_levels_are_deterministic() -> None:
    settings = ServerSettings("", 0, kv_bytes_per_gpu=4 * GIB)
    assert simulate_level(settings, 12, 128, 64) == simulate_level(settings, 12, 128, 64)


async def test_rate_search_stops_over_saturated_levels(fast_box: SimBox) -> None:
    # ITL p99 relaxed: on a loaded runner it measures scheduling jitter (see above).
    # Three levels are enough to prove it (a passing first rate, a miss above it: the
    # search grows 4x from 1 req/s); the bisection that narrows the answer further is
    # the concurrency search's, proven by test_search_lands_on_the_model_truth.
    spec = replace(
        _spec(fast_box, itl_p99_ms=250),
        by="rate", rate_step=0.5, rate_level_s=10.0, min_requests=8, max_levels=3,
    )  # fmt: skip
    process = CapacityProcess(spec)
    _ = [event async for event in process.events()]
    result = process.result
    assert result is not None and result["by"] == "rate" and "truth" not in result
    levels = result["levels"]
    assert 2 <= len(levels) <= 3
    assert all(level["request_rate"] == level["search_step"] * 0.5 for level in levels)
    # 1 req/s for 10 s: its figures pass, but a p99 of ~16 requests is open above (368
    # needed) and a rate level is not run again for more: too few requests to decide.
    first = levels[0]
    assert first["request_rate"] == 1.0 and not first["failures"]
    assert first["verdict"] == "too few requests to decide" and "ttft" in first["undecided"]
    assert result["answer"].startswith("no level was shown to meet the SLO")
    # the lowest level tried (the search steps down from an undecided first one)
    lowest = min(levels, key=lambda level: level["request_rate"])
    assert result["undecided_at"] == f"{lowest['request_rate']:g} requests/s"
    assert f"too few requests to decide at {result['undecided_at']} (TTFT" in result["answer"]
    assert any(level["verdict"] == "missed" and level["failures"] for level in levels)
    assert all(level["server"]["samples"] > 0 for level in levels)


async def test_a_level_of_few_requests_is_undecided_not_met(fast_box: SimBox) -> None:
    """One user, 16 requests, every TTFT far below 2 s: a p99 of 16 requests is open above
    (368 needed), so the level is too few requests to decide, never met on its point."""
    spec = replace(_spec(fast_box, itl_p99_ms=None, min_user_tok_s=None), max_levels=1)
    spec = replace(spec, max_level_requests=0)  # not run again: the first measure's verdict
    process = CapacityProcess(spec)
    _ = [event async for event in process.events()]
    result = process.result
    assert result is not None
    (level,) = result["levels"]
    assert level["failures"] == [] and level["ttft_p99_ms"] < 2000
    assert level["verdict"] == "too few requests to decide" and not level["meets_slo"]
    assert level["undecided"] == ["ttft"] and level["undecided_needs"] == [368]
    assert result["capacity"]["concurrency"] is None and result["undecided_at"] == "1"
    assert result["none_proved"] == "at 1 user, too few requests to decide (TTFT)"
    assert result["answer"].endswith(
        "too few requests to decide at 1 (TTFT: 16 requests, need >= 368)"
    )
