"""A hostile ~/.ssh/config against the real CLI: nothing in it runs, loops are one line.

Every command that resolves an `ssh_alias` (`profiles list`, `profiles check`,
`profiles import-ssh`, `status`, `doctor`, `fleet --ssh`) runs as its own process under a
private HOME whose config holds `Match exec "touch MARKER"` or `Match exec "sleep 40"`:
no marker appears and each ends within seconds. ProxyCommand and LocalCommand never run
either, against the real sshd. An Include loop is one line naming its files. The hint
printed for an unknown host key is a command that works, including for an alias with no
profile.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.support.cli_support import cli_env, closed_port, run  # noqa: F401  (fixture)
from tests.support.sshd_fixtures import SshdPair, sshd, sshd_pair  # noqa: F401  (fixtures)

ALIAS = "box"
QUICK_S = 30.0  # a command that ran `sleep 40` (twice for status) would pass this


def _home(tmp_path: Path, cli_env: dict[str, str], config: str) -> dict[str, str]:  # noqa: F811
    """A private HOME with this ~/.ssh/config, and a profile `box` naming the alias."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text(config)
    profiles = Path(cli_env["SERVEDECK_CONFIG_DIR"]) / "profiles"
    profiles.mkdir(parents=True, exist_ok=True)
    (profiles / f"{ALIAS}.toml").write_text(f'[host]\nssh_alias = "{ALIAS}"\n')
    return {**cli_env, "HOME": str(home)}


def _commands(tmp_path: Path) -> list[tuple[str, ...]]:
    return [
        ("profiles", "list"),
        ("profiles", "check"),
        ("profiles", "check", ALIAS),
        ("profiles", "import-ssh", "--dir", str(tmp_path / "imported")),
        ("status", "-p", ALIAS),
        ("doctor", "-p", ALIAS),
        ("fleet", "--ssh", ALIAS, "--json", "--timeout", "10"),
    ]


def _run_quick(env: dict[str, str], *args: str) -> tuple[float, str, str, int]:
    started = time.monotonic()
    result = run(env, *args, timeout_s=QUICK_S + 30)
    return time.monotonic() - started, result.stdout, result.stderr, result.returncode


@pytest.mark.parametrize("command", ["touch {marker}", "sleep 40; touch {marker}"])
def test_match_exec_never_runs_from_any_command(
    tmp_path: Path,
    cli_env: dict[str, str],  # noqa: F811
    command: str,
) -> None:
    marker = tmp_path / "MARKER"
    config = (
        f'Match exec "{command.format(marker=marker)}"\n'
        "  User fromexec\n"
        f"Host {ALIAS}\n"
        "  HostName 127.0.0.1\n"
        f"  Port {closed_port()}\n"
        "  ConnectTimeout 5\n"
    )
    env = _home(tmp_path, cli_env, config)
    for args in _commands(tmp_path):
        elapsed_s, out, err, _ = _run_quick(env, *args)
        assert not marker.exists(), f"`{' '.join(args)}` ran the Match exec command"
        assert elapsed_s < QUICK_S, f"`{' '.join(args)}` took {elapsed_s:.1f} s"
        assert "Traceback" not in err, (args, err)
        assert "fromexec" not in out + err, (args, out)  # the block did not apply
        if args[0] == "doctor":
            lines = [line for line in out.splitlines() if "Match exec" in line]
            assert len(lines) == 1, out
            assert str(Path(env["HOME"]) / ".ssh" / "config") in out.replace("\n  ", " "), out


def test_proxy_and_local_commands_never_run(
    tmp_path: Path,
    cli_env: dict[str, str],  # noqa: F811
    sshd: SshdPair,  # noqa: F811
) -> None:
    """LocalCommand against a box servedeck reaches; ProxyCommand on an alias of its own."""
    proxy_marker = tmp_path / "PROXY_MARKER"
    local_marker = tmp_path / "LOCAL_MARKER"
    known = tmp_path / "known_hosts"
    known.write_text(sshd.first.known_hosts_line())
    config = (
        f"Host {ALIAS}\n"
        "  HostName 127.0.0.1\n"
        f"  Port {sshd.first.port}\n"
        f"  User {sshd.user}\n"
        f"  IdentityFile {sshd.client_key}\n"
        f"  UserKnownHostsFile {known}\n"
        "  PermitLocalCommand yes\n"
        f"  LocalCommand touch {local_marker}\n"
        "Host proxied\n"
        "  HostName 127.0.0.1\n"
        f"  ProxyCommand touch {proxy_marker}\n"
    )
    env = _home(tmp_path, cli_env, config)
    result = run(env, "fleet", "--ssh", f"{ALIAS},proxied", "--json", "--timeout", "30")
    rows = {row["host"]: row for row in json.loads(result.stdout)}
    assert rows[ALIAS]["reachable"] is True, rows  # connected: LocalCommand had its chance
    assert rows["proxied"]["reachable"] is False
    assert "ProxyCommand is not supported" in rows["proxied"]["error"]
    for args in _commands(tmp_path):
        run(env, *args, timeout_s=QUICK_S + 30)
    assert not proxy_marker.exists() and not local_marker.exists()


def test_an_include_loop_is_one_line_naming_both_files(
    tmp_path: Path,
    cli_env: dict[str, str],  # noqa: F811
) -> None:
    ssh = tmp_path / "home" / ".ssh"
    config = f"Include {ssh}/a\nHost {ALIAS}\n  HostName 127.0.0.1\n"
    env = _home(tmp_path, cli_env, config)
    (ssh / "a").write_text(f"Include {ssh}/b\n")
    (ssh / "b").write_text(f"Include {ssh}/a\n")
    loop = f"Include loop: {ssh}/a -> {ssh}/b -> {ssh}/a"
    for args in _commands(tmp_path):
        _, out, err, code = _run_quick(env, *args)
        assert "Traceback" not in err and "RecursionError" not in out + err, (args, err)
        assert loop in " ".join((out + err).split()), (args, out, err)  # wrapped or not
        if args[:2] == ("profiles", "check") or args[1] == "import-ssh":
            assert code != 0 and f"{ALIAS}: ok" not in out, (args, out, err)
            said = [line for line in err.splitlines() if "Include loop" in line]
            assert len(said) == 1 and loop in said[0], (args, err)  # one line, whole


def test_import_ssh_refuses_an_oversize_config_in_one_line(
    tmp_path: Path,
    cli_env: dict[str, str],  # noqa: F811
) -> None:
    env = _home(tmp_path, cli_env, "")
    config = Path(env["HOME"]) / ".ssh" / "config"
    with config.open("wb") as handle:  # 64 MiB, sparse: the old import read it all
        handle.truncate(64 << 20)
    _, _, err, code = _run_quick(env, "profiles", "import-ssh", "--dir", str(tmp_path / "i"))
    assert code != 0 and "Traceback" not in err
    assert err.strip().splitlines() == [
        f"servedeck: error: {config}: over the 1 MiB servedeck reads from an ssh config "
        "with its Includes (real ones are a few KiB); not read"
    ]
    assert not (tmp_path / "i").exists()

    config.write_text("".join(f"Host h{index}\n  HostName 10.0.0.1\n" for index in range(300)))
    _, _, err, code = _run_quick(env, "profiles", "import-ssh", "--dir", str(tmp_path / "i"))
    assert code != 0 and "300 Host entries match '*', over the 200" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "i").exists()


def test_the_unknown_key_hint_is_a_command_that_works_for_an_alias(
    tmp_path: Path,
    cli_env: dict[str, str],  # noqa: F811
    sshd: SshdPair,  # noqa: F811
) -> None:
    """`fleet --ssh ALIAS` with an unknown key names `hosts trust --ssh ALIAS`; it works."""
    config = (
        f"Host {ALIAS}-raw\n"
        "  HostName 127.0.0.1\n"
        f"  Port {sshd.first.port}\n"
        f"  User {sshd.user}\n"
        f"  IdentityFile {sshd.client_key}\n"
    )
    env = _home(tmp_path, cli_env, config)
    alias = f"{ALIAS}-raw"  # no profile of that name: only `--ssh` names it
    result = run(env, "fleet", "--ssh", alias, "--json", "--timeout", "30")
    row = json.loads(result.stdout)[0]
    assert row["reachable"] is False and "unknown host key" in row["error"], row
    hint = row["error"].split("accept it with: ", 1)[1]
    assert hint == f"servedeck hosts trust --ssh {alias}"
    trusted = run(env, *hint.split()[1:], "--yes")
    assert trusted.returncode == 0, trusted.stderr
    assert sshd.first.fingerprint in trusted.stdout
    again = run(env, "fleet", "--ssh", alias, "--json", "--timeout", "30")
    assert json.loads(again.stdout)[0]["reachable"] is True, again.stdout

    both = run(env, "hosts", "trust", "--ssh", alias, "-p", ALIAS, "--yes")
    assert both.returncode != 0 and "not both" in both.stderr and "Traceback" not in both.stderr
