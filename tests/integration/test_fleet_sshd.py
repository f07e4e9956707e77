"""The fleet over real sshd servers: every row right, one connection per host, a dead host.

Four light simulated boxes, each behind its own real OpenSSH server (two through a jump
host): rows come from `systemctl show`, a `tail` of the vLLM log, the nvidia-smi stream
and HTTP through each host's SSH forward. One host's sshd is stopped mid-run: it must be
marked within one refresh while the others keep answering, and recover after a restart.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.support.fleet_fixtures import SshdFleet, sshd_fleet  # noqa: F401  (fixture)
from tui.compose import open_deck
from tui.core.config import load_profile_file
from tui.fleet.collector import FleetCollector, borrow_deck, probes_for
from tui.fleet.deck_probe import DeckProbe
from tui.fleet.groups import load_group
from tui.fleet.model import FleetRow
from tui.fleet.view import host_state
from tui.hosts.ssh import SSHHost

pytestmark = pytest.mark.sshd

FIRST_TIMEOUT_S = 30.0  # first refresh: connects, first nvidia-smi sample, forwards
HOST_TIMEOUT_S = 15.0  # generous: a loaded CI machine starts SSH sessions slowly


def _by_host(rows: list[FleetRow]) -> dict[str, FleetRow]:
    return {row.host: row for row in rows}


async def test_fleet_over_sshd_rows_connections_and_a_dead_host(
    sshd_fleet: SshdFleet,  # noqa: F811
    tmp_path,
    monkeypatch,
) -> None:
    group_path = sshd_fleet.write_group(tmp_path)
    monkeypatch.chdir(tmp_path)
    group = load_group("lab")
    assert group.path == group_path
    assert [m.label for m in group.members] == [h.box.model for h in sshd_fleet.hosts]
    collector = FleetCollector(probes_for(group.members), host_timeout_s=FIRST_TIMEOUT_S)
    try:
        rows = _by_host(await collector.refresh())
        collector.host_timeout_s = HOST_TIMEOUT_S
        # A second refresh: the GPU stream and /metrics have had a tick.
        rows = _by_host(await collector.refresh())
        for host in sshd_fleet.hosts:
            row = rows[host.name]
            assert row.reachable, row.error
            assert row.gpu_count == 8 and row.gpu_mem_total_bytes  # the nvidia-smi shim's box
            assert (" via " in row.route) == (host.jump is not None)
            assert row.label == host.box.model
        serving = [rows["host0"], rows["host3"]]
        for row in serving:
            assert (row.unit_state, row.phase, row.health_ok) == ("active", "serving", True)
            assert host_state(row) == "serving"
            assert row.running is not None  # /metrics through the forward, or the log line
        loading = rows["host1"]
        assert loading.phase == "weights" and host_state(loading) == "loading"
        assert loading.shards_total == sshd_fleet.hosts[1].box.shards
        assert 0 < (loading.shards_done or 0) < loading.shards_total
        assert loading.eta_s is not None and loading.health_ok is False
        failed = rows["host2"]
        assert (failed.unit_state, failed.phase) == ("failed", "failed")
        assert "load failed" in failed.alerts
        # One SSH connection per host (the jumped ones are one connection each too).
        assert [h.connections() for h in sshd_fleet.hosts] == [1, 1, 1, 1]
        # Every host whose unit was read has its processes listed: a count, serving or not
        # (a serving host's first listing runs beside the polls: n/a until it answers).
        deadline = time.monotonic() + 30
        while any(row.leftovers is None for row in rows.values()) and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            rows = _by_host(await collector.refresh())
        assert {name: row.leftovers for name, row in rows.items()} == {
            host.name: 0 for host in sshd_fleet.hosts
        }

        # host0's sshd goes away: marked within one refresh, the others unaffected.
        dead = sshd_fleet.hosts[0]
        dead.server.stop()
        started = time.monotonic()
        rows = _by_host(await collector.refresh())
        took = time.monotonic() - started
        assert took <= HOST_TIMEOUT_S + 1.0
        assert rows["host0"].reachable is False and rows["host0"].error
        assert host_state(rows["host0"]) in ("unreachable", "slow")
        assert all(rows[h.name].reachable for h in sshd_fleet.hosts[1:])

        # Back again: recovered within a few refreshes (the SSH backoff is at most 3 s).
        dead.server.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            rows = _by_host(await collector.refresh())
            if rows["host0"].reachable and rows["host0"].health_ok:
                break
            await asyncio.sleep(0.5)
        assert rows["host0"].reachable and rows["host0"].health_ok, rows["host0"].error
        assert [h.connections() for h in sshd_fleet.hosts] == [1, 1, 1, 1]

        # A host's full Deck borrows the fleet's connection: no new SSH connection.
        probe = collector.probe("host1")
        assert isinstance(probe, DeckProbe) and isinstance(probe.deck.host, SSHHost)
        connects = probe.deck.host.connects
        deck = borrow_deck(probe.deck)
        assert deck.host is probe.deck.host
        controller = deck.service()
        assert controller is not None and (await controller.state()).active_state == "active"
        await deck.close()
        assert probe.deck.host.connected and probe.deck.host.connects == connects
        assert sshd_fleet.hosts[1].connections() == 1
    finally:
        await collector.close()


async def test_a_missing_log_is_an_error_on_the_row_not_a_lost_host(
    sshd_fleet: SshdFleet,  # noqa: F811
    tmp_path: Path,
) -> None:
    host = sshd_fleet.hosts[0]
    path = tmp_path / "nolog.toml"
    path.write_text(
        sshd_fleet.profile_toml(host).replace(str(host.box.log_path), "/nonexistent/vllm.log")
    )
    probe = DeckProbe(open_deck(load_profile_file(path)))
    try:
        row = await asyncio.wait_for(probe.poll(), 60)
    finally:
        await probe.close()
    assert row.reachable and row.unit_state == "active" and row.phase is None
    assert row.error is not None and "cannot read /nonexistent/vllm.log" in row.error
    assert "\n" not in row.error
