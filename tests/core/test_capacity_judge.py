"""The capacity search answers on decided levels: each objective judged on its interval.

Pure logic (no server): the judgements of tui.bench.capacity.judge and how the search
steers, extends and infers with them. The search against the simulator's truth is in
tests/integration/test_bench_capacity.py.
"""

from __future__ import annotations

from dataclasses import replace

from tui.bench.capacity.judge import judge_p99, judge_speed
from tui.bench.capacity.result import answer_sentence
from tui.bench.capacity.search import CapacityLevel, CapacitySearch, CapacitySlo
from tui.bench.uncertainty import MET, MISSED, UNDECIDED, PercentileRanks

SLO = CapacitySlo(ttft_p99_ms=2000, itl_p99_ms=None, min_user_tok_s=20)


def test_a_p99_of_few_requests_is_undecided_however_far_below_its_limit() -> None:
    few = judge_p99(
        "ttft", [50.0 + i for i in range(16)], 2000, requests=16, ranks=PercentileRanks()
    )
    assert few.verdict == UNDECIDED and few.high is None and few.needed_requests == 368
    many = judge_p99("ttft", [50.0 + i % 16 for i in range(400)], 2000, requests=400,
                     ranks=PercentileRanks())  # fmt: skip
    assert many.verdict == MET and many.high is not None and many.high <= 2000
    # the interval's lower end above the limit: missed, whatever the count
    over = judge_p99(
        "ttft", [3000.0 + i for i in range(16)], 2000, requests=16, ranks=PercentileRanks()
    )
    assert over.verdict == MISSED
    # ITL: many gaps per request, so its p99 closes with few requests
    gaps = judge_p99("itl", [20.0] * 31 * 16, 100, requests=16, ranks=PercentileRanks())
    assert gaps.verdict == MET


def test_a_speed_on_its_limit_is_undecided_and_no_count_is_promised() -> None:
    assert judge_speed(25.0, (24.0, 26.0), 20, requests=60).verdict == MET
    assert judge_speed(15.0, (14.0, 16.0), 20, requests=60).verdict == MISSED
    near = judge_speed(20.5, (19.5, 21.5), 20, requests=60)
    assert near.verdict == UNDECIDED and near.needed_requests is not None
    assert near.needed_requests > 4 * 60  # half-width 1 against a distance of 0.5
    assert judge_speed(20.0, (19.0, 21.0), 20, requests=60).needed_requests is None


def _level(users: int, *, failures: tuple[str, ...] = (), undecided: tuple[str, ...] = (),
           needs: tuple[int | None, ...] = (), measured: int = 60) -> CapacityLevel:  # fmt: skip
    return CapacityLevel(
        concurrency=users, completed=measured + users, failed=0, measured=measured,
        duration_s=10.0, ttft_p99_ms=100.0, itl_p99_ms=20.0, per_user_tok_s=25.0,
        output_throughput=25.0 * users, goodput=1.0, failures=failures,
        undecided=undecided, undecided_needs=needs,
    )  # fmt: skip


def test_the_search_extends_the_bracket_then_answers_on_what_was_decided() -> None:
    search = CapacitySearch(SLO, max_requests=400)
    search.record(_level(16, undecided=("ttft",), needs=(368,)))
    search.record(_level(22, undecided=("ttft",), needs=(368,)))
    # 24 missed on speed; its own p99 TTFT of 60 requests is open (it proves nothing below)
    search.record(_level(24, failures=("user_tok_s",), undecided=("ttft",), needs=(368,)))
    assert search.next_concurrency() is None  # 22-24: closed by the figures
    assert search.to_extend() is not None and search.to_extend().concurrency == 22  # type: ignore[union-attr]
    best, above = search.answer()
    assert best is None and above is not None and above.concurrency == 16
    assert answer_sentence(SLO, best, above).startswith("no level was shown to meet the SLO")
    # 22 run again: its p99 shown met, which 16 inherits (latency rises with load)
    search.record(replace(_level(22, measured=370), extensions=1))
    best, above = search.answer()
    assert best is not None and best.concurrency == 22 and best.verdict == MET
    assert [lv.verdict for lv in search.levels] == [MET, MISSED, MET]
    assert search.to_extend() is None


def test_a_level_no_count_can_decide_is_said_and_searched_below() -> None:
    search = CapacitySearch(SLO, max_requests=400)
    search.record(_level(16))
    search.record(_level(22, undecided=("user_tok_s",), needs=(None,), measured=370))
    search.record(_level(25, failures=("user_tok_s",), undecided=("ttft",), needs=(368,)))
    assert search.to_extend() is None
    assert search.next_concurrency() == 19  # steered below 22 as below a miss
    best, above = search.answer()
    assert best is not None and best.concurrency == 16
    assert above is not None and above.concurrency == 22
    assert answer_sentence(SLO, best, above).endswith(
        "too few requests to decide at 22 (per-user speed: 370 requests)"
    )


def test_a_search_whose_levels_were_all_undecided_proves_none_and_says_why() -> None:
    from tui.bench.capacity.answer import none_proved
    from tui.bench.uncertainty import UNDECIDED

    record = {
        "slo": {"ttft_p99_ms": 2000.0, "itl_p99_ms": None, "min_user_tok_s": None},
        "levels": [
            {"concurrency": 1, "meets_slo": False, "failures": [], "verdict": UNDECIDED,
             "undecided": ["ttft"], "client_bound": "", "partial": False},
        ],
    }  # fmt: skip
    why = none_proved(record)
    assert why is not None and why.startswith("at 1 user, too few requests to decide (TTFT)"), why
