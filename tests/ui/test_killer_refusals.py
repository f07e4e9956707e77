"""Refusals happen before any dialog, in one function for the CLI and the console, and
every refusal is audited, read-only ones included (issue 16).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.support.console_support import REPO, local_console
from tui.app import ServedeckApp
from tui.core.audit import read_audit
from tui.core.config import load_profile_file
from tui.deck import Deck
from tui.hosts.local import LocalHost
from tui.procs import GpuMemoryShare, GpuProcess, ProcIdentity
from tui.procs.kill import ReadOnlyError, refuse_before_asking
from tui.screens.kill_confirm import KillConfirmScreen


def _proc(pid: int, klass: str = "leftover") -> GpuProcess:
    return GpuProcess(
        identity=ProcIdentity("boot-1", pid, 100),
        klass=klass,
        reason="test",
        ppid=0 if pid == 1 else 1,
        state="S",
        user="root",
        uid=0,
        start_time_s=1.0,
        command="VLLM::Worker_TP0",
        cgroup="/",
        gpus=(GpuMemoryShare(0, 1024),),
    )


def test_pid_1_and_defunct_are_refused_and_audited_before_asking() -> None:
    allowed, refused = refuse_before_asking(
        "box", [_proc(1), _proc(4242), _proc(77, "defunct"), _proc(88, "foreign")],
        read_only=False, action="kill",
    )  # fmt: skip
    assert [proc.pid for proc in allowed] == [4242, 88]  # foreign: confirmed in the dialog
    assert set(refused) == {1, 77}
    record = list(read_audit())[-1]
    assert record["event"] == "kill-refused"
    assert sorted(target["pid"] for target in record["targets"]) == [1, 77]


def test_read_only_refuses_everything_and_audits_it() -> None:
    with pytest.raises(ReadOnlyError):
        refuse_before_asking("box", [_proc(4242)], read_only=True, action="kill")
    record = list(read_audit())[-1]
    assert record["event"] == "kill-refused" and record["reason"] == "read-only"


async def test_console_never_offers_a_dialog_for_pid_1() -> None:
    app, _ = local_console(overview_interval_s=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        app.procs.confirm_kill([_proc(1)])
        await pilot.pause()
        assert not any(isinstance(screen, KillConfirmScreen) for screen in app.screen_stack)
        assert list(read_audit())[-1]["targets"][0]["pid"] == 1
        app.procs.confirm_kill([_proc(1), _proc(4242)])
        await pilot.pause()
        dialogs = [s for s in app.screen_stack if isinstance(s, KillConfirmScreen)]
        assert len(dialogs) == 1
        assert [proc.pid for proc in dialogs[0].targets] == [4242]


async def test_read_only_console_refusals_are_audited() -> None:
    profile = replace(load_profile_file(REPO / "profiles" / "local-vllm.toml"), read_only=True)
    app = ServedeckApp(profile, Deck(profile, LocalHost()), overview_interval_s=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        app.procs.confirm_kill([_proc(4242)])
        await pilot.pause()
        assert not any(isinstance(screen, KillConfirmScreen) for screen in app.screen_stack)
        events = [record["event"] for record in read_audit()]
        assert events[-1] == "kill-refused"
        app.action_service("stop")
        await pilot.pause()
        record = list(read_audit())[-1]
        assert record["event"] == "service.refused" and record["reason"] == "read-only mode"


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_kill_timeout_must_be_finite_and_positive(value: str, capsys) -> None:
    from tui.cli import main

    status = main(["kill", "--leftovers", "--timeout", value])
    err = capsys.readouterr().err
    assert status != 0
    assert "--timeout must be a positive, finite number" in err and err.count("\n") == 1


@pytest.mark.parametrize("flag", ["--timeout", "--request-timeout", "--run-timeout"])
def test_bench_deadlines_must_be_finite(flag: str, capsys) -> None:
    from tui.cli import main

    status = main(["bench", "--url", "http://127.0.0.1:9", flag, "nan"])
    err = capsys.readouterr().err
    assert status != 0 and "must be positive" in err and "Traceback" not in err
