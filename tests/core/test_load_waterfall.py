"""The after-ready waterfall as text (servedeck status): bars on one time axis, the
unlogged gaps apart, each step against this host's previous load of the model.

From a real vLLM 0.32 CPU load's log (tests/support/fixtures/vllm-0.32-cpu/server.log) and
from the simulator's load through the real CLI.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.cli_support import assert_fits, run
from tui.serving.load.explain import LoadExplainer
from tui.serving.load.history import earlier_loads, record_load
from tui.serving.load.tracker import LoadTracker
from tui.serving.load.waterfall import waterfall_lines

FIXTURE_LOG = Path(__file__).parents[1] / "support" / "fixtures" / "vllm-0.32-cpu" / "server.log"


def fixture_progress():  # type: ignore[no-untyped-def]
    tracker = LoadTracker()
    tracker.feed_many(FIXTURE_LOG.read_text().splitlines())
    return tracker.snapshot()


def test_waterfall_of_a_real_log_draws_each_step_where_it_started(tmp_path: Path) -> None:
    progress = fixture_progress()
    first_log_s = progress.timeline[0].started_at_s
    serving = next(s for s in progress.timeline if s.phase == "serving")
    explain = LoadExplainer().explain(
        progress, first_answer_at_s=serving.started_at_s + 2.5, process_started_at_s=first_log_s - 4
    )
    steps = explain.as_json()["waterfall"]
    lines = waterfall_lines(steps)
    for line in lines:
        print(line)
    assert len(lines) == len(steps) + 1
    assert lines[0].startswith("exec -> first log line") and lines[0].endswith("4.0 s gap")
    assert lines[-2].startswith("API up -> first answer") and lines[-2].endswith("2.5 s gap")
    gaps = [line for line in lines if line.endswith(" gap")]
    assert len(gaps) == sum(1 for step in steps if not step["logged"]) and "░" in gaps[0]
    assert all("█" in line for line in lines[:-1] if not line.endswith(" gap"))
    offsets = [line.index("|") + 1 + len(line.split("|")[1]) - len(line.split("|")[1].lstrip()) for line in lines[:-1]]  # fmt: skip
    assert offsets == sorted(offsets)  # a waterfall: each step starts at or after the last
    assert explain.wall_s is not None
    assert lines[-1].startswith("total") and f"{explain.wall_s:.0f} s" in lines[-1]
    assert all(len(line) + 2 <= 80 for line in lines)  # status indents it by 2

    # The next load of the model on this host: each step against the last one.
    history = tmp_path / "loads.jsonl"
    record_load("box", "tiny", explain, history)
    again = LoadExplainer().explain(
        progress,
        first_answer_at_s=serving.started_at_s + 1.0,
        earlier=earlier_loads("box", "tiny", history),
        process_started_at_s=first_log_s - 4,
    )
    assert [name for name, _ in again.earlier_steps_s] == [s["name"] for s in steps]
    compared = waterfall_lines(again.as_json()["waterfall"], again.earlier_steps_s)
    assert compared[-3].endswith("1.0 s gap  (last load 2.5 s)")
    assert "(last load " in compared[-1]
    assert all(len(line) + 2 <= 80 for line in compared)
    assert waterfall_lines([]) == []


def test_status_prints_the_simulated_loads_waterfall(cli_env: dict[str, str]) -> None:
    text = run(cli_env, "status", "--demo")
    assert text.returncode == 0, text.stderr
    print(text.stdout)
    lines = text.stdout.splitlines()
    why = next(i for i, line in enumerate(lines) if line.startswith("why "))
    bars = [line for line in lines if line.startswith("  ") and line.count("|") == 2]
    assert any(line.startswith("  weights ") for line in bars)
    total = next(line for line in lines if line.startswith("  total "))
    assert "unlogged" in total
    assert lines.index(bars[0]) > why and lines.index(total) > lines.index(bars[-1])
    assert text.stdout.rstrip().endswith("verdict serving")
    assert_fits(text.stdout, "status --demo")
