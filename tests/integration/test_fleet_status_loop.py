"""Each fleet host's unit and log through one long-lived remote shell, over real sshd.

Four light simulated boxes behind real OpenSSH servers (two through a jump). Asserted:
one status shell per host across refreshes; a refresh shows what changed on the box
since the last one (unit state, new log lines, a truncated log); a status shell killed
on the box is replaced after a backoff while the row stays right; one SSH connection
per host throughout.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from tests.support.fleet_fixtures import (  # noqa: F401  (fixture)
    SshdFleet,
    sshd_fleet,
    status_shell_pids,
    write_unit,
)
from tui.fleet.collector import FleetCollector, probes_for
from tui.fleet.deck_probe import DeckProbe
from tui.fleet.groups import load_group
from tui.fleet.model import FleetRow
from tui.fleet.view import host_state

pytestmark = pytest.mark.sshd

FIRST_TIMEOUT_S = 30.0
HOST_TIMEOUT_S = 15.0


def _by_host(rows: list[FleetRow]) -> dict[str, FleetRow]:
    return {row.host: row for row in rows}


def _answered(row: FleetRow) -> bool:
    """A row from a finished poll, not the collector's stand-in for one still running."""
    return "no answer for" not in (row.error or "")


async def _next_answers(collector: FleetCollector, deadline_s: float = 90.0) -> dict[str, FleetRow]:
    """Each host's row from a poll started from now on.

    A loaded machine may leave a poll running past a refresh (its row is late, and its
    answer may hold what it read before now), so first every running poll ends; then
    each refresh starts fresh polls and the first answer of each host is kept.
    """
    started = time.monotonic()
    while any(slot.task is not None and not slot.task.done() for slot in collector._slots):
        assert time.monotonic() - started < deadline_s, "polls still running"
        await asyncio.sleep(0.1)
    answers: dict[str, FleetRow] = {}
    while True:
        rows = _by_host(await collector.refresh())
        answers |= {n: r for n, r in rows.items() if n not in answers and _answered(r)}
        if len(answers) == len(rows):
            return answers
        assert time.monotonic() - started < deadline_s, sorted(set(rows) - set(answers))
        await asyncio.sleep(0.5)


async def test_one_status_shell_per_host_fresh_values_and_a_restart(
    sshd_fleet: SshdFleet,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sshd_fleet.write_group(tmp_path)
    monkeypatch.chdir(tmp_path)
    collector = FleetCollector(
        probes_for(load_group("lab").members), host_timeout_s=FIRST_TIMEOUT_S
    )
    hosts = {host.name: host for host in sshd_fleet.hosts}
    try:
        await collector.refresh()
        collector.host_timeout_s = HOST_TIMEOUT_S
        rows = await _next_answers(collector)
        probes = {name: collector.probe(name) for name in hosts}
        loops = {}
        for name, probe in probes.items():
            assert isinstance(probe, DeckProbe) and probe._loop is not None, name
            loops[name] = probe._loop
        assert all(loop.starts == 1 for loop in loops.values())

        # New log lines: the loading box moves on, seen in the next refresh.
        loading = rows["host1"]
        box = hosts["host1"].box
        box.advance(time.time() + box.load_s * 0.3)
        # The unit changes state on the serving box: the next refresh shows it.
        write_unit(hosts["host0"].box_dir, "failed")
        # host3's log is truncated (a rotation): read anew, the load phase is not known.
        log3 = hosts["host3"].box.log_path
        text3 = log3.read_text()
        log3.write_text("")
        rows = await _next_answers(collector)
        moved = rows["host1"]
        assert moved.reachable and host_state(moved) in ("loading", "serving"), moved.error
        assert (moved.phase, moved.shards_done) != (loading.phase, loading.shards_done)
        assert rows["host0"].unit_state == "failed"
        assert rows["host3"].phase is None and rows["host3"].unit_state == "active"

        write_unit(hosts["host0"].box_dir, "active")
        log3.write_text(text3)
        rows = await _next_answers(collector)
        assert rows["host0"].unit_state == "active" and host_state(rows["host0"]) == "serving"
        assert rows["host3"].phase == "serving", rows["host3"].error
        assert all(loop.starts == 1 for loop in loops.values())

        # The status shell on host0 is killed: the row stays right (one-off session while
        # the loop backs off), then a new shell takes over on the same connection.
        pids = status_shell_pids(loops["host0"]._marker)
        assert len(pids) == 1
        os.kill(pids[0], signal.SIGKILL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            rows = _by_host(await collector.refresh())
            row = rows["host0"]
            if _answered(row):  # (a poll still running shows as late on a loaded machine)
                assert row.reachable and host_state(row) == "serving", row.error
            if loops["host0"].starts == 2:
                break
            await asyncio.sleep(0.5)
        assert loops["host0"].starts == 2
        assert [h.connections() for h in sshd_fleet.hosts] == [1, 1, 1, 1]
    finally:
        await collector.close()
    # Closing the fleet ends every status shell on the boxes.
    markers = [loop._marker for loop in loops.values()]
    deadline = time.monotonic() + 30
    while any(status_shell_pids(m) for m in markers) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert [status_shell_pids(m) for m in markers] == [[], [], [], []]
