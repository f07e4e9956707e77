"""The long-lived remote reader (tui/hosts/reader.py) against a real sshd on 127.0.0.1.

A read answers what `Host.run` answers (stdout, stderr, exit status; generated outputs
included), many reads share one session, and every fault ends as a restart or a one-line
error: the reader killed on the box (idle or mid-read), the connection cut, a read past its
timeout, an answer that is not the reader's (on the console's service line too).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncssh
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual.widgets import Static

from tests.support.sshd_fixtures import SshdPair
from tests.support.systemctl_standin import unit_show_text, write_systemctl
from tui.app import ServedeckApp
from tui.core.config import Profile, ServiceConfig
from tui.core.errors import CommandTimeout, HostError
from tui.deck import Deck
from tui.hosts import reader as reader_module
from tui.hosts.reader import RemoteReader, reader_pool, run_read
from tui.hosts.ssh import SSHHost
from tui.serving.unit.service import SystemdService
from widgets.service_line import ServiceLine

pytestmark = [pytest.mark.sshd, pytest.mark.usefixtures("private_home")]

READER_SCRIPT = reader_module.READER_SCRIPT
GARBAGE_SCRIPT = (
    'while IFS= read -r _; do echo "Welcome to gpu-7 api_key=sk-live-0123456789abcdef"; done'
)


@pytest.fixture
def sessions(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every session channel opened (the real one still is), by its command's tail."""
    opened: list[str] = []
    real = asyncssh.SSHClientConnection.create_session

    async def counted(self: Any, factory: Any, command: Any = (), **kwargs: Any) -> Any:
        opened.append(str(command)[-40:])
        return await real(self, factory, command, **kwargs)

    monkeypatch.setattr(asyncssh.SSHClientConnection, "create_session", counted)
    yield opened


def _reader(host: SSHHost) -> RemoteReader:
    pool = reader_pool(host)
    assert pool is not None
    return pool.readers[0]


def _kill_reader(reader: RemoteReader) -> None:
    """SIGKILL the reader's process group on the box (this machine), as an OOM kill would."""
    marker = reader._marker.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker in (entry / "cmdline").read_bytes():
                os.killpg(os.getpgid(int(entry.name)), signal.SIGKILL)
                return
        except (OSError, ProcessLookupError):
            continue
    raise AssertionError("the reader's process was not found")


async def test_reads_answer_as_run_does_through_one_session(
    sshd: SshdPair, sessions: list[str]
) -> None:
    host = SSHHost(sshd.host_config())
    try:
        cases = [
            ["cat", "/proc/loadavg"],
            ["/bin/sh", "-c", "echo out; echo err >&2; exit 3"],
            ["printf", "no newline"],
            ["printf", "two\n\nblank lines\n\n\n"],
            ["true"],
            ["/bin/sh", "-c", "exit 0\necho never"],  # a multi-line script
            ["/bin/sh", "-c", 'cd /; read x; echo "read: $x"; exit 7'],  # stdin is /dev/null
            ["servedeck-no-such-tool"],
        ]
        for argv in cases:
            expected = await host.run(argv)
            got = await run_read(host, argv)
            if argv[0] == "cat":
                continue  # /proc/loadavg moves between the two reads
            assert (got.exit_status, got.stdout, got.stderr.strip()) == (
                expected.exit_status,
                expected.stdout,
                expected.stderr.strip(),
            ), argv
        before = len(sessions)
        for _ in range(20):
            assert (await run_read(host, ["echo", "again"])).stdout == "again\n"
        assert len(sessions) == before, "a read opened a session of its own"
        assert _reader(host).starts == 1
    finally:
        await host.close()


_OUTPUTS = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r"),
    max_size=300,
)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(texts=st.lists(_OUTPUTS, min_size=1, max_size=20))
async def test_any_output_comes_back_whole(sshd: SshdPair, texts: list[str]) -> None:
    """Whatever a command prints (marker-like text, blank lines, no final newline) is its
    stdout, exactly: the framing is the reader's random marker, never the output's shape.
    (A carriage return before a newline is dropped: the dialog reads lines.)"""
    host = SSHHost(sshd.host_config())
    try:
        for text in [*texts, "servedeck-read-0000:end\n", "\n\n"]:
            got = await run_read(host, ["printf", "%s", text])
            assert got.stdout == text and got.exit_status == 0
            err = await run_read(host, ["/bin/sh", "-c", 'printf "%s" "$1" >&2', "sh", text])
            assert err.stderr == text.rstrip("\n")  # as `$(...)` keeps it
        assert _reader(host).starts == 1
    finally:
        await host.close()


async def test_a_killed_reader_is_restarted_by_the_next_read(sshd: SshdPair) -> None:
    host = SSHHost(sshd.host_config())
    try:
        reader = _reader(host)
        assert (await run_read(host, ["echo", "one"])).stdout == "one\n"
        _kill_reader(reader)  # idle: the next read finds it gone and opens another
        assert (await run_read(host, ["echo", "two"])).stdout == "two\n"
        assert reader.starts == 2
        # Killed mid-read: that read is asked again of a new reader (reads are idempotent).
        pending = run_read(host, ["/bin/sh", "-c", "sleep 1; echo late"], timeout_s=20)
        task = asyncio.ensure_future(pending)
        await asyncio.sleep(0.5)
        _kill_reader(reader)
        assert (await task).stdout == "late\n"
        assert reader.starts == 3
    finally:
        await host.close()


async def test_a_dropped_connection_reconnects_and_restarts_the_reader(sshd: SshdPair) -> None:
    host = SSHHost(sshd.host_config())
    try:
        reader = _reader(host)
        assert (await run_read(host, ["echo", "before"])).stdout == "before\n"
        assert sshd.first.kill_connections() >= 1
        deadline = time.monotonic() + 30
        while True:  # the first read after the cut may fail with one line; one soon answers
            try:
                result = await run_read(host, ["echo", "after"])
                break
            except HostError as error:
                assert "\n" not in str(error) and str(error).startswith(host.label)
                assert time.monotonic() < deadline, error
        assert result.stdout == "after\n"
        assert host.connects == 2 and reader.starts == 2
    finally:
        await host.close()


async def test_a_read_past_its_timeout_ends_the_reader(sshd: SshdPair) -> None:
    host = SSHHost(sshd.host_config())
    try:
        reader = _reader(host)
        started = time.monotonic()
        with pytest.raises(CommandTimeout, match="ran past 1 s"):
            await run_read(host, ["sleep", "30"], timeout_s=1.0)
        assert time.monotonic() - started < 10
        assert (await run_read(host, ["echo", "next"])).stdout == "next\n"  # not "late" output
        assert reader.starts == 2
    finally:
        await host.close()


async def test_a_slow_read_does_not_hold_the_others(sshd: SshdPair) -> None:
    """A hung command (nvidia-smi on a wedged GPU) delays other reads by the pool's patience."""
    host = SSHHost(sshd.host_config())
    try:
        slow = asyncio.ensure_future(run_read(host, ["sleep", "6"], timeout_s=20))
        await asyncio.sleep(0.5)
        started = time.monotonic()
        assert (await run_read(host, ["echo", "quick"])).stdout == "quick\n"
        assert time.monotonic() - started < reader_module.PATIENCE_S + 2.5
        assert (await slow).exit_status == 0
    finally:
        await host.close()


async def test_garbage_from_the_reader_is_one_line(
    sshd: SshdPair, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = SSHHost(sshd.host_config())
    try:
        monkeypatch.setattr(reader_module, "READER_SCRIPT", GARBAGE_SCRIPT)
        with pytest.raises(HostError) as caught:
            await run_read(host, ["echo", "hi"])
        message = str(caught.value)
        assert message.startswith(f"{host.label}: echo: the remote reader answered garbage")
        assert "\n" not in message and "sk-live-0123456789abcdef" not in message
        monkeypatch.setattr(reader_module, "READER_SCRIPT", READER_SCRIPT)
        assert (await run_read(host, ["echo", "hi"])).stdout == "hi\n"  # a new reader
    finally:
        await host.close()


async def test_unit_reads_through_the_reader_and_garbage_on_the_service_line(
    sshd: SshdPair, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp_path.chmod(0o755)
    bin_dir = write_systemctl(tmp_path, unit_show_text("vllm-r.service", "active"))
    systemctl = str(bin_dir / "systemctl")
    host = SSHHost(sshd.host_config())
    try:
        service = SystemdService(host, "vllm-r.service", systemctl=systemctl)
        assert (await service.state()).active_state == "active"
        assert _reader(host).starts == 1
    finally:
        await host.close()

    monkeypatch.setattr(reader_module, "READER_SCRIPT", GARBAGE_SCRIPT)
    profile = Profile(
        name="garbage", host=sshd.host_config(), service=ServiceConfig(unit="vllm-r.service")
    )
    app = ServedeckApp(profile, Deck(profile, SSHHost(profile.host)))
    async with app.run_test(size=(120, 36)) as pilot:
        line = app.query_one(ServiceLine)
        deadline = time.monotonic() + 30
        while "garbage" not in str(line.render()) and time.monotonic() < deadline:
            await pilot.pause(0.1)
        text = str(line.render())
        assert "the remote reader answered garbage" in text, text
        assert "Traceback" not in text and "sk-live" not in text
        assert app.unit_state is None  # unknown, never a guess
        assert "Traceback" not in str(app.query_one("#deck-note", Static).render())
        await pilot.press("q")
