"""Unit state parsing and guarded service actions.

The container running the tests has no systemd as PID 1, so the real
`systemctl` can only show its failure; the action tests run a small stand-in
`systemctl` script (through the real LocalHost) that records its argv.
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tui.core.audit import read_audit
from tui.core.errors import ServedeckError
from tui.hosts.local import LocalHost
from tui.serving.unit.service import (
    ServiceController,
    SystemdService,
    describe_action,
    parse_systemctl_show,
    perform_action,
    read_unit_state,
)

SHOW = """\
NRestarts=2
MainPID=4242
ExecMainStartTimestamp=@1795969888
ActiveState=active
Id=vllm-kimi-k25-int4.service
ControlGroup=/system.slice/vllm-kimi-k25-int4.service
SubState=running
Result=success
LoadState=loaded
Description=vLLM: Kimi-K2.5 INT4 (TP=8)
ExecMainStatus=0
"""


def test_parse_by_key_not_position() -> None:
    state = parse_systemctl_show("x.service", SHOW)
    assert state.unit == "vllm-kimi-k25-int4.service"
    assert (state.active_state, state.sub_state, state.result) == ("active", "running", "success")
    assert state.main_pid == 4242 and state.n_restarts == 2
    assert state.started_at_s == 1795969888.0
    assert state.control_group == "/system.slice/vllm-kimi-k25-int4.service"
    assert state.is_active and state.exists and not state.is_failed


def test_parse_stopped_and_missing_units() -> None:
    stopped = parse_systemctl_show(
        "a.service",
        "ActiveState=failed\nMainPID=0\nExecMainStartTimestamp=\nLoadState=loaded\nResult=exit-code\n",
    )
    assert stopped.is_failed and stopped.main_pid is None and stopped.started_at_s is None
    missing = parse_systemctl_show("b.service", "LoadState=not-found\nActiveState=inactive\n")
    assert not missing.exists


def test_parse_human_timestamp() -> None:
    state = parse_systemctl_show(
        "a.service", "ExecMainStartTimestamp=Sun 2026-11-29 16:31:28 UTC\n"
    )
    assert state.started_at_s == pytest.approx(1795969888.0)


async def test_real_systemctl_failure_is_one_line() -> None:
    with pytest.raises(ServedeckError) as caught:
        await read_unit_state(LocalHost(), "vllm.service")
    assert "\n" not in str(caught.value) and "vllm.service" in str(caught.value)


@pytest.fixture
def fake_systemctl(tmp_path: Path) -> tuple[str, Path]:
    record = tmp_path / "calls.txt"
    script = tmp_path / "systemctl"
    script.write_text(
        f'#!/bin/sh\necho "$@" >> {record}\n'
        'if [ "$1" = show ]; then\n'
        '  printf "ActiveState=activating\\nSubState=start\\nMainPID=77\\n"\nfi\n'
        'if [ "$1" = stop ]; then echo "Job for $2 failed." >&2; exit 1; fi\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script), record


def test_describe_action_with_sudo() -> None:
    action = describe_action("gpu-box", "vllm.service", "restart", use_sudo=True)
    assert action.argv == ("sudo", "-n", "systemctl", "restart", "vllm.service")
    assert action.command_line == "sudo -n systemctl restart vllm.service"
    with pytest.raises(ServedeckError):
        describe_action("gpu-box", "vllm.service", "kill")


async def test_actions_refused_and_audited(fake_systemctl: tuple[str, Path]) -> None:
    systemctl, record = fake_systemctl
    host = LocalHost("box")
    with pytest.raises(ServedeckError, match="read-only"):
        await perform_action(
            host, "vllm.service", "stop", confirmed=True, read_only=True, systemctl=systemctl
        )
    with pytest.raises(ServedeckError, match="not confirmed"):
        await perform_action(
            host, "vllm.service", "stop", confirmed=False, read_only=False, systemctl=systemctl
        )
    assert not record.exists()  # nothing ran
    events = [r["event"] for r in read_audit()]
    assert events == ["service.refused", "service.refused"]


async def test_controller_runs_and_audits(fake_systemctl: tuple[str, Path]) -> None:
    systemctl, record = fake_systemctl
    service = SystemdService(LocalHost("box"), "vllm.service", systemctl=systemctl)
    assert isinstance(service, ServiceController)
    state = await service.state()
    assert (state.active_state, state.main_pid) == ("activating", 77)
    started = await service.restart(confirmed=True)
    assert started.ok
    stopped = await service.stop(confirmed=True)
    assert not stopped.ok and stopped.message == "Job for vllm.service failed."
    assert record.read_text().splitlines()[1:] == ["restart vllm.service", "stop vllm.service"]
    records = list(read_audit())
    assert [r["event"] for r in records] == [
        "service.request",
        "service.outcome",
        "service.request",
        "service.outcome",
    ]
    assert records[1]["ok"] is True and records[3]["ok"] is False
    assert records[0]["host"] == "box" and records[0]["command"].endswith("restart vllm.service")
