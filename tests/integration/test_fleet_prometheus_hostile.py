"""`servedeck fleet --prometheus` against a hostile server (tests/support/hostile_prometheus.py,
a real HTTP process): a trickle, an endless body, a gzip bomb, 100,000 hosts, escape
sequences in label values and absurd figures. Each ends as rows or one line (exit 3),
within the deadline and a bounded memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

SERVER = Path(__file__).resolve().parents[1] / "support" / "hostile_prometheus.py"
ROOT = SERVER.parents[2]
MAX_RSS_BYTES = 200 * 1024**2

# Runs the CLI as its only child, so RUSAGE_CHILDREN's peak is the CLI's own.
_MEASURE = """
import json, resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=90)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"rc": done.returncode, "out": done.stdout, "err": done.stderr, "rss": peak}))
"""


class Run:
    def __init__(self, found: dict[str, object], took_s: float) -> None:
        self.returncode = int(found["rc"])  # type: ignore[call-overload]
        self.stdout = str(found["out"])
        self.stderr = str(found["err"])
        self.max_rss_bytes = int(found["rss"])  # type: ignore[call-overload]
        self.took_s = took_s


def fleet(url: str, *args: str) -> Run:
    started = time.monotonic()
    argv = [sys.executable, "-c", _MEASURE, sys.executable, "-m", "tui", "fleet"]
    done = subprocess.run(
        [*argv, "--prometheus", url, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    return Run(json.loads(done.stdout), time.monotonic() - started)


@pytest.fixture
def hostile() -> Iterator[Callable[[str], str]]:
    """`hostile(mode)` -> the URL of a server answering every query that way."""
    servers: list[subprocess.Popen[str]] = []

    def start(mode: str) -> str:
        server = subprocess.Popen(
            [sys.executable, str(SERVER), mode], stdout=subprocess.PIPE, text=True
        )
        servers.append(server)
        assert server.stdout is not None
        port = server.stdout.readline().strip()
        assert port.isdigit(), f"hostile server {mode} did not start"
        return f"http://127.0.0.1:{port}"

    yield start
    for server in servers:
        server.kill()
        server.wait()


def one_line_exit_3(run: Run) -> None:
    assert run.returncode == 3, run.stderr
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr
    assert run.stdout == ""


def test_a_trickling_server_ends_at_the_deadline(hostile: Callable[[str], str]) -> None:
    """A byte every 2 s never trips a 5 s read timeout: the query's deadline ends it."""
    run = fleet(hostile("trickle"), "--timeout", "3", "--json")
    one_line_exit_3(run)
    assert "no whole answer within 3 s" in run.stderr
    assert run.took_s < 15  # 3 s, plus two interpreters starting on a busy machine


def test_an_endless_body_stops_at_the_cap_in_bounded_memory(
    hostile: Callable[[str], str],
) -> None:
    run = fleet(hostile("endless"), "--json")
    one_line_exit_3(run)
    assert "Prometheus answer over 32 MiB" in run.stderr
    assert run.max_rss_bytes < MAX_RSS_BYTES, run.max_rss_bytes


def test_a_gzip_bomb_stops_at_the_cap_in_bounded_memory(hostile: Callable[[str], str]) -> None:
    """Half a MiB on the wire, 512 MiB once inflated: the cap counts the inflated bytes."""
    run = fleet(hostile("gzip-bomb"), "--json")
    one_line_exit_3(run)
    assert "Prometheus answer over 32 MiB" in run.stderr
    assert run.max_rss_bytes < MAX_RSS_BYTES, run.max_rss_bytes


def test_100k_hosts_are_bounded_and_counted(hostile: Callable[[str], str]) -> None:
    run = fleet(hostile("many"), "--json")
    assert run.returncode == 0, run.stderr
    rows = json.loads(run.stdout)
    assert len(rows) == 5_000 and rows[0]["host"] == "h000000" and rows[0]["gpu_count"] == 8
    assert "95,000 more hosts left out (at most 5,000)" in run.stderr
    assert run.max_rss_bytes < MAX_RSS_BYTES, run.max_rss_bytes


def test_a_result_that_is_not_a_list_is_one_line(hostile: Callable[[str], str]) -> None:
    run = fleet(hostile("shape"), "--json")
    one_line_exit_3(run)
    assert "data.result is not a list" in run.stderr


def test_label_escapes_never_reach_the_terminal_and_absurd_figures_are_na(
    hostile: Callable[[str], str],
) -> None:
    url = hostile("labels")
    for output in ((), ("--markdown",)):
        run = fleet(url, *output)
        assert run.returncode == 0, run.stderr
        printed = run.stdout + run.stderr
        assert "\x1b" not in printed and "\x07" not in printed and "\r" not in printed
        assert not any(line.startswith("forged-row") for line in printed.splitlines())
        # shown escaped (Markdown writes a cell's line breaks as spaces: one line a cell)
        assert "evil\\x1b[2J\\x1b[31mbox" in run.stdout and "active\\x1b[2K" in run.stdout
        assert "e+308" not in printed and "inf" not in printed.lower()
        assert len(max(printed.split(), key=len)) < 80  # no 316-digit byte count
    text = fleet(url).stdout
    assert "8 GPUs n/a," in text  # 1e308 MiB of GPU memory is not a size
    assert "box\\nforged-row" in text and "active\\x1b[2K\\rfailed" in text
    as_json = {row["host"]: row for row in json.loads(fleet(url, "--json").stdout)}
    evil = next(row for host, row in as_json.items() if host.startswith("evil"))
    assert evil["gpu_count"] == 8
    for key in ("gpu_mem_used_bytes", "gpu_mem_total_bytes", "power_w", "temp_c_max", "kv_pct"):
        assert evil[key] is None, key
    assert as_json["plain-box"]["power_w"] is None  # 2 MW on one host
    assert as_json["plain-box"]["gen_tok_s"] is None and as_json["plain-box"]["gpu_count"] == 4
