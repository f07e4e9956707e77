"""A tune's figures never turn unknown into 0: "none proved" with its reason, "no GPUs".

The records are what the capacity runner writes (`capacity_json` over real
`CapacityLevel`s); the first case is the real vLLM CPU run's: one level at 1 user, the
SLO off, the client's event loop lagging on two shared cores (client-bound).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tui.bench.capacity.answer import bracket, capacity_line
from tui.bench.capacity.result import capacity_json
from tui.bench.capacity.search import CapacityLevel, CapacitySearch, CapacitySlo
from tui.summary.recorded_render import tune_lines
from tui.tune.driver import Outcome
from tui.tune.figures import capacity_words, figures, level_line
from tui.tune.record import finished_event
from tui.tune.results import margin_line, pareto_front, ranked, result_lines, table_rows

SLO_OFF = CapacitySlo(ttft_p99_ms=None, itl_p99_ms=None, min_user_tok_s=None)
SLO = CapacitySlo(ttft_p99_ms=2000.0, itl_p99_ms=100.0, min_user_tok_s=None)
CLIENT_BOUND = "client-bound: event-loop lag p90 47 ms > 25 ms"


def _level(users: int = 1, **changes: Any) -> CapacityLevel:
    values: dict[str, Any] = dict(
        concurrency=users, completed=17, failed=0, measured=16, duration_s=1.0,
        ttft_p99_ms=40.0, itl_p99_ms=5.0, per_user_tok_s=1617.4, output_throughput=279.0,
        goodput=1.0, failures=(), per_user_tok_s_interval=(823.2, 5063.9),
    )  # fmt: skip
    values.update(changes)
    return CapacityLevel(**values)


def _record(slo: CapacitySlo, *levels: CapacityLevel) -> dict[str, Any]:
    search = CapacitySearch(slo)
    for level in levels:
        search.record(level)
    best, above = search.answer()
    return capacity_json(slo, list(levels), best, above)


def _cpu_outcome(name: str, result: dict[str, Any]) -> Outcome:
    return Outcome(name, name, "served", 0, "TP=1", load_s=29.0, **figures(result))


def test_a_client_bound_first_level_proves_no_capacity_and_says_why() -> None:
    record = _record(SLO_OFF, _level(client_bound=CLIENT_BOUND))
    assert record["capacity"]["concurrency"] is None
    assert (
        record["capacity"]["output_tok_s"] is None and record["capacity"]["per_user_tok_s"] is None
    )
    why = record["none_proved"]
    assert why == f"at 1 user, the client could not keep up ({CLIENT_BOUND}), with the SLO off"
    assert record["answer"] == f"capacity none proved: {why}; the server's limit is not known"
    assert "no level finished" not in record["answer"]
    # the client's limit is no miss: no bracket "below 1 user", the line is the answer
    assert bracket(record) == (None, None)
    assert capacity_line(record) == record["answer"]
    measured = figures(record)
    assert measured["capacity_users"] is None and measured["total_tok_s"] is None
    assert measured["per_user_tok_s"] is None and measured["capacity_none_proved"] == why
    assert measured["single_stream_tok_s"] == 1617.4  # level 1 was measured
    assert capacity_words(measured) == f"none proved ({why})"


def test_each_way_a_level_fails_is_named_with_its_figures() -> None:
    errors = _record(SLO_OFF, _level(failed=2, completed=15, failures=("errors",)))
    assert errors["none_proved"] == "at 1 user, missed errors (2 of 17 failed), with the SLO off"
    cut = _record(SLO_OFF, _level(measured=0, completed=0, partial=True))
    assert cut["none_proved"].startswith("at 1 user, partial: it ended before")
    slow = _record(SLO, _level(itl_p99_ms=150.0, failures=("itl",)))
    assert slow["none_proved"] == "at 1 user, missed ITL p99 150 ms > 100 ms"
    assert slow["answer"].startswith("not even 1 user meets the SLO")  # a real miss, said so
    assert figures(slow)["capacity_users"] is None
    assert figures(slow)["capacity_none_proved"] == slow["none_proved"]


def test_no_level_measured_is_unknown_not_none_proved() -> None:
    record = capacity_json(SLO, [], None, None)
    assert record["none_proved"] is None and record["capacity"]["concurrency"] is None
    measured = figures(record)
    assert measured["capacity_users"] is None and measured["capacity_none_proved"] is None
    assert measured["single_stream_tok_s"] is None
    assert capacity_words(measured) == "unknown"
    unmeasured = figures(_record(SLO_OFF, _level(measured=0, completed=0, partial=True)))
    assert unmeasured["single_stream_tok_s"] is None  # a level without a request: no figure


def test_a_proved_capacity_keeps_its_figures() -> None:
    record = _record(SLO, _level(1), _level(4, itl_p99_ms=150.0, failures=("itl",)))
    assert record["none_proved"] is None
    measured = figures(record)
    assert measured["capacity_users"] == 1 and measured["total_tok_s"] == 279.0
    assert measured["capacity_users_above"] == 4 and measured["capacity_none_proved"] is None


def test_the_cpu_run_table_says_none_proved_and_no_gpus_never_0() -> None:
    record = _record(SLO_OFF, _level(client_bound=CLIENT_BOUND))
    outcomes = [_cpu_outcome("seqs=2", record), _cpu_outcome("seqs=8", record)]
    lines = result_lines(outcomes, "single_stream")
    header, row = lines[0].split(), lines[1]
    assert header[0] == "#" and "0 users" not in row
    cells = [cell for cell in row.split("  ") if cell]
    assert cells[-5:] == ["none proved", "n/a", "no GPUs", "no GPUs", "no GPUs"], cells
    text = "\n".join(lines)
    assert "0.0/0" not in text and "Pareto front (per-user" not in text
    assert "not on the Pareto front (capacity none proved): seqs=2, seqs=8" in text
    assert (
        f"seqs=2: capacity none proved: at 1 user, the client could not keep up ({CLIENT_BOUND})"
        in text
    )
    assert pareto_front(outcomes) == []
    # by capacity nothing is ranked, and the line says why; per GPU: no GPUs
    assert margin_line(outcomes, "capacity") == (
        "no configuration was ranked: seqs=2: capacity none proved; seqs=8: capacity none proved"
    )
    assert margin_line(outcomes, "tok_per_gpu") == (
        "no configuration was ranked: seqs=2: no GPUs; seqs=8: no GPUs"
    )
    assert [o.name for o in ranked(outcomes, "capacity")] == ["seqs=2", "seqs=8"]


def test_a_ranked_tune_names_what_it_skipped() -> None:
    proved = _record(SLO, _level(1), _level(4, itl_p99_ms=150.0, failures=("itl",)))
    unproved = _record(SLO_OFF, _level(client_bound=CLIENT_BOUND))
    outcomes = [
        Outcome("a", "a", "served", 1, "TP=1", **figures(proved)),
        Outcome("b", "b", "served", 1, "TP=1", **figures(unproved)),
    ]
    text = "\n".join(result_lines(outcomes, "capacity"))
    assert "best: a (1 users); nothing else measured" in text
    assert "not ranked: b: capacity none proved" in text
    assert [o.name for o in pareto_front(outcomes)] == ["a"]


def test_a_capacity_no_level_missed_above_is_a_floor() -> None:
    floor = _record(SLO_OFF, _level(1))  # one level (the single-stream objective): met
    bracketed = _record(SLO, _level(1), _level(4, itl_p99_ms=150.0, failures=("itl",)))
    outcomes = [_cpu_outcome("floor", floor), _cpu_outcome("bracketed", bracketed)]
    rows = table_rows(outcomes, "single_stream")
    assert [row[5] for row in rows[1:]] == [">=1 user", "1 user"]


def test_the_handoff_and_the_timeline_say_none_proved() -> None:
    record = _record(SLO_OFF, _level(client_bound=CLIENT_BOUND))
    outcomes = [_cpu_outcome("seqs=2", record)]
    event = finished_event(outcomes, "capacity", 1.0)
    assert "capacity none proved" in event.text and " 0 users" not in event.text
    assert event.data["pareto"] == []
    assert event.data["none_proved"] == [{"name": "seqs=2", "reason": record["none_proved"]}]
    text = "\n".join(tune_lines(SimpleNamespace(tune=event)))  # type: ignore[arg-type]
    assert "| none proved | n/a | no GPUs | no GPUs | no GPUs |" in text
    assert f"- seqs=2: capacity none proved: {record['none_proved']}" in text
    assert "Pareto front" not in text and "| 0 |" not in text


def test_the_level_line_says_the_verdict_and_unknown_as_unknown() -> None:
    level = capacity_json(SLO_OFF, [_level(client_bound=CLIENT_BOUND)], None, None)["levels"][0]
    assert level_line(level) == f"level 1: 279 tok/s, {CLIENT_BOUND}"
    assert level_line({"concurrency": 2}) == "level 2: tok/s unknown, missed: partial"


_LEVELS = st.lists(
    st.builds(
        _level,
        st.integers(1, 64),
        failures=st.sampled_from([(), ("errors",), ("itl",), ("queue",)]),
        partial=st.booleans(),
        client_bound=st.sampled_from(["", CLIENT_BOUND]),
        measured=st.integers(0, 20),
    ),
    max_size=5,
    unique_by=lambda lv: lv.concurrency,
)


@given(levels=_LEVELS, slo_off=st.booleans())
def test_no_search_turns_unknown_into_0(levels: list[CapacityLevel], slo_off: bool) -> None:
    """Whatever the levels: a proved capacity, or "none proved" with a reason when levels
    ran, or unknown when none did; never a 0 standing for any of them."""
    slo = SLO_OFF if slo_off else SLO
    best, above = CapacitySearch(slo, levels=list(levels)).answer()
    measured = figures(capacity_json(slo, levels, best, above))
    if best is not None:
        assert measured["capacity_users"] == best.concurrency > 0
        assert measured["capacity_none_proved"] is None
    else:
        assert measured["capacity_users"] is None and measured["total_tok_s"] is None
        assert measured["per_user_tok_s"] is None
        assert bool(measured["capacity_none_proved"]) == bool(levels)
