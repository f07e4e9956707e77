"""A tune's results: ranked by the objective, the Pareto front, the margin, what --resume reuses."""

from __future__ import annotations

from pathlib import Path

from tui.tune.driver import Outcome
from tui.tune.results import margin_line, measured_before, pareto_front, ranked, save_outcome


def _served(name: str, users: int, above: float, per_user: float, total: float) -> Outcome:
    return Outcome(name, name, "served", 8, "TP=8", capacity_users=users,
                   capacity_users_above=above, per_user_tok_s=per_user, total_tok_s=total)  # fmt: skip


OUTCOMES = [
    Outcome("oom", "oom", "failed", 8, "TP=8", phase="kv_cache", failure_line="CUDA out of memory"),
    _served("a", 20, 22, 25.0, 500.0),
    _served("b", 24, 26, 21.0, 504.0),
    _served("c", 10, 12, 30.0, 300.0),
    _served("d", 9, 10, 24.0, 216.0),
]


def test_ranked_by_the_objective_the_unmeasured_last() -> None:
    assert [o.name for o in ranked(OUTCOMES, "capacity")] == ["b", "a", "c", "d", "oom"]
    assert [o.name for o in ranked(OUTCOMES, "tok_per_gpu")][:2] == ["b", "a"]


def test_pareto_front_keeps_only_the_unbeaten() -> None:
    assert [o.name for o in pareto_front(OUTCOMES)] == ["b", "a", "c"]


def test_margin_is_judged_against_the_runner_ups_bracket() -> None:
    assert margin_line(OUTCOMES, "capacity") == (
        "best: b (24 users), +20% over a (20 users): beyond the noise "
        "(the runner-up missed the SLO at 22)"
    )
    close = [_served("x", 21, 23, 1, 1), _served("y", 20, 22, 1, 1)]
    assert margin_line(close, "capacity").endswith(
        "within the noise (the runner-up's bracket reaches 22)"
    )
    assert margin_line(OUTCOMES[:1], "capacity") == "no configuration was measured"


def test_resume_reuses_only_served_results_of_the_same_context(tmp_path: Path) -> None:
    path = tmp_path / "tune-results.jsonl"
    for outcome in OUTCOMES:
        save_outcome(outcome, "0.1.0|m|8x G", path)
    save_outcome(_served("e", 1, 2, 1, 1), "0.1.0|other|8x G", path)
    path.write_text(path.read_text() + "not json\n")
    found = measured_before("0.1.0|m|8x G", path)
    assert sorted(found) == ["a", "b", "c", "d"] and found["b"] == OUTCOMES[2]


def _tok(name: str, single: float, low: float, high: float, gpus: int = 1) -> Outcome:
    return Outcome(name, name, "served", gpus, "TP=1", single_stream_tok_s=single,
                   single_stream_tok_s_range=(low, high), total_tok_s=single * 10,
                   total_tok_s_range=(low * 10, high * 10))  # fmt: skip


def test_a_tok_s_margin_is_judged_by_the_benchs_intervals() -> None:
    apart = [_tok("a", 30.0, 29.0, 31.0), _tok("b", 25.0, 24.0, 26.0)]
    assert margin_line(apart, "single_stream") == (
        "best: a (30.0 tok/s), +20% over b (25.0 tok/s): "
        "beyond the noise (95 % intervals apart: 29.0 > 26.0)"
    )
    overlap = [_tok("a", 30.0, 27.0, 33.0), _tok("b", 29.0, 26.0, 32.0)]
    assert margin_line(overlap, "single_stream").endswith(
        "within the noise (95 % intervals overlap: 27.0 <= 32.0)"
    )
    # per GPU: the total's interval divided by the GPUs it took
    per_gpu = [_tok("a", 30.0, 29.0, 31.0), _tok("b", 50.0, 49.0, 51.0, gpus=2)]
    assert margin_line(per_gpu, "tok_per_gpu").endswith(
        "beyond the noise (95 % intervals apart: 290.0 > 255.0)"
    )
    unknown = [OUTCOMES[1], OUTCOMES[2]]
    assert margin_line(unknown, "tok_per_gpu").endswith("noise unknown (one run each)")
