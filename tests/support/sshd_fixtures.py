"""Real OpenSSH `sshd` servers on 127.0.0.1 for the SSH host tests.

Two servers (the second one is reached through the first for jump tests),
each with its own generated host key and sshd_config; one generated user key
is authorized for every login. Where sshd is missing the tests skip, except
under CI (CI=true), where a missing sshd is a failure.
"""

from __future__ import annotations

import getpass
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from tui.core.config import HostConfig, JumpHost

SSHD_PATH = Path("/usr/sbin/sshd")
ZSH_PATH = Path("/usr/bin/zsh")
ZSH_USER = "servedeck-zsh"
_START_TIMEOUT_S = 30.0


def _missing(reason: str) -> None:
    """Skip locally; fail under CI, where every real part must be present."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI requires it: {reason}", pytrace=False)
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _keygen(path: Path) -> str:
    """Generate an ed25519 key pair; returns the public key line."""
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "servedeck-test", "-f", str(path)],
        check=True,
    )
    return path.with_suffix(".pub").read_text().strip()


def _children(parent_pid: int) -> list[int]:
    """Direct children of a process, from /proc (per-connection sshd processes)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the parenthesised command name: state, ppid, ...
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == parent_pid:
            found.append(int(entry.name))
    return found


def _ensure_zsh_user() -> str | None:
    """Create (once) a user whose login shell is zsh; None when that is not possible."""
    if os.geteuid() != 0 or not ZSH_PATH.exists() or shutil.which("useradd") is None:
        return None
    try:
        pwd.getpwnam(ZSH_USER)
    except KeyError:
        # "*" (not "!") as password: no password login, and sshd without PAM
        # does not treat the account as locked.
        subprocess.run(
            ["useradd", "--create-home", "--shell", str(ZSH_PATH), "-p", "*", ZSH_USER],
            check=True,
        )
    entry = pwd.getpwnam(ZSH_USER)
    if entry.pw_shell != str(ZSH_PATH):
        subprocess.run(["usermod", "--shell", str(ZSH_PATH), ZSH_USER], check=True)
    # An empty .zshrc keeps zsh from offering its first-run setup menu.
    zshrc = Path(entry.pw_dir) / ".zshrc"
    if not zshrc.exists():
        zshrc.touch()
        os.chown(zshrc, entry.pw_uid, entry.pw_gid)
    return ZSH_USER


@dataclass
class SshdServer:
    """One running sshd: its port, host key and how to restart or cut connections."""

    name: str
    root: Path
    authorized_keys: Path
    max_sessions: int = 10
    port: int = field(default_factory=_free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def host_key_path(self) -> Path:
        return self.root / "ssh_host_ed25519_key"

    @property
    def host_public_key(self) -> str:
        """`ssh-ed25519 AAAA...` without the comment."""
        return " ".join(self.host_key_path.with_suffix(".pub").read_text().split()[:2])

    @property
    def fingerprint(self) -> str:
        out = subprocess.run(
            ["ssh-keygen", "-l", "-E", "sha256", "-f", str(self.host_key_path)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        return out.split()[1]

    def known_hosts_line(self) -> str:
        return f"[127.0.0.1]:{self.port} {self.host_public_key}\n"

    def prepare(self) -> None:
        self.root.mkdir(mode=0o755, exist_ok=True)
        _keygen(self.host_key_path)
        (self.root / "sshd_config").write_text(
            "\n".join(
                [
                    "ListenAddress 127.0.0.1",
                    f"Port {self.port}",
                    f"HostKey {self.host_key_path}",
                    f"PidFile {self.root / 'sshd.pid'}",
                    f"AuthorizedKeysFile {self.authorized_keys}",
                    "PubkeyAuthentication yes",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PermitRootLogin yes",
                    "UsePAM no",
                    "StrictModes no",
                    "AllowTcpForwarding yes",
                    f"MaxSessions {self.max_sessions}",
                    "MaxStartups 100",
                    "PrintMotd no",
                    "LogLevel VERBOSE",
                    "",
                ]
            )
        )

    def start(self) -> None:
        """Start sshd and wait until it accepts TCP connections."""
        log = (self.root / "sshd.log").open("ab")
        self.process = subprocess.Popen(
            [str(SSHD_PATH), "-D", "-e", "-f", str(self.root / "sshd_config")],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"sshd {self.name} exited: {self.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"sshd {self.name} did not listen within {_START_TIMEOUT_S} s")

    def stop(self) -> None:
        """Stop the listener and every connection it spawned."""
        if self.process is None:
            return
        self.kill_connections()
        self.process.terminate()
        try:
            self.process.wait(_START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def kill_connections(self) -> int:
        """SIGKILL the per-connection sshd processes: every client is cut off at once."""
        if self.process is None:
            return 0
        killed = 0
        for pid in _children(self.process.pid):
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        return killed

    def log_tail(self, lines: int = 20) -> str:
        path = self.root / "sshd.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return " | ".join(text.splitlines()[-lines:])


@dataclass
class SshdPair:
    """Two sshd servers and the client key that logs into both."""

    first: SshdServer
    second: SshdServer
    client_key: Path
    user: str
    zsh_user: str | None

    def host_config(
        self, server: SshdServer | None = None, *, user: str | None = None, **changes: object
    ) -> HostConfig:
        """A HostConfig for `server` (default: the first) with a known_hosts trusting it."""
        server = server or self.first
        known_hosts = server.root / "known_hosts"
        known_hosts.write_text(self.first.known_hosts_line() + self.second.known_hosts_line())
        config = HostConfig(
            kind="ssh",
            hostname="127.0.0.1",
            port=server.port,
            user=user or self.user,
            identity_file=str(self.client_key),
            known_hosts=str(known_hosts),
            connect_timeout_s=20.0,
            keepalive_s=15.0,
        )
        return replace(config, **changes)  # type: ignore[arg-type]

    def jump_config(self, **changes: object) -> HostConfig:
        """The second server reached through the first (a one-hop jump chain)."""
        hop = JumpHost("127.0.0.1", self.first.port, self.user, str(self.client_key))
        return self.host_config(self.second, jump=(hop,), **changes)

    def profile_toml(self, config: HostConfig, name: str = "sshd-test") -> str:
        """A profile file's text for `config` (for the CLI, which takes --profile)."""
        lines = [
            f'name = "{name}"',
            "[host]",
            'kind = "ssh"',
            f'hostname = "{config.hostname}"',
            f"port = {config.port}",
            f'user = "{config.user}"',
            f'identity_file = "{config.identity_file}"',
            f"connect_timeout_s = {config.connect_timeout_s}",
        ]
        if config.known_hosts:
            lines.append(f'known_hosts = "{config.known_hosts}"')
        for hop in config.jump:
            lines += [
                "[[host.jump]]",
                f'hostname = "{hop.hostname}"',
                f"port = {hop.port}",
                f'user = "{hop.user}"',
                f'identity_file = "{hop.identity_file}"',
            ]
        return "\n".join(lines) + "\n"


@contextmanager
def running_sshd_pair() -> Iterator[SshdPair]:
    """Two running sshd servers for the block (the session's pair; a screenshot's fleet)."""
    if not SSHD_PATH.exists():
        _missing(f"{SSHD_PATH} not found (Debian package openssh-server)")
    if shutil.which("ssh-keygen") is None:
        _missing("ssh-keygen not found (Debian package openssh-client)")
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation dir
    # World-readable root: sshd reads authorized_keys as the logged-in user.
    root = Path(tempfile.mkdtemp(prefix="servedeck-sshd-"))
    root.chmod(0o755)
    client_key = root / "client_ed25519"
    authorized_keys = root / "authorized_keys"
    public_key = _keygen(client_key)
    authorized_keys.write_text(public_key + "\n")
    authorized_keys.chmod(0o644)
    servers = [SshdServer(name, root / name, authorized_keys) for name in ("a", "b")]
    pair = SshdPair(servers[0], servers[1], client_key, getpass.getuser(), None)
    try:
        pair.zsh_user = _ensure_zsh_user()
        for server in servers:
            server.prepare()
            server.start()
        yield pair
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def sshd_pair() -> Iterator[SshdPair]:
    """Two running sshd servers for the whole test session."""
    with running_sshd_pair() as pair:
        yield pair


@pytest.fixture
def sshd(sshd_pair: SshdPair) -> Iterator[SshdPair]:
    """The pair, with the first server guaranteed running again after each test."""
    yield sshd_pair
    for server in (sshd_pair.first, sshd_pair.second):
        if server.process is None or server.process.poll() is not None:
            server.process = None
            server.start()


@pytest.fixture
def private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HOME, so the tester's ~/.ssh/known_hosts (an old 127.0.0.1 key) stays out."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home
