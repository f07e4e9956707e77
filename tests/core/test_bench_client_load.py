"""The client-bound verdict: its limits, and a capacity search that never concludes at one."""

from __future__ import annotations

import asyncio
import time

from tui.bench.capacity.result import answer_sentence, capacity_json
from tui.bench.capacity.search import CapacityLevel, CapacitySearch, CapacitySlo
from tui.bench.client_load import (
    LOOP_LAG_LIMIT_MS,
    ClientMeter,
    ClientSample,
    client_load,
)
from tui.bench.report import report_lines


def _level(users: int, ttft_p99_ms: float, client_bound: str = "") -> CapacityLevel:
    missed = ("ttft",) if ttft_p99_ms > 2000 else ()
    return CapacityLevel(
        concurrency=users, completed=users * 4, failed=0, measured=users * 3, duration_s=10.0,
        ttft_p99_ms=ttft_p99_ms, itl_p99_ms=20.0, per_user_tok_s=40.0,
        output_throughput=40.0 * users, goodput=1.0, failures=missed, client_bound=client_bound,
    )  # fmt: skip


def test_limits_name_each_sign_passed() -> None:
    calm = ClientSample(wall_s=10.0, cpu_s=1.0, loop_lag_p99_ms=60.0, loop_lag_max_ms=60.0,
                        loop_lag_p90_ms=2.0)  # fmt: skip
    hiccup = client_load([0.001] * 95 + [0.2] * 5, [calm])
    assert not hiccup.bound and hiccup.send_lag_p99_ms == 200.0  # one in 20 late: reported only
    late = client_load([0.001] * 85 + [0.2] * 15, [calm])
    assert late.bound and late.reasons == ("send lag p90 200 ms > 25 ms",)
    busy = ClientSample(wall_s=10.0, cpu_s=9.8, loop_lag_p99_ms=90.0, loop_lag_max_ms=90.0,
                        loop_lag_p90_ms=LOOP_LAG_LIMIT_MS + 1)  # fmt: skip
    both = client_load([], [calm, busy])
    assert both.send_lag_p99_ms is None and round(both.cpu_share or 0, 6) == 0.98
    assert [r.split()[0] for r in both.reasons] == ["event-loop", "client"]
    assert both.describe().startswith("client-bound: event-loop lag p90 26 ms")


def test_the_meter_sees_a_blocked_loop() -> None:
    async def blocked() -> ClientSample:
        meter = ClientMeter(probe_s=0.005)
        meter.start()
        await asyncio.sleep(0.02)

        # The loop is busy for 0.1 s of this process's CPU (not of the wall clock, which a
        # loaded machine fills with other processes' time): the probe wakes late.
        cpu_until = time.process_time() + 0.1
        while time.process_time() < cpu_until:
            pass
        await asyncio.sleep(0.02)
        return await meter.stop()

    sample = asyncio.run(blocked())
    assert sample.loop_lag_max_ms is not None and sample.loop_lag_max_ms >= 90
    assert sample.cpu_s > 0.02 and sample.cpu_share is not None


def test_the_search_stops_at_a_client_bound_level_and_says_whose_limit_it_is() -> None:
    slo = CapacitySlo(ttft_p99_ms=2000.0, itl_p99_ms=None, min_user_tok_s=None)
    search = CapacitySearch(slo)
    search.record(_level(1, 100.0))
    assert search.next_concurrency() == 4
    # TTFT past the SLO, but the client lagged: neither a pass nor the server's limit
    search.record(_level(4, 5000.0, "client-bound: send lag p90 300 ms > 25 ms"))
    assert search.next_concurrency() is None
    best, above = search.answer()
    assert best is not None and best.concurrency == 1 and above is None
    body = capacity_json(slo, search.levels, best, above)
    assert "the client could not drive 4 users at once" in body["answer"]
    assert "limited by" not in body["answer"] and body["client_bound_at"] == "4"
    assert body["levels"][1]["meets_slo"] is False


def test_a_miss_below_the_client_bound_level_is_still_the_servers_limit() -> None:
    slo = CapacitySlo(ttft_p99_ms=2000.0, itl_p99_ms=None, min_user_tok_s=None)
    best, above, bound = _level(4, 100.0), _level(8, 3000.0), _level(16, 9000.0, "client-bound")
    assert "limited by TTFT at 8" in answer_sentence(slo, best, above, bound)


def test_the_report_marks_a_client_bound_level() -> None:
    from tui.bench.metrics import summarize_level
    from tui.bench.model import RequestOutcome

    outcomes = [
        RequestOutcome(
            success=True,
            start_s=1.0 + i,
            ttft_s=0.1,
            latency_s=0.5,
            end_s=1.5 + i,
            output_tokens=8,
            usage_seen=True,
            scheduled_s=0.9 + i,
        )
        for i in range(10)
    ]
    level = summarize_level(
        outcomes, concurrency=1, request_rate=None, burstiness=1.0, num_requests=10,
        duration_s=10.0, client_samples=[ClientSample(10.0, 1.0, 1.0, 2.0, 1.0)],
    )  # fmt: skip
    assert level.client_bound and level.client_load is not None
    assert abs((level.client_load.send_lag_p99_ms or 0) - 100.0) < 1e-6
    text = "\n".join(report_lines(level))
    assert "CLIENT-BOUND: the client's limit, not the server's" in text
    assert max(len(line) for line in report_lines(level)) <= 80
