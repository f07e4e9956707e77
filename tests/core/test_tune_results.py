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
