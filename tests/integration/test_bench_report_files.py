"""`servedeck bench --report run.html --requests run.csv|run.jsonl` against the real test SSE
server; the HTML opened in the suite's real headless Chromium: its charts render, with no
console error and no request leaving the file."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.support.browser_support import chromium
from tui.cli import main


def _bench(url: str, *extra: str) -> int:
    return main([
        "bench", "--url", url, "--model", "m?ttft_ms=20&itl_ms=2", "--concurrency", "1", "4",
        "--num-requests", "8", "--input-tokens", "16", "--output-tokens", "200", *extra,
    ])  # fmt: skip


def test_requests_go_to_csv_and_jsonl_one_row_each(
    sse_server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows_csv, rows_jsonl = tmp_path / "run.csv", tmp_path / "run.jsonl"
    assert _bench(sse_server, "--requests", str(rows_csv)) == 0
    assert _bench(sse_server, "--requests", str(rows_jsonl)) == 0
    with rows_csv.open() as handle:
        table = list(csv.DictReader(handle))
    lines = [json.loads(line) for line in rows_jsonl.read_text().splitlines()]
    for rows in (table, lines):
        assert len(rows) == 16 and {str(r["concurrency"]) for r in rows} == {"1", "4"}
        assert all(str(r["success"]) == "True" for r in rows)
        assert all(float(r["ttst_ms"]) > float(r["ttft_ms"]) for r in rows)
    assert all(r["wait_ms"] is not None and r["send_lag_ms"] is not None for r in lines)
    assert all(r["prompt_tokens"] == 16 for r in lines)  # the server charged what was asked


def test_bad_report_paths_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv, message in (
        (["--report", str(tmp_path / "run.txt")], "expected a .html or .htm file"),
        (["--requests", str(tmp_path / "no" / "run.csv")], "No such file or directory"),
    ):
        assert main(["bench", "--url", "http://127.0.0.1:9", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and "\n" not in err and "Traceback" not in err


def test_the_html_report_renders_its_charts_offline_in_chromium(
    sse_server: str, tmp_path: Path
) -> None:
    report = tmp_path / "run.html"
    assert _bench(sse_server, "--report", str(report)) == 0
    html = report.read_text()
    assert "http://" not in html.replace(sse_server, "") and "https://" not in html
    errors: list[str] = []
    outside: list[str] = []
    with chromium() as context:
        page = context.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on(
            "request", lambda r: outside.append(r.url) if not r.url.startswith("file:") else None
        )
        page.goto(report.as_uri())
        charts = page.evaluate(
            "[...document.querySelectorAll('svg')].map(s => {"
            " const b = s.getBoundingClientRect();"
            " return [b.width, b.height, s.querySelectorAll('polyline').length]; })"
        )
        text = page.inner_text("body")
    assert not errors and not outside, (errors, outside)
    # 3 over concurrency + 3 over time for each level long enough (c=1: 8 x 0.4 s), each drawn
    assert len(charts) in (6, 9) and all(
        w > 100 and h > 100 and lines >= 1 for w, h, lines in charts
    )
    assert "Configuration" in text and "c=4" in text and "Server metrics per level" in text
