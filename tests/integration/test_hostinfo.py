"""Host overview: the whole script once, then only memory, uptime and load (one `cat`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import tui.deck as deck_module
from tests.support.console_support import local_console
from tests.support.sshd_fixtures import SshdPair
from tui.core.config import Profile
from tui.hostfacts.hostinfo import collect_overview, refresh_vitals
from tui.hosts.local import LocalHost
from tui.hosts.ssh import SSHHost
from widgets.header_bar import HeaderBar


def _proc_values() -> tuple[int, float, str]:
    meminfo = Path("/proc/meminfo").read_text()
    available_kib = int(next(line.split()[1] for line in meminfo.splitlines()
                             if line.startswith("MemAvailable:")))  # fmt: skip
    uptime_s = float(Path("/proc/uptime").read_text().split()[0])
    loadavg = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    return available_kib * 1024, uptime_s, loadavg


async def test_vitals_refresh_keeps_facts_and_reads_fresh_numbers() -> None:
    host = LocalHost()
    first = await collect_overview(host)
    stale = replace(first, mem_available_bytes=1, uptime_s=1.0, loadavg="9.99 9.99 9.99")
    fresh = await refresh_vitals(host, stale)
    available_bytes, uptime_s, _ = _proc_values()
    assert fresh.hostname == first.hostname and fresh.kernel == first.kernel
    assert fresh.cpu_cores == first.cpu_cores and fresh.gpu_names == first.gpu_names
    assert fresh.mem_available_bytes is not None
    assert abs(fresh.mem_available_bytes - available_bytes) < 0.1 * first.mem_total_bytes  # type: ignore[operator]
    assert fresh.uptime_s is not None and abs(fresh.uptime_s - uptime_s) < 5
    assert fresh.loadavg != "9.99 9.99 9.99" and len(fresh.loadavg.split()) == 3


async def test_console_runs_the_script_once_then_only_vitals_and_again_on_r(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Between overviews only the vitals are read: in-process here (no `cat` per refresh)."""
    refreshes: list[int] = []
    real_refresh = deck_module.refresh_vitals

    async def counted_refresh(*args, **kwargs):  # type: ignore[no-untyped-def]
        refreshes.append(len(host.commands))
        return await real_refresh(*args, **kwargs)

    monkeypatch.setattr(deck_module, "refresh_vitals", counted_refresh)
    app, host = local_console(0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(60):
            await pilot.pause(0.1)
            if len(refreshes) >= 3:
                break
        assert app.query_one(HeaderBar).connection_state == "connected"
        assert host.commands.count(["/bin/sh", "-s"]) == 1
        await pilot.press("r")  # the operator asks: the whole overview again
        for _ in range(50):
            await pilot.pause(0.1)
            if host.commands.count(["/bin/sh", "-s"]) == 2:
                break
        assert host.commands.count(["/bin/sh", "-s"]) == 2
    script_runs = [i for i, c in enumerate(host.commands) if c == ["/bin/sh", "-s"]]
    assert len(script_runs) == 2 and len(refreshes) >= 3
    assert script_runs[0] < refreshes[0]
    assert not [c for c in host.commands if c[0] == "cat"]  # the files read in-process


@pytest.mark.sshd
async def test_vitals_over_a_jump_host(sshd: SshdPair) -> None:
    profile = Profile(name="remote", host=sshd.jump_config())
    host = SSHHost(profile.host)
    try:
        first = await collect_overview(host)
        fresh = await refresh_vitals(host, replace(first, uptime_s=None, loadavg=""))
    finally:
        await host.close()
    assert fresh.hostname == first.hostname
    assert fresh.uptime_s is not None and fresh.uptime_s >= (first.uptime_s or 0)
    assert len(fresh.loadavg.split()) == 3
