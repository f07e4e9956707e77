"""Twenty fleet rows over real sshd, named as in ~/.ssh/config, with one host down and one slow.

Four light simulated boxes (serving, loading, failed, serving), each behind its own real
OpenSSH server, the last two through a jump host. A generated ssh config gives twenty
aliases: eighteen spread over the four servers (half of them through `ProxyJump pve`),
one to a closed port (the host that is down) and one through a TCP relay in this test
that can stall mid-run (a host whose link hangs). Every alias is its own profile, so
its own SSH connection and its own polls, the way twenty boxes are polled.

Asserted: every row shows its box's state (serving, loading, failed) with no error,
the down host is `unreachable`, the stalled host turns `slow` within one refresh while
the other rows keep their state, one SSH connection per host. Printed: the refresh
p50/p95 over the healthy refreshes, and the event loop's lag (the UI's share of it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_support import closed_port
from tests.support.fleet_fixtures import UNIT, FleetHost, SshdFleet, start_fleet
from tests.support.sim_fixtures import serving_box  # noqa: F401  (fixture)
from tests.support.sshd_fixtures import SshdPair, _children, sshd_pair  # noqa: F401  (fixture)
from tui.fleet.collector import FleetCollector, probes_for
from tui.fleet.groups import load_group
from tui.fleet.model import FleetRow
from tui.fleet.view import host_state
from tui.sim.box import SimBox

pytestmark = pytest.mark.sshd

HOSTS = 20
CONNECT_DEADLINE_S = 60.0  # twenty SSH logins (nine through a jump) on a loaded machine
FIRST_TIMEOUT_S = 20.0  # the first refresh waits for the logins and first samples
HOST_TIMEOUT_S = 10.0  # generous: on a loaded machine a healthy host may be late
STALL_TIMEOUT_S = 5.0  # the pane's default is 4 s
PANE_INTERVAL_S = 2.0  # the Fleet pane refreshes every 2 s
MEASURED = 5
KINDS = ("serving", "loading", "failed", "serving")
DOWN, SLOW = "gpu18-down", "gpu19-slow"


class StallingRelay:
    """A TCP relay to an sshd that can stop passing bytes: a link that hangs, not one that drops."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.stalled = False
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.CancelledError):
            while data := await source.read(65536):
                while self.stalled:
                    await asyncio.sleep(0.05)
                sink.write(data)
                await sink.drain()
        sink.close()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        self._writers += [writer, up_writer]
        await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))

    async def close(self) -> None:
        for writer in self._writers:
            writer.close()
        if self._server is not None:
            self._server.close()


@pytest.fixture(scope="module")
def four_boxes(
    sshd_pair: SshdPair,  # noqa: F811
    serving_box: SimBox,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[SshdFleet]:
    fleet = start_fleet(sshd_pair, serving_box.base_url, tmp_path_factory.mktemp("fleet20"), KINDS)
    try:
        yield fleet
    finally:
        fleet.stop()


def _aliases(fleet: SshdFleet) -> dict[str, FleetHost]:
    """gpu00..gpu17 over the four boxes; the down and slow hosts share box 0's profile."""
    names = {f"gpu{i:02d}": fleet.hosts[i % len(fleet.hosts)] for i in range(HOSTS - 2)}
    return {**names, DOWN: fleet.hosts[0], SLOW: fleet.hosts[0]}


def write_config(home: Path, fleet: SshdFleet, relay_port: int) -> None:
    """~/.ssh/config: a Host entry per alias, a jump host, shared settings under `Host *`."""
    pair = fleet.pair
    blocks = [f"Host pve\n  HostName 127.0.0.1\n  Port {pair.first.port}\n"]
    for alias, host in _aliases(fleet).items():
        port = {DOWN: closed_port(), SLOW: relay_port}.get(alias, host.server.port)
        jump = "  ProxyJump pve\n" if host.jump is not None and alias != SLOW else ""
        blocks.append(f"Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n{jump}")
    known = home / ".ssh" / "known_hosts_lab"
    relay_key = f"[127.0.0.1]:{relay_port} {fleet.hosts[0].server.host_public_key}\n"
    known.write_text(fleet.known_hosts.read_text() + relay_key)
    blocks.append(
        f"Host *\n  User {pair.user}\n  IdentityFile {pair.client_key}\n"
        f"  UserKnownHostsFile {known}\n  ConnectTimeout 10\n"
    )
    (home / ".ssh" / "config").write_text("".join(blocks))


def write_group(folder: Path, fleet: SshdFleet) -> None:
    """One profile per alias (only `ssh_alias` for the host) and the group naming them."""
    (folder / "profiles" / "groups").mkdir(parents=True)
    for alias, host in _aliases(fleet).items():
        (folder / "profiles" / f"{alias}.toml").write_text(
            f'[host]\nssh_alias = "{alias}"\n[service]\nunit = "{UNIT}"\n'
            f'log_file = "{host.box.log_path}"\nbase_url = "{host.base_url}"\n'
        )
    hosts = ", ".join(f'"{alias}"' for alias in _aliases(fleet))
    (folder / "profiles" / "groups" / "lab.toml").write_text(f"[fleet]\nhosts = [{hosts}]\n")


def _expected(fleet: SshdFleet, alias: str) -> str:
    return {DOWN: "unreachable", SLOW: "serving"}.get(alias, _aliases(fleet)[alias].box.kind)


def _right(fleet: SshdFleet, row: FleetRow) -> bool:
    """The row shows its box's state, with its GPUs (the down host: unreachable)."""
    state = host_state(row)
    if row.host == DOWN:
        return state == "unreachable"
    return state == _expected(fleet, row.host) and row.reachable and row.gpu_count == 8


def _check_shape(fleet: SshdFleet, rows: list[FleetRow]) -> None:
    """Every refresh: one row per host, a state word, one-line errors; the down host is down.

    A healthy host may be `slow` in a refresh when this machine is loaded (its poll goes
    on and the next refresh has it), but it is never `unreachable`, and never wrong.
    """
    assert [row.host for row in rows] == list(_aliases(fleet))
    for row in rows:
        state = host_state(row)
        assert "\n" not in (row.error or ""), row.error
        if row.host == DOWN:
            assert state == "unreachable" and row.error and DOWN in row.error
        elif state != "slow":
            assert state == _expected(fleet, row.host), (row.host, row.error)


async def _lag_probe(samples: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        started = time.monotonic()
        await asyncio.sleep(0.01)
        samples.append(time.monotonic() - started - 0.01)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def test_twenty_hosts_show_state_with_one_down_and_one_slow(
    four_boxes: SshdFleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    relay = StallingRelay(four_boxes.hosts[0].server.port)
    await relay.start()
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    write_config(home, four_boxes, relay.port)
    write_group(tmp_path, four_boxes)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    group = load_group("lab")
    assert [m.profile.host.hostname for m in group.members] == ["127.0.0.1"] * HOSTS
    collector = FleetCollector(probes_for(group.members), host_timeout_s=HOST_TIMEOUT_S)
    try:
        # Connect (twenty logins at once), then refresh at the pane's pace until every
        # host has shown its state; each refresh is checked on the way.
        connect_started = time.monotonic()
        collector.host_timeout_s = FIRST_TIMEOUT_S
        rows = await collector.refresh()
        collector.host_timeout_s = HOST_TIMEOUT_S
        seen_right: set[str] = set()
        while True:
            _check_shape(four_boxes, rows)
            seen_right |= {row.host for row in rows if _right(four_boxes, row)}
            if len(seen_right) == HOSTS:
                break
            missing = sorted(set(_aliases(four_boxes)) - seen_right)
            assert time.monotonic() - connect_started < CONNECT_DEADLINE_S, missing
            await asyncio.sleep(PANE_INTERVAL_S)
            rows = await collector.refresh()
        connect_s = time.monotonic() - connect_started

        lag: list[float] = []
        stop = asyncio.Event()
        prober = asyncio.create_task(_lag_probe(lag, stop))
        durations = []
        slow_rows = 0
        for _ in range(MEASURED):
            await asyncio.sleep(PANE_INTERVAL_S)
            started = time.monotonic()
            rows = await collector.refresh()
            durations.append(time.monotonic() - started)
            _check_shape(four_boxes, rows)
            slow_rows += sum(host_state(row) == "slow" for row in rows)
        stop.set()
        await prober

        # The slow host's link hangs: marked within one refresh, the refresh stays bounded.
        relay.stalled = True
        collector.host_timeout_s = STALL_TIMEOUT_S
        started = time.monotonic()
        rows = await collector.refresh()
        stalled_s = time.monotonic() - started
        slow = next(row for row in rows if row.host == SLOW)
        assert host_state(slow) == "slow" and slow.error and SLOW in slow.error
        _check_shape(four_boxes, rows)
        assert stalled_s <= STALL_TIMEOUT_S + 2.0

        per_server = [host.connections() for host in four_boxes.hosts]
        assert sum(per_server) == HOSTS - 1  # one per host; the down one has none
        assert four_boxes.pair.first.process is not None
        on_jump = len(_children(four_boxes.pair.first.process.pid))
        print(
            f"\nfleet of {HOSTS} ssh aliases over real sshd ({on_jump} through a jump host; "
            f"1 down, 1 slow; host timeout {HOST_TIMEOUT_S:g} s, {STALL_TIMEOUT_S:g} s when "
            f"stalled; load average "
            f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs): every row right after "
            f"{connect_s:.1f} s; refresh over {MEASURED}: "
            f"p50 {statistics.median(durations):.2f} s, p95 {_pct(durations, 0.95):.2f} s, "
            f"max {max(durations):.2f} s ({slow_rows} row(s) late in them); event-loop lag "
            f"p99 {_pct(lag, 0.99) * 1000:.0f} ms; with the slow host stalled: "
            f"{stalled_s:.2f} s (bounded by the host timeout); SSH connections per box {per_server}"
        )
    finally:
        relay.stalled = False
        # Closing is bounded by the collector itself; a hang here fails, not times out.
        await asyncio.wait_for(collector.close(), 60.0)
        await relay.close()
