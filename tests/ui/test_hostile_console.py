"""The console and `status` against hostile input: a 1 MB log line and NaN metrics
(issue 16). A real log file, a real HTTP server process, the real app under Pilot.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.integration.test_bench_broken_sse import _start
from tui.app import ServedeckApp
from tui.cli import main
from tui.core.config import load_profile_file
from tui.deck import Deck
from tui.hosts.local import LocalHost
from widgets.log_pane import LogPane


def _profile(tmp_path: Path, log_lines: list[str], base_url: str = "http://127.0.0.1:9") -> Path:
    log = tmp_path / "vllm.log"
    log.write_text("".join(line + "\n" for line in log_lines))
    path = tmp_path / "hostile.toml"
    path.write_text(f'[service]\nlog_file = "{log}"\nbase_url = "{base_url}"\n')
    return path


def test_status_shows_nan_and_inf_metrics_as_not_available(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    process, url = _start("int")
    try:
        profile = _profile(tmp_path, [], base_url=url)
        assert main(["status", "-p", str(profile)]) == 0
        text = capsys.readouterr().out
        assert main(["status", "-p", str(profile), "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert "metrics running n/a, waiting n/a, KV n/a" in text
    metrics = report["metrics"]
    assert (metrics["running_reqs"], metrics["waiting_reqs"]) == (None, None)


async def test_a_1_mb_log_line_leaves_the_console_responsive(tmp_path: Path) -> None:
    head = "(APIServer pid=1) INFO 11-29 10:00:00 [api.py:1] vLLM server version 0.33.0, serving m"
    profile = load_profile_file(
        _profile(tmp_path, [head, "Engine 000: Avg prompt throughput: " + "7" * 1024 * 1024])
    )
    app = ServedeckApp(profile, Deck(profile, LocalHost()), overview_interval_s=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 60
        pane = app.query_one(LogPane)
        while time.monotonic() < deadline and not any(len(x.text) > 1e6 for x in pane.buffer):
            await pilot.pause(0.1)
        assert any(len(line.text) > 1e6 for line in pane.buffer), "the long line never arrived"
        assert app.tracker.phase == "starting"  # and went through the load tracker
        started = time.monotonic()
        await pilot.press("q")
        await pilot.pause()
    assert time.monotonic() - started < 30


def test_the_load_strip_shows_nan_metrics_as_not_available() -> None:
    from tui.serving.metrics import compute_metrics, parse_metrics
    from widgets.load_strip import render_strip

    page = (
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running NaN\n"
        "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting +Inf\n"
    )
    metrics = compute_metrics(parse_metrics(page, at_s=1.0))
    text = render_strip(None, metrics).plain
    assert "run n/a  wait n/a" in text
