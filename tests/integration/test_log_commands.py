"""`servedeck logs` and `servedeck status` as a user runs them (a real subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FIXTURE = (
    Path(__file__).parents[1]
    / "support"
    / "fixtures"
    / "vllm-0.32-cpu"
    / "server_cold_fp32_model.log"
)


def _servedeck(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args], capture_output=True, text=True, timeout=60
    )


def _profile(tmp_path: Path) -> Path:
    path = tmp_path / "p.toml"
    path.write_text(
        f'name = "t"\n[service]\nlog_file = "{FIXTURE}"\nbase_url = "http://127.0.0.1:9"\n'
    )
    return path


def test_logs_prints_the_last_lines(tmp_path: Path) -> None:
    result = _servedeck("logs", "-n", "2", "--profile", str(_profile(tmp_path)))
    assert result.returncode == 0
    assert result.stdout.splitlines() == FIXTURE.read_text().splitlines()[-2:]


def test_status_json(tmp_path: Path) -> None:
    result = _servedeck("status", "--json", "--profile", str(_profile(tmp_path)))
    assert result.returncode == 1, result.stderr  # the server does not answer: not serving
    report = json.loads(result.stdout)
    assert report["load"]["phase"] == "stopped"
    assert report["load"]["facts"]["kv_cache_tokens"] == 2_097_152
    # The log ends with the server's stop: /health is not asked (a server answering it on
    # its way down was once taken for a finished load), and readiness is not claimed.
    assert not report["readiness"]["checked"] and not report["readiness"]["health_ok"]
    assert report["metrics"]["source"] == "log"
    assert report["engines"] is None  # the log's stats line names no engine: n/a, not []


def test_demo_status_and_logs_come_from_a_loaded_simulator() -> None:
    """`--demo` starts a simulated box, waits for its short load, then reports on it."""
    status = _servedeck("status", "--demo", "--json")
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert report["unit"]["active_state"] == "active"
    assert report["load"]["phase"] == "serving"
    assert report["readiness"]["health_ok"] is True
    assert [e["engine"] for e in report["engines"]] == ["0"] and report["engine_warnings"] == []
    logs = _servedeck("logs", "--demo", "-n", "500")
    assert logs.returncode == 0, logs.stderr
    assert "Application startup complete." in logs.stdout
    assert "Loading safetensors checkpoint shards" in logs.stdout
