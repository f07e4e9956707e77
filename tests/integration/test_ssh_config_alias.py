"""Hosts named as in ~/.ssh/config, against the real sshd servers on 127.0.0.1.

A generated ssh config (an Include, wildcard Host blocks, a one-hop and a two-hop
ProxyJump) under a temporary HOME: profiles that only say `ssh_alias`, `fleet --ssh` and
`profiles import-ssh` reach the servers exactly as `ssh ALIAS` would route. An alias
that resolves nowhere is a one-line error naming it, on its own row only.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli_support import cli_env, run  # noqa: F401  (fixture)
from tests.support.sshd_fixtures import SshdPair, sshd, sshd_pair  # noqa: F401  (fixtures)
from tui.fleet.collector import FleetCollector, probes_for
from tui.fleet.groups import load_group, ssh_group
from tui.fleet.ssh_import import import_ssh_hosts
from tui.hosts.profiles import load_profile_file
from tui.hosts.ssh import SSHHost
from tui.hosts.ssh_config import route_report

pytestmark = pytest.mark.sshd

NOWHERE = "nosuch-box.invalid"


def write_ssh_config(home: Path, pair: SshdPair) -> Path:
    """~/.ssh/config with an Include, wildcards and jump chains to the two test servers."""
    ssh = home / ".ssh"
    (ssh / "conf.d").mkdir(parents=True)
    known = ssh / "lab_known_hosts"
    known.write_text(pair.first.known_hosts_line() + pair.second.known_hosts_line())
    (ssh / "conf.d" / "hops.conf").write_text(
        f"Host hop-a\n  Port {pair.first.port}\nHost hop-b\n  Port {pair.second.port}\n"
    )
    config = ssh / "config"
    config.write_text(
        "Include conf.d/*.conf\n"
        "Host box-a\n"
        "  HostName 127.0.0.1\n"
        f"  Port {pair.first.port}\n"
        "Host box-b\n"
        "  HostName 127.0.0.1\n"
        f"  Port {pair.second.port}\n"
        "  ProxyJump hop-a\n"
        "Host two-hop\n"
        "  HostName 127.0.0.1\n"
        f"  Port {pair.first.port}\n"
        "  ProxyJump hop-a,hop-b\n"
        "Host hop-* box-?\n"
        "  HostName 127.0.0.1\n"
        "Host *\n"
        f"  User {pair.user}\n"
        f"  IdentityFile {pair.client_key}\n"
        f"  UserKnownHostsFile {known}\n"
        "  ConnectTimeout 7\n"
        "  StrictHostKeyChecking no\n"
    )
    return config


@pytest.fixture
def ssh_home(tmp_path: Path, sshd: SshdPair, monkeypatch: pytest.MonkeyPatch) -> Path:  # noqa: F811
    home = tmp_path / "home"
    write_ssh_config(home, sshd)
    monkeypatch.setenv("HOME", str(home))
    return home


def alias_profile(folder: Path, name: str, alias: str, extra: str = "") -> Path:
    path = folder / f"{name}.toml"
    path.write_text(f'[host]\nssh_alias = "{alias}"\n{extra}')
    return path


async def _uname(path: Path) -> str:
    profile = load_profile_file(path)
    host = SSHHost(profile.host, trust_args=f"--profile {path}")
    try:
        result = await host.run(["/bin/sh", "-c", "echo reached"], timeout_s=30)
        return result.stdout.strip()
    finally:
        await host.close()


async def test_alias_resolves_like_ssh_with_include_wildcards_and_jumps(
    ssh_home: Path,
    sshd: SshdPair,  # noqa: F811
    tmp_path: Path,
) -> None:
    profile = load_profile_file(alias_profile(tmp_path, "b", "box-b"))
    host = profile.host
    assert (host.kind, host.hostname, host.port, host.user) == (
        "ssh",
        "127.0.0.1",
        sshd.second.port,
        sshd.user,
    )
    assert host.identity_file == str(sshd.client_key) and host.connect_timeout_s == 7.0
    assert [hop.port for hop in host.jump] == [sshd.first.port]  # hop-a from the Include
    assert host.jump[0].hostname == "127.0.0.1" and host.jump[0].user == sshd.user
    assert host.route.startswith("box-b (") and " via " in host.route
    report = route_report(host)
    assert report[0].startswith("ssh alias 'box-b' -> ")
    assert any("jump:" in line and "ProxyJump hop-a" in line for line in report)
    assert await _uname(tmp_path / "b.toml") == "reached"

    two = load_profile_file(alias_profile(tmp_path, "two", "two-hop")).host
    assert [hop.port for hop in two.jump] == [sshd.first.port, sshd.second.port]
    assert await _uname(tmp_path / "two.toml") == "reached"


async def test_profile_keys_win_over_the_ssh_config(
    ssh_home: Path,
    sshd: SshdPair,  # noqa: F811
    tmp_path: Path,
) -> None:
    # box-a's config says the first server; the profile's own port (the second) wins.
    path = alias_profile(tmp_path, "a", "box-a", f"port = {sshd.second.port}\n")
    host = load_profile_file(path).host
    assert host.port == sshd.second.port and ("port", "profile") in host.origins
    assert host.hostname == "127.0.0.1"  # still from the config
    assert await _uname(path) == "reached"


async def test_host_key_checking_stays_strict(
    ssh_home: Path,
    sshd: SshdPair,  # noqa: F811
    tmp_path: Path,
) -> None:
    """`StrictHostKeyChecking no` in the config is ignored: an unknown key is refused."""
    (ssh_home / ".ssh" / "lab_known_hosts").write_text(sshd.second.known_hosts_line())
    path = alias_profile(tmp_path, "a", "box-a")
    with pytest.raises(Exception, match="unknown host key"):
        await _uname(path)


async def test_unresolvable_and_broken_aliases_are_one_line_errors(
    ssh_home: Path,
    tmp_path: Path,
) -> None:
    path = alias_profile(tmp_path, "lost", NOWHERE)
    with pytest.raises(Exception) as caught:
        await _uname(path)
    message = str(caught.value)
    assert NOWHERE in message and "no HostName in the ssh config" in message
    assert "\n" not in message

    bad = ssh_home / ".ssh" / "bad_config"
    bad.write_text("Host broken\n  Port notaport\n")
    (ssh_home / ".ssh" / "config").write_text(
        f"Include {bad}\n" + (ssh_home / ".ssh" / "config").read_text()
    )
    host = load_profile_file(alias_profile(tmp_path, "broken", "broken")).host  # loads
    assert host.alias_error and "'broken'" in host.alias_error and "line 2" in host.alias_error
    with pytest.raises(Exception, match="ssh alias 'broken'"):
        await _uname(tmp_path / "broken.toml")


async def test_fleet_of_aliases_keeps_rows_working_past_a_bad_alias(
    ssh_home: Path,
    tmp_path: Path,
) -> None:
    group = ssh_group(f"box-a,box-b,{NOWHERE}")
    assert all(member.profile.read_only for member in group.members)
    collector = FleetCollector(probes_for(group.members), host_timeout_s=30.0)
    try:
        rows = {row.host: row for row in await collector.refresh()}
    finally:
        await collector.close()
    assert rows["box-a"].reachable and rows["box-b"].reachable, rows
    assert " via " in rows["box-b"].route
    lost = rows[NOWHERE]
    assert not lost.reachable and lost.error and NOWHERE in lost.error
    assert "\n" not in lost.error


def test_fleet_ssh_option_json(ssh_home: Path, cli_env: dict[str, str]) -> None:  # noqa: F811
    env = {**cli_env, "HOME": str(ssh_home)}
    result = run(env, "fleet", "--ssh", f"box-a,{NOWHERE}", "--json", "--timeout", "30")
    assert result.returncode == 1, result.stderr  # one host is unreachable
    rows = {row["host"]: row for row in json.loads(result.stdout)}
    assert rows["box-a"]["reachable"] is True
    assert rows[NOWHERE]["reachable"] is False and NOWHERE in rows[NOWHERE]["error"]
    assert "Traceback" not in result.stderr


def test_import_ssh_writes_profiles_and_a_group_without_overwriting(
    ssh_home: Path,
    tmp_path: Path,
) -> None:
    folder = tmp_path / "profiles"
    folder.mkdir()
    mine = folder / "box-b.toml"
    mine.write_text('description = "mine"\n[host]\nkind = "local"\n')
    report = import_ssh_hosts("*", folder=folder, group="lab")
    # Concrete names only (hop-a, hop-b from the Include; no `hop-*`, `box-?` or `*`).
    assert sorted(p.stem for p in report.written) == ["box-a", "hop-a", "hop-b", "two-hop"]
    assert mine.read_text() == 'description = "mine"\n[host]\nkind = "local"\n'
    assert any(line.startswith(f"kept {mine}") for line in report.lines)
    group = load_group(str(folder / "groups" / "lab.toml"))
    # The Include comes first in the file, so its hosts come first.
    assert [m.name for m in group.members] == ["hop-a", "hop-b", "box-a", "two-hop"]
    assert all(m.profile.host.ssh_alias == m.name for m in group.members)

    # Again: nothing is overwritten, the group stays as it was, each said in one line.
    before = (folder / "groups" / "lab.toml").read_text()
    again = import_ssh_hosts("box-*", folder=folder, group="lab")
    assert again.written == [] and (folder / "groups" / "lab.toml").read_text() == before
    assert any("the group exists; not changed" in line for line in again.lines)


def test_import_ssh_cli_pattern_and_no_match(
    ssh_home: Path,
    tmp_path: Path,
    cli_env: dict[str, str],  # noqa: F811
) -> None:
    env = {**cli_env, "HOME": str(ssh_home)}
    folder = tmp_path / "out"
    result = run(env, "profiles", "import-ssh", "two-*", "--dir", str(folder))
    assert result.returncode == 0, result.stderr
    assert (folder / "two-hop.toml").is_file() and not (folder / "box-a.toml").exists()
    assert "wrote group" in result.stdout
    result = run(env, "profiles", "import-ssh", "zzz*", "--dir", str(folder))
    assert result.returncode != 0
    assert "no Host entry matches 'zzz*'" in result.stderr and "Traceback" not in result.stderr


async def test_console_on_an_alias_with_no_profile_is_read_only_over_the_jump(
    ssh_home: Path,
    tmp_path: Path,
) -> None:
    """`servedeck --ssh box-b`: the console reaches the box through ProxyJump, read-only."""
    from tui.app import ServedeckApp
    from tui.compose import open_deck
    from tui.fleet.groups import ssh_alias_profile

    profile = ssh_alias_profile("box-b")
    assert profile.read_only and " via " in profile.host.route
    deck = open_deck(profile)
    app = ServedeckApp(deck.profile, deck)
    async with app.run_test(size=(140, 40)) as pilot:
        header = app.query_one("#header")
        for _ in range(600):
            if header.connection_state == "connected":  # type: ignore[attr-defined]
                break
            await pilot.pause(0.05)
        assert header.connection_state == "connected"  # type: ignore[attr-defined]
        assert header.route.startswith("box-b (")  # type: ignore[attr-defined]


def test_ssh_option_usage_errors_are_one_line(cli_env: dict[str, str]) -> None:  # noqa: F811
    for spec in ("a,,b", "a,a", "bad name"):
        result = run(cli_env, "--ssh", spec)
        assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and "--ssh" in result.stderr


def test_doctor_shows_the_resolved_route_and_where_each_value_came_from(
    ssh_home: Path,
    tmp_path: Path,
    cli_env: dict[str, str],  # noqa: F811
) -> None:
    path = alias_profile(tmp_path, "two", "two-hop", 'user = "root"\n')
    result = run({**cli_env, "HOME": str(ssh_home)}, "doctor", "-p", str(path))
    out = result.stdout
    assert "ssh alias 'two-hop' -> two-hop (root@127.0.0.1:" in out, out + result.stderr
    assert "user: profile" in out, out
    assert "hostname: ssh config" in out and str(ssh_home / ".ssh" / "config") in out, out
    assert "ProxyJump hop-a,hop-b" in out and "Traceback" not in result.stderr
