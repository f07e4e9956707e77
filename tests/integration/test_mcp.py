"""`servedeck mcp` driven by the MCP SDK's own client, against the real server process.

The server is always `python -m tui mcp` as a subprocess on the simulator (`--demo`: a
real SimBox, its processes and HTTP server), reached with `mcp.ClientSession` over
stdio (`stdio_client`) or streamable HTTP (`streamable_http_client`); one test reads a
log over the real sshd of tests/support. Nothing here is mocked.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from tests.support.cli_support import REPO, closed_port
from tests.support.sshd_fixtures import SshdPair
from tui.core import paths
from tui.core.audit import read_audit
from tui.core.config import demo_profile
from tui.core.redact import REDACTED
from tui.record.model import Event
from tui.record.where import recording_path
from tui.record.writer import Recorder

READ_TOOLS = {
    "status", "gpus", "processes", "log_tail", "log_search", "timeline", "health", "plan",
    "handoff", "bench_history", "capacity_history", "start_benchmark",
}  # fmt: skip
ACTION_TOOLS = {"stop", "restart", "kill_leftovers"}
BEARER = "eyPlantedBearerToken0123456789"
HF_TOKEN = "hf_PlantedLogToken0123456789abcdef"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The test's own servedeck folders (set by conftest) and a TMPDIR where the box lives."""
    (tmp_path / "tmp").mkdir()
    return {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp_path / "tmp")}


@asynccontextmanager
async def stdio_session(
    env: dict[str, str], errlog: Path, *args: str
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tui", "mcp", *args], env=env, cwd=str(REPO)
    )
    with errlog.open("w") as err:
        async with stdio_client(params, errlog=err) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's structured result; fails the test on an error result."""
    result = await session.call_tool(tool, arguments)
    assert not result.isError, (tool, result.content)
    assert result.structuredContent is not None, tool
    return result.structuredContent


async def refused(session: ClientSession, tool: str, **arguments: Any) -> str:
    """A tool's error result: one line."""
    result: CallToolResult = await session.call_tool(tool, arguments)
    assert result.isError, (tool, result.structuredContent)
    text = result.content[0].text  # type: ignore[union-attr]
    assert "\n" not in text and "Traceback" not in text, text
    return text


def demo_audit() -> list[dict[str, Any]]:
    with paths.demo_records():
        return list(read_audit())


def plant_secrets(env: dict[str, str]) -> None:
    """Lines with secrets in the simulated box's own log (the box the server started)."""
    (log,) = Path(env["TMPDIR"]).glob("servedeck-sim-*/server.log")
    with log.open("a") as out:
        out.write(
            f"(APIServer pid=1) INFO 01-01 00:00:00 [x.py:1] Authorization: Bearer {BEARER}\n"
        )
        out.write(f"(APIServer pid=1) ERROR 01-01 00:00:00 [x.py:1] env HF_TOKEN={HF_TOKEN}\n")


def record_one_event() -> None:
    with paths.demo_records():
        db = recording_path(demo_profile())
    db.parent.mkdir(parents=True, exist_ok=True)
    with Recorder(db, host_label="simulator") as recorder:
        recorder.add_event(Event(time.time(), "action", "audit", "restart asked", key="k1"))


async def test_stdio_lists_the_tools_and_answers_each_read_tool_redacted(
    env: dict[str, str], tmp_path: Path
) -> None:
    record_one_event()
    errlog = tmp_path / "stderr.txt"
    async with stdio_session(env, errlog, "--demo") as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) == READ_TOOLS  # read-only by default: no action offered
        assert all(tool.outputSchema for tool in tools.values())
        plant_secrets(env)

        status = await call(session, "status")
        assert status["serving"] and status["ready"] and status["load_phase"] == "serving"
        assert status["identity"]["boot_id"] and status["unit_state"] == "active"
        gpus = await call(session, "gpus")
        assert gpus["available"] and gpus["gpu_count"] == 8
        procs = await call(session, "processes")
        assert {entry["klass"] for entry in procs["processes"]} == {"service"}
        tail = await call(session, "log_tail", lines=20)
        assert any("Authorization: Bearer" in line for line in tail["lines"])
        found = await call(session, "log_search", pattern="hf_token")
        assert len(found["matches"]) == 1 and found["scanned_lines"] > 20
        # the search runs over the redacted lines: the secret itself is not there to find
        assert (await call(session, "log_search", pattern=BEARER[:12]))["matches"] == []
        timeline = await call(session, "timeline", since="1h", kind="action")
        assert [event["text"] for event in timeline["events"]] == ["restart asked"]
        health = await call(session, "health")
        assert health["verdict"] in ("ok", "warn", "crit") and health["hardware"]["gpus"]
        plan = await call(session, "plan", max_model_len=8192)
        assert plan["model"] and plan["plan"]["layouts"]
        handoff = await call(session, "handoff")
        assert handoff["markdown"].startswith("# State summary: demo")
        assert (await call(session, "bench_history"))["runs"] == []
        assert (await call(session, "capacity_history"))["searches"] == []
        bench = await call(session, "start_benchmark", timeout_s=120)
        assert bench["preset"] == "quick" and "requests ok" in bench["summary"]
        runs = (await call(session, "bench_history"))["runs"]
        assert [run["run_id"] for run in runs] == [bench["run_id"]]

        every = json.dumps([status, tail, found, handoff, procs])
        assert BEARER not in every and HF_TOKEN not in every
        assert REDACTED in json.dumps(tail)

        # bounds and refusals: one line each, and the server goes on answering
        assert "less than or equal to 2000" in await refused(session, "log_tail", lines=5000)
        assert "kind must be one of" in await refused(session, "timeline", kind="nope")
        for tool in ACTION_TOOLS:
            assert "--allow-actions" in await refused(session, tool, boot_id="x")
        assert (await call(session, "gpus"))["gpu_count"] == 8
    assert "Traceback" not in errlog.read_text()
    refusals = [r for r in demo_audit() if r["event"] == "mcp.refused"]
    assert {r["action"] for r in refusals} == ACTION_TOOLS
    assert all(r.get("via") == "mcp" for r in refusals)
    bench_records = [r for r in demo_audit() if r["event"].startswith("fleet.bench")]
    assert bench_records and all(r.get("via") == "mcp" for r in bench_records)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


async def test_actions_take_the_identity_they_act_on_and_are_audited_via_mcp(
    env: dict[str, str], tmp_path: Path
) -> None:
    errlog = tmp_path / "stderr.txt"
    async with stdio_session(env, errlog, "--demo", "--allow-actions") as session:
        tools = {tool.name for tool in (await session.list_tools()).tools}
        assert tools == READ_TOOLS | ACTION_TOOLS
        boot_id = (await call(session, "status"))["identity"]["boot_id"]

        assert "rebooted or is another machine" in await refused(session, "stop", boot_id="0" * 36)
        assert (await call(session, "status"))["unit_state"] == "active"  # not stopped
        stopped = await call(session, "stop", boot_id=boot_id)
        assert stopped["ok"] and stopped["verb"] == "stop"
        listing = await call(session, "processes")
        left = [e for e in listing["processes"] if e["klass"] == "leftover"]
        assert left and sorted(listing["leftover_pids"]) == sorted(e["pid"] for e in left)
        # the start time the agent saw is not the process's: refused, nothing signalled
        stale = [{"pid": left[0]["pid"], "start_ticks": left[0]["start_ticks"] + 1}]
        why = await refused(session, "kill_leftovers", boot_id=boot_id, targets=stale)
        assert "another process has that pid now" in why
        assert all(_alive(entry["pid"]) for entry in left)
        # restart is guarded while the leftovers hold the GPUs
        assert "leftover" in await refused(session, "restart", boot_id=boot_id)
        targets = [{"pid": e["pid"], "start_ticks": e["start_ticks"]} for e in left]
        killed = await call(session, "kill_leftovers", boot_id=boot_id, targets=targets)
        assert killed["all_ended"], killed
        assert {o["outcome"] for o in killed["outcomes"]} <= {"terminated", "killed"}
        assert not any(_alive(entry["pid"]) for entry in left)
        assert (await call(session, "restart", boot_id=boot_id))["ok"]
    assert "Traceback" not in errlog.read_text()
    records = demo_audit()
    events = [r["event"] for r in records]
    for event in ("mcp.refused", "service.request", "kill-request", "kill-outcome"):
        assert event in events, events
    assert all(r.get("via") == "mcp" for r in records)
    stale_refusal = [r for r in records if "another process" in str(r.get("reason"))]
    assert stale_refusal and stale_refusal[0]["targets"] == stale


class HttpServer:
    """`servedeck mcp --http --port 0` as a process; its stderr lines as they come."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tui", "mcp", "--http", "--port", "0", *args],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []

    def wait_for(self, pattern: str, timeout_s: float = 60) -> re.Match[str]:
        assert self.process.stderr is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            line = self.process.stderr.readline()
            if not line:
                break
            self.lines.append(line)
            found = re.search(pattern, line)
            if found:
                return found
        raise AssertionError(f"no {pattern!r} in {self.lines}")

    def stop(self) -> tuple[int, str]:
        self.process.terminate()
        _, rest = self.process.communicate(timeout=60)
        return self.process.returncode, "".join(self.lines) + rest


@pytest.fixture
def http_server(env: dict[str, str]) -> Iterator[HttpServer]:
    server = HttpServer(env, "--demo")
    try:
        yield server
    finally:
        if server.process.poll() is None:
            server.stop()


async def test_http_refuses_a_missing_or_wrong_token_and_serves_the_right_one(
    http_server: HttpServer,
) -> None:
    url = http_server.wait_for(r"listening on (http://127\.0\.0\.1:\d+/mcp)").group(1)
    token = http_server.wait_for(r"token \(shown once\): (\S+)").group(1)
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=30) as plain:
        for auth in (
            {},
            {"Authorization": "Bearer wrong-token-0123456789"},
            {"Authorization": token},
        ):
            answer = await plain.post(url, json=hello, headers={**headers, **auth})
            assert answer.status_code == 401, (auth, answer.text)
            assert answer.headers["www-authenticate"].startswith("Bearer")
    client = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    async with client, streamable_http_client(url, http_client=client) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            assert {t.name for t in (await session.list_tools()).tools} == READ_TOOLS
            status = await call(session, "status")
            assert status["serving"] and status["host"] == "simulator"
    code, stderr = http_server.stop()
    assert code == 0, stderr
    assert "Traceback" not in stderr
    assert stderr.count(token) == 1  # printed once, never again


async def test_an_unreachable_host_is_a_one_line_tool_error_and_the_server_goes_on(
    env: dict[str, str], tmp_path: Path
) -> None:
    profile = tmp_path / "down.toml"
    profile.write_text(
        f'name = "down"\n[host]\nkind = "ssh"\nhostname = "127.0.0.1"\nport = {closed_port()}\n'
        'user = "nobody"\nconnect_timeout_s = 3\n'
        f'[service]\nunit = "vllm.service"\nbase_url = "http://127.0.0.1:{closed_port()}"\n'
    )
    errlog = tmp_path / "stderr.txt"
    async with stdio_session(env, errlog, "-p", str(profile)) as session:
        for tool in ("gpus", "processes", "log_tail"):
            assert "127.0.0.1" in await refused(session, tool)
        health = await call(session, "health")  # a state: nothing known, said so
        assert health["verdict"] == "unknown" and health["interconnect_problems"] is None
        status = await call(session, "status")
        assert status["host_reachable"] is False and status["identity"] is None
        assert status["serving"] is False and status["errors"]
    assert "Traceback" not in errlog.read_text()


@pytest.mark.sshd
@pytest.mark.usefixtures("private_home")
async def test_log_tail_over_ssh_is_redacted(
    sshd: SshdPair, env: dict[str, str], tmp_path: Path
) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(
        "(APIServer pid=1) INFO 01-01 00:00:00 [x.py:1] loading\n"
        f"(APIServer pid=1) INFO 01-01 00:00:01 [x.py:1] env HF_TOKEN={HF_TOKEN}\n"
    )
    profile = tmp_path / "remote.toml"
    text = sshd.profile_toml(sshd.host_config(), "remote")
    profile.write_text(text + f'[service]\nlog_file = "{log}"\nbase_url = "http://127.0.0.1:1"\n')
    remote_env = {**env, "HOME": os.environ["HOME"]}  # the private HOME: no stale known_hosts
    async with stdio_session(remote_env, tmp_path / "err.txt", "-p", str(profile)) as session:
        tail = await call(session, "log_tail", lines=10)
    assert tail["source"] == str(log)
    assert len(tail["lines"]) == 2 and "loading" in tail["lines"][0]
    assert HF_TOKEN not in json.dumps(tail) and REDACTED in tail["lines"][1]
