"""SSHHost against real OpenSSH sshd servers on 127.0.0.1 (tests/support/sshd_fixtures.py)."""

from __future__ import annotations

import asyncio
import pwd
import re
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support import sshd_fixtures
from tests.support.sshd_fixtures import SshdPair
from tui.cli import main
from tui.core import paths
from tui.core.config import load_profile_file
from tui.core.errors import CommandTimeout, HostError, HostKeyError
from tui.hosts.base import Host
from tui.hosts.factory import host_for_profile
from tui.hosts.local import LocalHost
from tui.hosts.ssh import SSHHost

pytestmark = [pytest.mark.sshd, pytest.mark.usefixtures("private_home")]

_DEADLINE_S = 30.0


async def _remote_pids(host: SSHHost, marker: str) -> list[str]:
    """PIDs whose command line holds marker, seen from a second remote command.

    The pattern `[x]yz` matches `xyz` but not the pgrep command line itself.
    """
    pattern = f"[{marker[0]}]{marker[1:]}"
    result = await host.run(["pgrep", "-f", pattern])
    return result.stdout.split()


async def _until_no_remote_process(host: SSHHost, marker: str) -> list[str]:
    deadline = time.monotonic() + _DEADLINE_S
    pids = await _remote_pids(host, marker)
    while pids and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        pids = await _remote_pids(host, marker)
    return pids


async def test_run_reports_status_stdout_and_stderr(sshd: SshdPair) -> None:
    host = SSHHost(sshd.host_config())
    try:
        assert isinstance(host, Host)
        result = await host.run(["sh", "-c", "echo out; echo err >&2; exit 7"])
        assert (result.exit_status, result.stdout, result.stderr) == (7, "out\n", "err\n")
        assert not result.ok
        ok = await host.run(["true"])
        assert ok.ok
    finally:
        await host.close()


async def test_stdin_reaches_the_command(sshd: SshdPair) -> None:
    host = SSHHost(sshd.host_config())
    try:
        result = await host.run(["tr", "a-z", "A-Z"], stdin_text="hello\nworld\n")
        assert result.stdout == "HELLO\nWORLD\n"
        # Without stdin_text the command sees end of input instead of waiting forever.
        empty = await host.run(["cat"], timeout_s=20)
        assert (empty.exit_status, empty.stdout) == (0, "")
    finally:
        await host.close()


async def test_read_file_is_bounded_and_errors_name_the_host(sshd: SshdPair) -> None:
    host = SSHHost(sshd.host_config())
    target = sshd.first.root / "sshd_config"
    try:
        assert await host.read_file(str(target)) == target.read_bytes()
        assert await host.read_file(str(target), max_bytes=10) == target.read_bytes()[:10]
        with pytest.raises(HostError, match=r"127\.0\.0\.1:\d+: cannot read /no/such: .*No such"):
            await host.read_file("/no/such")
    finally:
        await host.close()


async def test_stream_yields_lines_until_the_command_ends(sshd: SshdPair) -> None:
    host = SSHHost(sshd.host_config())
    try:
        lines = [line async for line in host.stream(["printf", "a\\nb c\\n\\nlast"])]
        assert lines == ["a", "b c", "", "last"]
        fed = [line async for line in host.stream(["cat"], stdin_text="x\ny\n")]
        assert fed == ["x", "y"]
    finally:
        await host.close()


@pytest.mark.parametrize("login", ["default", "zsh"])
async def test_stream_cancel_leaves_no_remote_process(sshd: SshdPair, login: str) -> None:
    """Root logins end commands by `kill -PGID` (sshd ignores channel signals without
    privilege separation); other users get the channel signal as well."""
    if login == "zsh" and sshd.zsh_user is None:
        pytest.skip("needs root to create the zsh test user")
    user = sshd.zsh_user if login == "zsh" else None
    host = SSHHost(sshd.host_config(user=user))
    marker = f"servedeck-stream-{uuid.uuid4().hex}"
    # Prints once, then stays silent: only a signal (not a broken pipe) can end it.
    script = f"echo ready {marker}; while :; do sleep 0.2; done"
    try:
        lines = host.stream(["sh", "-c", script])
        assert await anext(lines) == f"ready {marker}"
        assert await _remote_pids(host, marker), "the remote loop should be running"
        await lines.aclose()
        assert await _until_no_remote_process(host, marker) == []

        # Cancelling the task that consumes a stream ends the remote process too.
        started = asyncio.Event()

        async def consume() -> None:
            async for _line in host.stream(["sh", "-c", script]):
                started.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(started.wait(), _DEADLINE_S)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await _until_no_remote_process(host, marker) == []
    finally:
        await host.close()


async def test_timeout_ends_the_remote_command(sshd: SshdPair) -> None:
    host = SSHHost(sshd.host_config())
    marker = f"servedeck-timeout-{uuid.uuid4().hex}"
    try:
        with pytest.raises(CommandTimeout, match="ran past 1 s"):
            await host.run(["sh", "-c", f"sleep 300; echo {marker}"], timeout_s=1)
        assert await _until_no_remote_process(host, marker) == []
    finally:
        await host.close()


async def test_jump_chain_reaches_the_second_server(sshd: SshdPair) -> None:
    host = SSHHost(sshd.jump_config())
    try:
        result = await host.run(["sh", "-c", "echo $SSH_CONNECTION"])
        # The second server sees the connection arrive on its own port.
        assert result.stdout.split()[-1] == str(sshd.second.port)
        assert host.config.route.endswith(f"via {sshd.user}@127.0.0.1:{sshd.first.port}")
    finally:
        await host.close()


def _write_profile(sshd: SshdPair, tmp_path: Path, **changes: object) -> Path:
    config = sshd.host_config(**changes)
    path = tmp_path / "box.toml"
    path.write_text(sshd.profile_toml(config))
    return path


async def test_unknown_host_key_is_refused_then_trusted(
    sshd: SshdPair, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    profile_path = _write_profile(sshd, tmp_path, known_hosts=str(empty))
    profile = load_profile_file(profile_path)
    host = host_for_profile(profile)
    with pytest.raises(HostKeyError) as refused:
        await host.run(["true"])
    message = str(refused.value)
    assert sshd.first.fingerprint in message
    assert f"servedeck hosts trust --profile {profile_path}" in message
    assert "\n" not in message and "Traceback" not in message

    # `hosts trust` runs its own event loop: keep it off this test's loop.
    code = await asyncio.to_thread(main, ["hosts", "trust", "--profile", str(profile_path), "-y"])
    assert code == 0
    assert sshd.first.fingerprint in capsys.readouterr().out
    assert sshd.first.host_public_key in paths.known_hosts_path().read_text()

    trusted = host_for_profile(profile)
    try:
        assert (await trusted.run(["echo", "in"])).stdout == "in\n"
    finally:
        await trusted.close()
        await host.close()


async def test_trust_walks_a_jump_chain_in_order(
    sshd: SshdPair, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    config = sshd.jump_config(known_hosts=str(empty))
    with pytest.raises(
        HostKeyError, match=f"jump host .*unknown host key .*{re.escape(sshd.first.fingerprint)}"
    ):
        await SSHHost(config).run(["true"])
    profile_path = tmp_path / "jump.toml"
    profile_path.write_text(sshd.profile_toml(config))

    code = await asyncio.to_thread(main, ["hosts", "trust", "-p", str(profile_path), "--yes"])
    assert code == 0
    out = capsys.readouterr().out
    assert out.index(sshd.first.fingerprint) < out.index(sshd.second.fingerprint)
    host = SSHHost(config)
    try:
        assert (await host.run(["echo", "through"])).stdout == "through\n"
    finally:
        await host.close()


async def test_changed_host_key_is_refused(
    sshd: SshdPair, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A known_hosts entry for the right address with the other server's key.
    wrong = tmp_path / "wrong_known_hosts"
    wrong.write_text(f"[127.0.0.1]:{sshd.first.port} {sshd.second.host_public_key}\n")
    profile_path = _write_profile(sshd, tmp_path, known_hosts=str(wrong))
    host = host_for_profile(load_profile_file(profile_path))
    with pytest.raises(HostKeyError, match="CHANGED") as refused:
        await host.run(["true"])
    assert sshd.first.fingerprint in str(refused.value)
    assert "hosts trust" not in str(refused.value)

    code = await asyncio.to_thread(main, ["hosts", "trust", "-p", str(profile_path), "--yes"])
    assert code == HostKeyError.exit_code
    assert "CHANGED" in capsys.readouterr().err
    assert not paths.known_hosts_path().exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["printf", "[%s]\\n", "it's", 'say "hi"', "a  b", "*", "$HOME", "back\\slash\\n"],
        ["printf", "[%s]\\n", "new\nline", "semi;colon", "$(id)", "`id`", "~", "a|b&c", ""],
        ["sh", "-c", 'echo "$0|$1|$2"', "zero", "one two", "th'ree"],
    ],
)
async def test_zsh_login_shell_gets_argv_byte_for_byte(sshd: SshdPair, argv: list[str]) -> None:
    if sshd.zsh_user is None:
        pytest.skip("needs root to create the zsh test user")
    host = SSHHost(sshd.host_config(user=sshd.zsh_user))
    try:
        # sshd sets SHELL to the login shell it runs the command string with.
        shell = await host.run(["sh", "-c", "echo $SHELL"])
        assert shell.stdout == "/usr/bin/zsh\n"
        remote = await host.run(argv)
        local = await LocalHost().run(argv)
        assert (remote.exit_status, remote.stdout, remote.stderr) == (
            local.exit_status,
            local.stdout,
            local.stderr,
        )
    finally:
        await host.close()


async def test_dropped_connection_reconnects_for_the_next_run(sshd: SshdPair) -> None:
    host = SSHHost(sshd.host_config())
    try:
        assert (await host.run(["echo", "one"])).stdout == "one\n"
        assert sshd.first.kill_connections() > 0
        assert (await host.run(["echo", "two"])).stdout == "two\n"
    finally:
        await host.close()


async def test_restarted_server_is_reached_again_after_backoff(sshd: SshdPair) -> None:
    host = SSHHost(sshd.host_config())
    try:
        await host.run(["true"])
        sshd.first.stop()
        with pytest.raises(HostError, match="cannot connect"):
            await host.run(["true"])
        sshd.first.start()
        deadline = time.monotonic() + _DEADLINE_S
        while True:
            try:
                result = await host.run(["echo", "back"])
                break
            except HostError as error:
                assert "cannot connect" in str(error), str(error)
                assert time.monotonic() < deadline, str(error)
                await asyncio.sleep(0.2)
        assert result.stdout == "back\n"
    finally:
        await host.close()


async def test_thirty_concurrent_runs_stay_under_max_sessions(sshd: SshdPair) -> None:
    assert sshd.first.max_sessions == 10
    host = SSHHost(replace(sshd.host_config(), max_sessions=8))
    try:
        results = await asyncio.gather(
            *(host.run(["sh", "-c", f"sleep 0.3; echo {i}"], timeout_s=120) for i in range(30))
        )
        assert [result.stdout for result in results] == [f"{i}\n" for i in range(30)]
    finally:
        await host.close()


async def test_without_the_semaphore_sshd_refuses_sessions(sshd: SshdPair) -> None:
    """Shows the previous test can fail: 30 sessions at once exceed MaxSessions=10."""
    host = SSHHost(replace(sshd.host_config(), max_sessions=30))
    try:
        outcomes = await asyncio.gather(
            *(host.run(["sleep", "2"], timeout_s=120) for _ in range(30)),
            return_exceptions=True,
        )
        refused = [o for o in outcomes if isinstance(o, HostError)]
        assert refused, "sshd should refuse sessions past MaxSessions"
        assert "cannot open a session" in str(refused[0])
    finally:
        await host.close()


async def test_connection_errors_are_one_line_naming_the_route(sshd: SshdPair) -> None:
    closed_port = sshd.host_config(port=1)
    with pytest.raises(HostError) as refused:
        await SSHHost(closed_port).run(["true"])
    assert re.fullmatch(
        rf"{sshd.user}@127\.0\.0\.1:1: host unreachable since \d\d:\d\d:\d\d: cannot connect: .*",
        str(refused.value),
    )

    other_key = sshd.first.host_key_path  # a valid key that no login authorizes
    config = sshd.jump_config()
    denied = replace(config, jump=(replace(config.jump[0], identity_file=str(other_key)),))
    with pytest.raises(HostError) as failed:
        await SSHHost(denied).run(["true"])
    assert re.sub(r"since \d\d:\d\d:\d\d", "since T", str(failed.value)) == (
        f"{denied.route}: host unreachable since T: jump host {sshd.user}@127.0.0.1:{sshd.first.port}: "
        "authentication failed (the key was not accepted)"
    )


async def test_login_shell_startup_output_is_not_mistaken_for_command_output(
    sshd: SshdPair,
) -> None:
    """A chatty startup file (here ~/.zshenv) prints before the command runs."""
    if sshd.zsh_user is None:
        pytest.skip("needs root to create the zsh test user")
    zshenv = Path(pwd.getpwnam(sshd.zsh_user).pw_dir) / ".zshenv"
    zshenv.write_text("echo 'Welcome to the GPU box'\n")
    host = SSHHost(sshd.host_config(user=sshd.zsh_user))
    try:
        assert (await host.run(["echo", "only this"])).stdout == "only this\n"
    finally:
        zshenv.unlink()
        await host.close()


@pytest.mark.parametrize(
    ("ci", "outcome"), [("true", pytest.fail.Exception), ("", pytest.skip.Exception)]
)
def test_missing_sshd_fails_under_ci_and_skips_elsewhere(
    monkeypatch: pytest.MonkeyPatch, ci: str, outcome: type[BaseException]
) -> None:
    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="openssh-server"):
        sshd_fixtures._missing("/usr/sbin/sshd not found (Debian package openssh-server)")
