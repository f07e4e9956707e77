"""`servedeck bench` on the command line, against the real test SSE server process."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tui.bench.history import read_history
from tui.cli import main
from tui.core import paths
from tui.core.audit import read_audit


def test_bench_json_export_and_save(sse_server: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main([
        "bench", "--url", sse_server, "--model", "m?itl_ms=2", "--concurrency", "1", "2",
        "--num-requests", "4", "--input-tokens", "16", "--output-tokens", "8", "--json", "--save",
    ])  # fmt: skip
    assert code == 0
    levels = json.loads(capsys.readouterr().out)
    assert [level["max_concurrency"] for level in levels] == [1, 2]
    assert all(level["completed"] == 4 and level["total_output_tokens"] == 32 for level in levels)
    assert levels[0]["median_ttft_ms"] > 0
    history = read_history()
    assert len(history) == 1 and history[0].preset == "quick"


def test_bench_table_output(sse_server: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bench", "--url", sse_server, "--model", "m", "--num-requests", "2",
                 "--input-tokens", "8", "--output-tokens", "4"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "TTFT p50" in out and "c=1" in out and "2/2" in out
    assert not read_history()  # not saved without --save


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--url", "http://127.0.0.1:9", "--preset", "nope"], "unknown preset 'nope'"),
        (["--url", "http://127.0.0.1:9", "--concurrency", "0"], "--concurrency must be positive"),
        (["--demo", "--preset", "nope"], "unknown preset 'nope'"),
    ],
)
def test_bench_usage_errors_are_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err


def _served_requests(url: str) -> float:
    """How many generations the test server has answered (its own /metrics count)."""
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return max(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if "_count" in line)


@pytest.mark.parametrize("how", ["--read-only", "profile", "--capacity"])
def test_read_only_refuses_a_benchmark_in_one_line_and_audits_it(
    how: str, sse_server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "ro.toml"
    profile.write_text(f'read_only = true\n[service]\nbase_url = "{sse_server}"\n')
    argv = {
        "--read-only": ["--url", sse_server, "--read-only"],
        "profile": ["-p", str(profile)],
        "--capacity": ["-p", str(profile), "--capacity", "--json"],
    }[how]
    assert main(["bench", *argv, "--num-requests", "1"]) == 3
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "read-only" in err and "refused" in err and "\n" not in err, err
    assert captured.out == "" and "Traceback" not in err
    assert _served_requests(sse_server) == 0, "not one request reached the server"
    (record,) = [r for r in read_audit() if r["event"] == "bench.refused"]
    what = "capacity search" if how == "--capacity" else "benchmark"
    assert record["action"] == what and record["reason"] == "read-only mode"


def test_unreachable_server_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--url", "http://127.0.0.1:9", "--num-requests", "1"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("servedeck: error: benchmark:") and "\n" not in err


def test_bench_quick_on_the_demo_saves_to_history(capsys: pytest.CaptureFixture[str]) -> None:
    """`--demo` loads a simulated box, benchmarks it through the same client, keeps the result."""
    code = main(
        ["bench", "--demo", "--num-requests", "3", "--output-tokens", "16", "--save", "--json"]
    )
    assert code == 0
    (level,) = json.loads(capsys.readouterr().out)
    assert level["completed"] == 3 and level["failed"] == 0
    assert read_history() == []  # the demo keeps its own history, apart from the real one
    with paths.demo_records():
        (saved,) = read_history()
    assert saved.context.profile == "demo" and saved.context.host == "simulator"
    assert saved.context.gpus.startswith("8 x NVIDIA RTX PRO 6000")


def test_bench_percentiles_in_json_and_report(
    sse_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench", "--url", sse_server, "--model", "m?itl_ms=2", "--num-requests", "4",
            "--input-tokens", "16", "--output-tokens", "8", "--percentiles", "50,90,95,99"]  # fmt: skip
    assert main([*argv, "--json"]) == 0
    level = json.loads(capsys.readouterr().out)[0]
    for metric in ("ttft", "tpot", "itl", "e2el"):
        assert all(f"p{p}_{metric}_ms" in level for p in (50, 90, 95, 99)), level.keys()
    assert level["total_token_throughput"] > level["output_throughput"] > 0
    assert level["servedeck"]["input_tok_s"] > 0
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines() if "saved to" not in line)
    head = next(line for line in out.splitlines() if line.startswith("c=1 ") and "p95" in line)
    assert head.split()[1:] == ["mean", "median", "p50", "p90", "p95", "p99"]
    assert any(line.startswith("  E2EL ms") for line in out.splitlines())
    assert any("input" in line and "total" in line for line in out.splitlines())
