"""An idle console connected over SSH opens a bounded number of SSH channels, however long it runs.

The box is this machine behind its own real sshd (tests/support/standin_sshd.py) with a
stand-in `nvidia-smi` (no GPU here, captured output) and a stand-in `systemctl` answering
`show` for the profile's unit (no systemd here). Every session channel the console's
connection opens is counted where asyncssh opens it (`SSHClientConnection.create_session`
wrapped: the real channel is still opened), so the count is of channels sshd served, not of
refreshes. After a warm-up that lets the one-time starts happen (the streams, the remote
readers), 30 s idle must open no channel: a read per refresh would open one per unit poll
(10 s), per vitals read (30 s) and per GPU process list (2 s). (A second 30 s window was
dropped: the first, after the same warm-up, never saw a channel either.)
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncssh
import pytest

from tests.support.gpu_fixtures import FAKE_SMI, NVIDIA_SMI_FIXTURES
from tests.support.sshd_fixtures import SshdPair, SshdServer
from tests.support.standin_sshd import standin_sshd
from tests.support.systemctl_standin import SYSTEMCTL_STANDIN, unit_show_text
from tui.app import ServedeckApp
from tui.core.config import HostConfig, Profile, ServiceConfig
from tui.deck import Deck
from tui.hosts.ssh import SSHHost

pytestmark = [pytest.mark.sshd, pytest.mark.usefixtures("private_home")]

UNIT = "vllm-idle.service"
WARM_UP_S = 20.0
IDLE_S = 30.0  # the longest refresh period (vitals)


class ChannelLog:
    """Each session channel opened: when, and the command's tail (for the failure message)."""

    def __init__(self) -> None:
        self.opened: list[tuple[float, str]] = []

    def since(self, start_s: float, end_s: float) -> list[str]:
        return [command for at_s, command in self.opened if start_s <= at_s < end_s]


@pytest.fixture
def channels(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChannelLog]:
    log = ChannelLog()
    real = asyncssh.SSHClientConnection.create_session

    async def counted(self: Any, factory: Any, command: Any = (), **kwargs: Any) -> Any:
        log.opened.append((time.monotonic(), str(command)[-60:]))
        return await real(self, factory, command, **kwargs)

    monkeypatch.setattr(asyncssh.SSHClientConnection, "create_session", counted)
    yield log


@pytest.fixture
def unit_box(sshd_pair: SshdPair, tmp_path: Path) -> Iterator[tuple[SshdServer, HostConfig]]:
    """A box with GPUs (stand-in nvidia-smi) and a steady unit (stand-in systemctl)."""
    for fixture in NVIDIA_SMI_FIXTURES.glob("handmade_8x_h200_*"):
        (tmp_path / fixture.name).write_bytes(fixture.read_bytes())
    show = tmp_path / "unit.show"
    show.write_text(unit_show_text(UNIT, "inactive"))
    show.chmod(0o644)
    tools = {"nvidia-smi": FAKE_SMI, "systemctl": SYSTEMCTL_STANDIN.format(show=show)}
    with standin_sshd(sshd_pair, tmp_path, tools, {"FAKE_SMI_DIR": str(tmp_path)}) as box:
        yield box


def _cpu_s() -> float:
    """This process's CPU time (the console runs in it), from /proc."""
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / 100.0


async def test_idle_ssh_console_opens_no_channel_per_refresh(
    unit_box: tuple[SshdServer, HostConfig], channels: ChannelLog, tmp_path: Path
) -> None:
    _, config = unit_box
    log = tmp_path / "server.log"
    log.write_text("INFO steady\n")
    log.chmod(0o644)
    tmp_path.chmod(0o755)
    service = ServiceConfig(unit=UNIT, log_file=str(log))
    profile = Profile(name="ssh-idle", host=config, service=service)
    app = ServedeckApp(profile, Deck(profile, SSHHost(config)))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(WARM_UP_S)
        assert app.unit_state is not None, "the unit was never read"
        start_s, cpu_start_s = time.monotonic(), _cpu_s()
        await pilot.pause(IDLE_S)
        end_s, cpu_end_s = time.monotonic(), _cpu_s()
        assert app.unit_state is not None and app.unit_state.active_state == "inactive"
        await pilot.press("q")
    opened = channels.since(start_s, end_s)
    print(
        f"\nchannels: {len(opened)} in {end_s - start_s:.0f} s idle; console CPU "
        f"{cpu_end_s - cpu_start_s:.2f} s; opened: {Counter(opened).most_common(8)}"
    )
    assert opened == [], (
        f"an idle console opened {len(opened)} channels in {IDLE_S:g} s: "
        f"{Counter(opened).most_common(5)}"
    )
