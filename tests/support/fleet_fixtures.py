"""A fleet of light simulated boxes, each its own real sshd on 127.0.0.1, half behind a jump.

Each host is a real OpenSSH server with its own port and host key. Its login sees a
box folder (`SetEnv` in its sshd_config): `systemctl` and `nvidia-smi` on that login's
PATH are shims answering from the box folder (unit.show; the captured nvidia-smi
fixture output, since this machine has no GPU), and the service log is a real vLLM-format
log written by the fleet demo's LightBox (tui.fleet.demo). Serving boxes point at one
real simulator HTTP server (the `serving_box` fixture), reached through each host's
own SSH port forward.
"""

from __future__ import annotations

import shutil
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.e2e_support import process_argvs
from tests.support.gpu_fixtures import FAKE_SMI, NVIDIA_SMI_FIXTURES
from tests.support.procs_fixtures import SERVICE_DIR, unit_user_field
from tests.support.sshd_fixtures import SshdPair, SshdServer, _children
from tui.core.config import JumpHost
from tui.fleet.collector import FleetCollector, probes_for
from tui.fleet.demo import MODELS
from tui.fleet.groups import load_group
from tui.fleet.light_box import LightBox
from tui.sim.box import SimBox

UNIT = "vllm.service"
SYSTEMCTL_SHIM = """#!/bin/sh
# Stand-in for systemctl on a simulated box: `show` answers from the box folder.
# start/stop/restart change that state (and are logged in systemctl.calls).
case "$1" in
  show) cat "$FLEET_BOX_DIR/unit.show" ;;
  stop) echo "$*" >> "$FLEET_BOX_DIR/systemctl.calls"
    sed -i 's/^ActiveState=.*/ActiveState=inactive/; s/^SubState=.*/SubState=dead/' \
      "$FLEET_BOX_DIR/unit.show" ;;
  start|restart) echo "$*" >> "$FLEET_BOX_DIR/systemctl.calls"
    sed -i 's/^ActiveState=.*/ActiveState=active/; s/^SubState=.*/SubState=running/' \
      "$FLEET_BOX_DIR/unit.show" ;;
  *) echo "systemctl shim: unsupported: $*" >&2; exit 1 ;;
esac
"""

FLEET_CONNECT_TIMEOUT_S = 15.0


# bash reads $BASH_ENV before each `bash -c` sshd starts: with the box's `slow-login` file
# present, every new session waits that many seconds first (a box too busy to start one).
BASH_ENV_SCRIPT = """# servedeck test: a slow session start on demand
if [ -e "$FLEET_BOX_DIR/slow-login" ]; then sleep "$(cat "$FLEET_BOX_DIR/slow-login")"; fi
"""


def write_unit(box_dir: Path, active_state: str) -> None:
    sub = {"active": "running", "failed": "failed", "inactive": "dead"}[active_state]
    result = "exit-code" if active_state == "failed" else "success"
    (box_dir / "unit.show").write_text(
        f"Id={UNIT}\nDescription=vLLM (simulated)\nLoadState=loaded\nActiveState={active_state}\n"
        f"SubState={sub}\nResult={result}\nMainPID=0\nExecMainStatus=0\nNRestarts=0\n"
        f"ControlGroup=/system.slice/{UNIT}\nUnitFileState=enabled\n"
        f"User={unit_user_field()}\nWorkingDirectory={SERVICE_DIR}\n"
    )


def status_shell_pids(marker: str) -> list[int]:
    """A fleet status shell on a box: the `/bin/sh` whose arguments carry this marker."""
    return [
        pid for pid, argv in process_argvs() if marker.encode() in argv and argv[0] == b"/bin/sh"
    ]


@dataclass
class FleetHost:
    name: str
    server: SshdServer
    box: LightBox
    box_dir: Path
    jump: JumpHost | None
    base_url: str

    def connections(self) -> int:
        """SSH connections this host's sshd holds now (one child process per connection)."""
        assert self.server.process is not None
        return len(_children(self.server.process.pid))


@dataclass
class SshdFleet:
    hosts: list[FleetHost]
    pair: SshdPair
    known_hosts: Path

    def profile_toml(self, host: FleetHost) -> str:
        lines = [
            f'name = "{host.name}"',
            "[host]",
            'kind = "ssh"',
            'hostname = "127.0.0.1"',
            f"port = {host.server.port}",
            f'user = "{self.pair.user}"',
            f'identity_file = "{self.pair.client_key}"',
            f'known_hosts = "{self.known_hosts}"',
            # Generous: on two cores shared with three other test workers a login can take
            # seconds, and a step that did not start is (rightly) a failed step.
            f"connect_timeout_s = {FLEET_CONNECT_TIMEOUT_S:g}",
        ]
        if host.jump is not None:
            lines += [
                "[[host.jump]]",
                'hostname = "127.0.0.1"',
                f"port = {host.jump.port}",
                f'user = "{host.jump.user}"',
            ]
        lines += [
            "[service]",
            f'unit = "{UNIT}"',
            f'log_file = "{host.box.log_path}"',
            f'base_url = "{host.base_url}"',
        ]
        return "\n".join(lines) + "\n"

    def stop(self) -> None:
        for host in self.hosts:
            host.server.stop()

    def write_group(self, folder: Path, name: str = "lab") -> Path:
        """Profiles and a group file naming them, under folder/profiles/."""
        profiles = folder / "profiles"
        (profiles / "groups").mkdir(parents=True, exist_ok=True)
        members = []
        for host in self.hosts:
            (profiles / f"{host.name}.toml").write_text(self.profile_toml(host))
            members.append(f'[[fleet.host]]\nprofile = "{host.name}"\nlabel = "{host.box.model}"')
        group = profiles / "groups" / f"{name}.toml"
        group.write_text('[fleet]\ndescription = "sshd fleet"\n' + "\n".join(members) + "\n")
        return group


KINDS = ("serving", "loading", "failed", "serving")


def _shim(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def start_fleet(
    pair: SshdPair, serving_url: str, root: Path, kinds: Sequence[str] = KINDS
) -> SshdFleet:
    """One sshd per kind; every second host from the middle on is reached through a jump."""
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    shims = root / "bin"
    shims.mkdir()
    _shim(shims / "systemctl", SYSTEMCTL_SHIM)
    (root / "bash_env").write_text(BASH_ENV_SCRIPT)
    # The captured-output nvidia-smi, printing once a second like `-lms 1000` (not 5 Hz).
    _shim(shims / "nvidia-smi", FAKE_SMI.replace("sleep 0.2", "sleep 1"))
    jump = JumpHost("127.0.0.1", pair.first.port, pair.user, str(pair.client_key))
    hosts: list[FleetHost] = []
    now = time.time()
    fleet = SshdFleet(hosts, pair, root / "known_hosts")
    try:
        for index, kind in enumerate(kinds):
            box_dir = root / f"box{index}"
            box_dir.mkdir()
            for fixture in NVIDIA_SMI_FIXTURES.glob("handmade_8x_h200_*"):
                shutil.copy(fixture, box_dir / fixture.name)
            model, shards, gpus, weights_gib, load_s = MODELS[index % len(MODELS)]
            started = now - (load_s * 0.4 if kind == "loading" else load_s * 0.5)
            if kind == "serving":
                started = now - load_s - 600
            box = LightBox(
                f"host{index}",
                box_dir,
                kind,
                model,
                shards,
                gpus,
                weights_gib,
                load_s,
                started,
                index,
            )
            box.advance(now)
            write_unit(box_dir, "failed" if kind == "failed" else "active")
            server = SshdServer(f"fleet{index}", root / f"sshd{index}", pair.first.authorized_keys)
            server.prepare()
            with (server.root / "sshd_config").open("a") as config:
                config.write(
                    f"SetEnv PATH={shims}:/usr/local/bin:/usr/bin:/bin "
                    f"FLEET_BOX_DIR={box_dir} FAKE_SMI_DIR={box_dir} "
                    f"BASH_ENV={root / 'bash_env'}\n"
                )
            server.start()
            url = serving_url if kind == "serving" else "http://127.0.0.1:9"
            behind = jump if index >= len(kinds) // 2 else None
            hosts.append(FleetHost(box.name, server, box, box_dir, behind, url))
        fleet.known_hosts.write_text(
            "".join(s.known_hosts_line() for s in [pair.first, *(h.server for h in hosts)])
        )
    except BaseException:
        fleet.stop()
        raise
    return fleet


@pytest.fixture(scope="module")
def sshd_fleet(
    sshd_pair: SshdPair, serving_box: SimBox, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SshdFleet]:
    """Four hosts (serving, loading, failed, serving); the last two reached through a jump."""
    fleet = start_fleet(sshd_pair, serving_box.base_url, tmp_path_factory.mktemp("fleet"))
    try:
        yield fleet
    finally:
        fleet.stop()


FLEET_HOST_TIMEOUT_S = 30.0  # generous: a loaded CI machine starts SSH sessions slowly


def fleet_collector(fleet: SshdFleet, folder: Path, *, read_only: bool = False) -> FleetCollector:
    """A collector over the fleet's group, written into folder (the test's working directory)."""
    group = load_group(str(fleet.write_group(folder)), read_only=read_only)
    return FleetCollector(probes_for(group.members), host_timeout_s=FLEET_HOST_TIMEOUT_S)


@contextmanager
def running_fleet(
    pair: SshdPair, serving_url: str, root: Path, kinds: Sequence[str] = KINDS
) -> Iterator[SshdFleet]:
    """`start_fleet` for a block; the fleet's processes end with it."""
    fleet = start_fleet(pair, serving_url, root, kinds)
    try:
        yield fleet
    finally:
        fleet.stop()


DEPLOYMENT = '[deployment]\nname = "kimi"\n'


def write_deployment(fleet: SshdFleet, folder: Path) -> Path:
    """The fleet's group, its two profiles joined as one multi-node DP deployment (`[deployment]
    name`; host1 runs the headless ranks)."""
    group = fleet.write_group(folder)
    head, ranks = fleet.hosts
    profiles = folder / "profiles"
    (profiles / f"{head.name}.toml").write_text(fleet.profile_toml(head) + DEPLOYMENT)
    extra = DEPLOYMENT + "headless = true\n"
    (profiles / f"{ranks.name}.toml").write_text(fleet.profile_toml(ranks) + extra)
    return group
