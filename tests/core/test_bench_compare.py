"""`servedeck bench compare A B`: configuration diff, per-metric change, noise as no change."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tui.bench.compare import compare_runs, config_diff, find_run
from tui.bench.history import append_result
from tui.bench.metrics import summarize_level
from tui.bench.model import BenchResult, RequestOutcome, RunContext
from tui.cli import main
from tui.core.errors import UsageError


def _run(run_id: str, tpot_s: float, *, jitter: float = 0.02, tp: int = 8) -> BenchResult:
    """A run of 40 requests whose TPOTs spread by `jitter` around `tpot_s`."""
    tokens = 64
    outcomes = []
    for i in range(40):
        tpot = tpot_s * (1 + jitter * ((i % 5) - 2) / 2)
        outcomes.append(
            RequestOutcome(
                success=True, start_s=0.0, ttft_s=0.2, latency_s=0.2 + tpot * (tokens - 1),
                itl_s=[tpot] * (tokens - 1), output_tokens=tokens, chunks=tokens,
                prompt_tokens=128, usage_seen=True, end_s=0.2 + tpot * (tokens - 1),
            )
        )  # fmt: skip
    level = summarize_level(
        outcomes, concurrency=8, request_rate=None, burstiness=1.0, num_requests=40,
        duration_s=5 * (0.2 + tpot_s * (tokens - 1)),
    )  # fmt: skip
    context = RunContext(profile="p", host="h", model="m", engine_version="0.33.0", tp=tp,
                         config_hash=f"hash-tp{tp}")  # fmt: skip
    return BenchResult(
        run_id=run_id, started_at="2026-11-30T16:00:00+00:00", preset="sweep",
        endpoint="completions", input_tokens=128, output_tokens=64, temperature=0.0,
        ignore_eos=True, context=context, levels=(level,),
    )  # fmt: skip


def test_a_change_inside_the_noise_is_no_change() -> None:
    a, same, faster = _run("a", 0.0200), _run("b", 0.0201), _run("c", 0.0150, tp=4)
    verdicts = {c.metric: c.verdict for c in compare_runs(a, same)}
    assert set(verdicts.values()) == {"no change"}, verdicts
    moved = {c.metric: c for c in compare_runs(a, faster)}
    assert moved["TPOT mean ms"].verdict == "better" and moved["output tok/s"].verdict == "better"
    assert moved["TTFT mean ms"].verdict == "no change"
    assert moved["output tok/s"].change_pct > 20
    assert config_diff(a, faster) == [("tp", "8", "4"), ("config_hash", "hash-tp8", "hash-tp4")]


def test_repeat_runs_widen_the_noise() -> None:
    a, b = _run("a", 0.0200, jitter=0.0), _run("b", 0.0203, jitter=0.0)
    (tpot,) = [c for c in compare_runs(a, b) if c.metric == "TPOT mean ms"]
    assert tpot.verdict == "worse"  # no spread within either run: any change counts
    repeats = [a, _run("r", 0.0206, jitter=0.0), b]
    (tpot,) = [c for c in compare_runs(a, b, repeats) if c.metric == "TPOT mean ms"]
    assert tpot.verdict == "no change" and tpot.noise == pytest.approx(0.3, abs=0.01)


def test_find_run_by_prefix_or_position() -> None:
    runs = [_run("abc123", 0.02), _run("abd456", 0.02)]
    assert find_run(runs, "abc").run_id == "abc123" and find_run(runs, "-1").run_id == "abd456"
    for key, words in [("ab", "2 runs"), ("zz", "no run"), ("-3", "only 2 runs")]:
        with pytest.raises(UsageError, match=words):
            find_run(runs, key)


def test_cli_compare_prints_diff_and_verdicts(capsys: pytest.CaptureFixture[str]) -> None:
    append_result(_run("aaaa", 0.0200))
    append_result(replace(_run("bbbb", 0.0150, tp=4)))
    assert main(["bench", "compare", "-2", "-1"]) == 0
    out = capsys.readouterr().out
    assert "tp: 8 -> 4" in out and "better" in out and "no change" in out
    assert main(["bench", "compare", "aaaa", "bbbb", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["config_diff"][0] == {"field": "tp", "a": "8", "b": "4"}
    assert main(["bench", "compare", "aaaa"]) == 2
    assert "usage: servedeck bench compare A B" in capsys.readouterr().err
