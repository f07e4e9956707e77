"""The benchmark truths: which run is the best, which runs are alike, what a cancel says."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from tui.bench.best import (
    COMPLETE,
    NO_EARLIER,
    best_benchmarks,
    earlier_alike,
    figure_from_dict,
    figure_of,
    result_toast,
    run_state,
)
from tui.bench.context import config_hash, context_for_profile
from tui.bench.model import BenchResult, LatencyStats, LevelResult, RunContext
from tui.core.config import demo_profile

CONTEXT = RunContext(profile="p", host="h", model="m", engine_version="0.33.0", tp=8,
                     gpus="0-7", config_hash="abc")  # fmt: skip


def _level(
    concurrency: int, completed: int, out_tok_s: float, *, partial: bool = False,
    prefill_tok_s: float | None = None,
) -> LevelResult:  # fmt: skip
    stats = LatencyStats(count=completed, mean_ms=50.0, median_ms=50.0, p99_ms=80.0)
    return LevelResult(
        concurrency=concurrency, request_rate=None, burstiness=1.0, num_requests=8,
        completed=completed, failed=0, cancelled=8 - completed, partial=partial,
        duration_s=1.0, total_input_tokens=completed * 128, total_output_tokens=completed * 64,
        output_tokens_source="usage", request_throughput=completed / 1.0,
        output_throughput=out_tok_s if completed else 0.0, total_token_throughput=0.0,
        request_goodput=None, decode_tok_s_per_stream=None,
        prefill_tok_s_per_request=prefill_tok_s if completed else None,
        ttft=stats, tpot=stats, itl=stats, e2el=stats,
    )  # fmt: skip


def _run(
    run_id: str, levels: tuple[LevelResult, ...], *, partial: bool = False,
    preset: str = "sweep", output_tokens: int = 64, when: str = "2026-01-01T10:00:00+00:00",
    context: RunContext = CONTEXT,
) -> BenchResult:  # fmt: skip
    return BenchResult(
        run_id=run_id, started_at=when, preset=preset, endpoint="completions",
        input_tokens=128, output_tokens=output_tokens, temperature=0.0, ignore_eos=True,
        context=context, levels=levels, partial=partial,
    )  # fmt: skip


@st.composite
def runs(draw: st.DrawFn) -> BenchResult:
    """A run as history holds them: complete, cut short, cancelled empty, or prefill."""
    kind = draw(st.sampled_from(["complete", "partial", "cancelled", "prefill", "empty"]))
    n = draw(st.integers(1, 3))
    speeds = draw(st.lists(st.floats(1.0, 5000.0), min_size=n, max_size=n))
    minute = draw(st.integers(0, 59))
    when = f"2026-01-01T10:{minute:02d}:00+00:00"
    run_id = draw(st.uuids()).hex[:12]
    preset = draw(st.sampled_from(["quick", "sweep"]))
    if kind == "prefill":
        levels = (_level(1, 4, 0.4, prefill_tok_s=draw(st.floats(100.0, 90000.0))),)
        return _run(run_id, levels, preset="prefill", output_tokens=1, when=when)
    if kind == "cancelled":
        return _run(run_id, (_level(1, 0, 0.0, partial=True),), partial=True, preset=preset,
                    when=when)  # fmt: skip
    if kind == "empty":
        return _run(run_id, (_level(1, 0, 0.0),), preset=preset, when=when)
    levels = tuple(_level(2**i, 8, speed) for i, speed in enumerate(speeds))
    if kind == "partial":
        levels = (*levels[:-1], replace(levels[-1], partial=True, completed=3))
        return _run(run_id, levels, partial=True, preset=preset, when=when)
    return _run(run_id, levels, preset=preset, when=when)


@settings(max_examples=200, deadline=None)
@given(st.lists(runs(), max_size=12))
def test_the_best_benchmark_is_never_partial_cancelled_or_zero(history: list[BenchResult]) -> None:
    chosen = best_benchmarks(history)
    by_id = {run.run_id: run for run in history}
    for figure in chosen:
        run = by_id[figure.run_id]
        assert run_state(run) == COMPLETE and not run.partial
        assert figure.tok_s is not None and figure.tok_s > 0
        if figure.kind == "prefill":  # its figure is prompt tok/s, never "1-stream" decode
            assert figure.single_stream_tok_s is None
            assert figure.tok_s == run.levels[0].prefill_tok_s_per_request
        else:
            assert figure.tok_s == max(level.output_throughput for level in run.levels)
    # one per workload and configuration, and the highest of the complete ones
    keys = [(figure.workload, figure.config) for figure in chosen]
    assert len(keys) == len(set(keys))
    for run in history:
        figure = figure_of(run)
        if figure.counts:
            (held,) = [
                f for f in chosen if (f.workload, f.config) == (figure.workload, figure.config)
            ]
            assert (held.tok_s or 0) >= (figure.tok_s or 0)
    # the same choice from the recorder's event data (Deployment attempts)
    again = [figure_from_dict(figure_of(run).to_dict()) for run in history]
    from tui.bench.best import best_figures

    assert best_figures(f for f in again if f is not None) == chosen


def test_a_cancelled_empty_run_after_a_good_one_is_not_the_best() -> None:
    good = _run("good", (_level(1, 8, 80.0), _level(8, 8, 900.0)))
    cancelled = _run("gone", (_level(1, 0, 0.0, partial=True),), partial=True,
                     when="2026-01-01T11:00:00+00:00")  # fmt: skip
    (best,) = best_benchmarks([good, cancelled])
    assert best.run_id == "good" and best.tok_s == 900.0 and best.at == "c=8"
    assert figure_of(cancelled).state == "cancelled" and figure_of(cancelled).tok_s is None
    assert figure_of(cancelled).describe() == "n/a"


def test_a_prefill_run_reports_prompt_tok_s_not_a_single_stream_speed() -> None:
    prefill = _run("pf", (_level(1, 4, 0.4, prefill_tok_s=24000.0),), preset="prefill",
                   output_tokens=1)  # fmt: skip
    assert prefill.single_stream_tok_s is None  # 0.4 tok/s "single stream" before
    figure = figure_of(prefill)
    assert figure.kind == "prefill" and figure.describe() == "24,000 prompt tok/s (prefill at c=1)"
    title, text, _ = result_toast(prefill)
    assert "1-stream" not in text and "24,000 prompt tok/s" in text and title == "Benchmark"


def test_the_toast_after_a_cancel_never_says_done() -> None:
    cut = _run("cut", (_level(1, 8, 80.0), _level(8, 3, 500.0, partial=True)), partial=True)
    title, text, severity = result_toast(cut)
    assert title == "Benchmark incomplete" and severity == "warning"
    assert (
        "done" not in text
        and text.startswith("sweep: cancelled after")
        and "not counted as a measurement" in text
    )
    assert "after 1 finished level(s)" in text


def test_comparison_is_with_the_last_complete_run_of_this_workload_and_configuration() -> None:
    other_config = replace(CONTEXT, tp=4, config_hash="def")
    history = [  # newest first, as runs_for_host returns them
        _run("new", (_level(1, 8, 80.0),), when="2026-01-01T12:00:00+00:00"),
        _run(
            "pf",
            (_level(1, 4, 0.4, prefill_tok_s=2e4),),
            preset="prefill",
            output_tokens=1,
            when="2026-01-01T11:50:00+00:00",
        ),
        _run("tp4", (_level(1, 8, 60.0),), when="2026-01-01T11:40:00+00:00", context=other_config),
        _run(
            "cut",
            (_level(1, 2, 70.0, partial=True),),
            partial=True,
            when="2026-01-01T11:30:00+00:00",
        ),
        _run("same", (_level(1, 8, 79.0),), when="2026-01-01T11:00:00+00:00"),
    ]
    previous = earlier_alike(history, history[0])
    assert previous is not None and previous.run_id == "same"
    assert earlier_alike(history, history[1]) is None  # the first prefill run: nothing alike
    assert earlier_alike(history[:4], history[0]) is None
    assert NO_EARLIER == "no earlier run of this workload on this configuration"


def test_the_config_hash_is_the_deployment_not_its_port() -> None:
    profile = demo_profile()
    moved = replace(profile, service=replace(profile.service, base_url="http://127.0.0.1:41234"))
    assert config_hash(moved) == config_hash(profile)
    assert context_for_profile(moved).config_hash == context_for_profile(profile).config_hash
    for changed in (
        replace(profile, model=replace(profile.model, tp=4)),
        replace(profile, model=replace(profile.model, max_model_len=8192)),
        replace(profile, service=replace(profile.service, engine="sglang")),
    ):
        assert config_hash(changed) != config_hash(profile)


def test_legacy_recorder_events_stay_readable() -> None:
    old = figure_from_dict({"best_output_tok_s": 1410.0, "single_stream_tok_s": 82.0})
    assert old is not None and old.counts and old.tok_s == 1410.0
    empty = figure_from_dict({"best_output_tok_s": 0.0, "single_stream_tok_s": None})
    assert empty is not None and not empty.counts  # "best 0.0" measured nothing
    cut = figure_from_dict({"best_output_tok_s": 500.0}, partial=True)
    assert cut is not None and not cut.counts
