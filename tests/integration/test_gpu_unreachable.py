"""A host never reached is unreachable, never "no NVIDIA driver": unknown is said as unknown.

Real sshd on 127.0.0.1 (tests/support/sshd_fixtures.py): a closed port and a missing
identity file are hosts not reached; the running sshd is a host that answers and has no
nvidia-smi (this machine has no NVIDIA driver), where "no NVIDIA driver" is the fact.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.cli_support import closed_port, run
from tests.support.screen_text import screen_text
from tests.support.sshd_fixtures import SshdPair
from tui.app import ServedeckApp
from tui.core.config import HostConfig, load_profile_file
from tui.core.errors import HostUnreachable
from tui.deck import Deck
from tui.gpu.factory import NoGpuSource, gpu_source_for
from tui.gpu.smi import NO_DRIVER
from tui.hosts.ssh import SSHHost

pytestmark = [pytest.mark.usefixtures("private_home"), pytest.mark.sshd]

UNREACHABLE = re.compile(r"host unreachable since \d\d:\d\d:\d\d: ")


def _unreached_configs(sshd: SshdPair, tmp_path: Path) -> dict[str, HostConfig]:
    return {
        "closed port": sshd.host_config(port=closed_port(), connect_timeout_s=5.0),
        "missing key": sshd.host_config(identity_file=str(tmp_path / "absent_ed25519")),
    }


async def test_a_host_not_reached_is_unreachable_not_driverless(
    sshd: SshdPair, tmp_path: Path
) -> None:
    for what, config in _unreached_configs(sshd, tmp_path).items():
        host = SSHHost(config)
        try:
            with pytest.raises(HostUnreachable) as raised:
                await gpu_source_for(host)
        finally:
            await host.close()
        assert UNREACHABLE.search(str(raised.value)), (what, str(raised.value))
        assert "driver" not in str(raised.value), what


async def test_a_reached_host_without_nvidia_smi_has_no_driver(sshd: SshdPair) -> None:
    host = SSHHost(sshd.host_config())
    try:
        source = await gpu_source_for(host)
    finally:
        await host.close()
    assert isinstance(source, NoGpuSource)
    assert source.error.endswith(NO_DRIVER)


def test_gpus_command_says_unreachable_in_one_line(
    sshd: SshdPair, cli_env: dict[str, str], tmp_path: Path
) -> None:
    for what, config in _unreached_configs(sshd, tmp_path).items():
        profile = tmp_path / "unreached.toml"
        profile.write_text(sshd.profile_toml(config, "unreached"))
        done = run(cli_env, "gpus", "-p", str(profile), timeout_s=60)
        assert done.returncode != 0, what
        assert len(done.stderr.strip().splitlines()) == 1, (what, done.stderr)
        assert UNREACHABLE.search(done.stderr), (what, done.stderr)
        assert "driver" not in done.stdout + done.stderr, what


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_deck_gpu_pane_says_unreachable_for_a_stopped_sshd(
    sshd: SshdPair, tmp_path: Path, size: tuple[int, int]
) -> None:
    config = replace(sshd.host_config(), connect_timeout_s=5.0)
    path = tmp_path / "stopped.toml"
    path.write_text(sshd.profile_toml(config, "stopped"))
    profile = load_profile_file(path)
    sshd.first.stop()  # the `sshd` fixture starts it again after the test
    app = ServedeckApp(profile, Deck(profile, SSHHost(profile.host)))
    async with app.run_test(size=size) as pilot:
        for _ in range(100):
            await pilot.pause(0.1)
            if app.last_gpu is not None:
                break
        assert app.last_gpu is not None and not app.last_gpu.available
        assert UNREACHABLE.search(app.last_gpu.error or ""), app.last_gpu.error
        for _ in range(100):  # the pane draws the sample at its next refresh
            text = screen_text(app)
            if "unreachable since" in text:
                break
            await pilot.pause(0.1)
        assert "unreachable since" in text, text
        assert "driver" not in text, text
