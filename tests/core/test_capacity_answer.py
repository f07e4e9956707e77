"""A capacity search's answer with its bracket and spread, in the handoff and the attempts."""

from __future__ import annotations

from typing import Any

from tests.core.test_bench_best import _level, _run
from tui.bench.capacity.answer import bracket, bracket_text, capacity_line, spread_text
from tui.core.config import demo_profile
from tui.record.attempts import deployment_attempts
from tui.record.feed import RecordFeed
from tui.record.model import Event
from tui.summary.inputs import SummaryInputs
from tui.summary.recorded_render import _bench
from tui.summary.render import benchmarks, glance

CONTEXT = {"host": "simulator", "model": "m", "engine": "vllm", "engine_version": "0.33.0",
           "tp": 8, "ep": False, "gpus": "0-7", "config_hash": "abc"}  # fmt: skip


def _search(met: int, missed: int, *, partial: bool = False, tp: int = 8) -> dict[str, Any]:
    levels = [
        {"concurrency": c, "meets_slo": c <= met, "limited_by": "" if c <= met else "TTFT"}
        for c in (1, 4, 16, met, missed)
    ]
    return {
        "answer": f"{met} users at once (p99 TTFT <= 2 s): 4,000 tok/s total",
        "slo": {"ttft_p99_ms": 2000.0, "itl_p99_ms": None, "min_user_tok_s": 20.0},
        "levels": levels,
        "partial": partial,
        "by": "concurrency",
        "workload": {"name": "random", "input_tokens": 128, "output_tokens": 32},
        "context": {**CONTEXT, "tp": tp},
        "saved_at": f"2026-01-01T10:{met:02d}:00+00:00",
    }


def test_the_answer_carries_the_bracket_it_proved_and_the_spread_of_repeats() -> None:
    first, second, other = _search(30, 33), _search(36, 40), _search(12, 14, tp=4)
    assert bracket(first) == (30, 33)
    assert bracket_text(first) == "30-33 users (met at 30, missed at 33)"
    assert spread_text(first, [first]) == ""
    history = [first, second, other, _search(20, 22, partial=True)]
    assert spread_text(second, history) == (
        "2 searches of this workload and configuration: 30-36 users"
    )
    line = capacity_line(second, history)
    assert line.startswith("36 users at once (p99 TTFT <= 2 s)")
    assert "proved 36-40 users (met at 36, missed at 40)" in line and "30-36 users" in line
    assert capacity_line(_search(20, 22, partial=True)).startswith("cancelled capacity search")


def test_the_capacity_answer_is_the_first_line_of_the_benchmark_section() -> None:
    good = _run("good", (_level(1, 8, 80.0), _level(8, 8, 900.0)))
    cancelled = _run("gone", (_level(1, 0, 0.0, partial=True),), partial=True,
                     when="2026-01-01T11:00:00+00:00")  # fmt: skip
    inputs = SummaryInputs(
        demo_profile(), "simulator", 0.0, benchmarks=(cancelled, good),
        bench_config_hash="abc", capacity_searches=(_search(30, 33),),
    )  # fmt: skip
    section = benchmarks(inputs)
    assert section[2].startswith("- Capacity: 30 users at once (p99 TTFT <= 2 s)")
    assert "proved 30-33 users" in section[2]
    assert (
        section[3].startswith("- Best sweep (128/64 tok")
        and "900.0 tok/s output at c=8" in section[3]
    )
    text = "\n".join(glance(inputs) + section)
    assert " 0.0 tok/s" not in text and "| 0.0 |" not in text  # the cancelled run: nothing
    assert "| sweep (cancelled) |" in text and "| n/a |" in text


def test_deployment_attempts_show_the_capacity_and_never_a_partial_run() -> None:
    events: list[Event] = []

    class Sink:
        def add_event(self, event: Event) -> None:
            events.append(event)

    feed = RecordFeed(Sink(), "simulator")  # type: ignore[arg-type]
    t = 1_767_225_600.0
    events.append(Event(t, "service", "load", "load phase: weights",
                        data={"phase": "weights", "previous": "stopped"}))  # fmt: skip
    feed.observe_bench(_run("good", (_level(1, 8, 80.0), _level(8, 8, 900.0))), t + 100)
    feed.observe_bench(
        _run("cut", (_level(1, 8, 95.0), _level(8, 3, 5000.0, partial=True)), partial=True), t + 200
    )
    search = _search(30, 33)
    feed.observe_capacity(search, t + 300, [search])
    (capacity,) = [e for e in events if e.source == "capacity"]
    assert capacity.kind == "action" and capacity.data["met"] == 30
    assert capacity.data["missed"] == 33 and capacity.data["slo"]["ttft_p99_ms"] == 2000.0
    assert [level["concurrency"] for level in capacity.data["levels"]] == [1, 4, 16, 30, 33]
    assert capacity.text.startswith("capacity search: 30 users at once")
    partial_text = next(e.text for e in events if e.data.get("run_id") == "cut")
    assert "partial: not a measurement" in partial_text
    (attempt,) = deployment_attempts(events)
    cell = _bench(attempt)
    assert cell.startswith("capacity: 30 users at once") and "proved 30-33 users" in cell
    assert "900.0 tok/s output at c=8" in cell and "5,000" not in cell
    assert attempt.best_tok_s == 900.0
