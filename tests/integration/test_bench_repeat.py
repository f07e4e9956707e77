"""`servedeck bench --repeat N [--settle PCT]` against a real simulated server: the runs'
spread per level and figure in the JSON, the text report and the HTML report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tui.cli import main
from tui.sim.box import SimBox

pytestmark = pytest.mark.quiet  # runs compared against each other on the simulator's clock
SMALL = ["--num-requests", "6", "--input-tokens", "8", "--output-tokens", "6"]


def test_repeat_reports_each_figures_spread_across_runs(
    serving_box: SimBox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "run.html"
    code = main([
        "bench", "--url", serving_box.base_url, "--concurrency", "1", "2", "--repeat", "3",
        *SMALL, "--json", "--report", str(page),
    ])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    levels = json.loads(captured.out)
    assert [level["max_concurrency"] for level in levels] == [1, 2]
    for level in levels:
        repeat = level["servedeck"]["repeat"]
        assert (repeat["runs"], repeat["asked"], repeat["stopped"]) == (3, 3, "all runs")
        figures = {f["figure"]: f for f in repeat["figures"]}
        tok_s = figures["output_tok_s"]
        assert len(tok_s["values"]) == 3 and all(v > 0 for v in tok_s["values"])
        assert tok_s["min"] <= tok_s["median"] <= tok_s["max"]
        assert tok_s["low"] <= sum(tok_s["values"]) / 3 <= tok_s["high"]
        # the last run's own figures are the level's
        assert level["output_throughput"] == tok_s["values"][-1]
        assert {"ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "itl_p99_ms"} <= set(figures)
    html = page.read_text()
    assert "<h2>Repeated runs</h2>" in html and "repeated runs: 3 of 3" in html


def test_settle_stops_once_the_last_runs_agree(
    serving_box: SimBox, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([
        "bench", "--url", serving_box.base_url, "--repeat", "6", "--settle", "1000", *SMALL,
    ])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "repeated runs: 3 of 6, settle within 1000% (settled after 3 runs)" in out
    assert "    out tok/s " in out and "    TTFT p50 " in out and "spread " in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--repeat", "3", "--capacity"], "--repeat is not for --capacity: each search picks"),
        (["--repeat", "3", "--settle", "5"], "--settle needs --repeat 4 or more"),
        (["--repeat", "0"], "--repeat must be positive"),
        (["--repeat", "2", "--requests", "r.csv"], "--requests is for one run"),
    ],
)
def test_repeat_refusals_are_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "--url", "http://127.0.0.1:9", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err, err
