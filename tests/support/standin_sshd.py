"""An sshd of its own for a test, whose sessions find stand-in tools first on PATH.

The pair's sshd servers run the box's real tools; a test that needs a tool this machine
lacks or cannot use (nvidia-smi with no GPU, a `dmesg --follow` that stays quiet) starts
this one: the pair's authorized key, its own host key and port, and `SetEnv` giving each
session the stand-ins' folder first on PATH plus any variables they read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from tests.support.sshd_fixtures import SshdPair, SshdServer
from tui.core.config import HostConfig

_SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@contextmanager
def standin_sshd(
    pair: SshdPair, folder: Path, tools: Mapping[str, str], env: Mapping[str, str] | None = None
) -> Iterator[tuple[SshdServer, HostConfig]]:
    """A running sshd in `folder` whose sessions run `tools` (name -> script) from PATH."""
    folder.chmod(0o755)
    bin_dir = folder / "standin-bin"
    bin_dir.mkdir()
    for name, script in tools.items():
        tool = bin_dir / name
        tool.write_text(script)
        tool.chmod(0o755)
    server = SshdServer("standin", folder / "sshd", pair.first.authorized_keys)
    server.prepare()
    config = server.root / "sshd_config"
    values = {"PATH": f"{bin_dir}:{_SYSTEM_PATH}", **(env or {})}
    setenv = " ".join(f"{key}={value}" for key, value in values.items())
    config.write_text(config.read_text() + f"SetEnv {setenv}\n")
    known_hosts = server.root / "known_hosts"
    known_hosts.write_text(server.known_hosts_line())
    host = replace(pair.host_config(), port=server.port, known_hosts=str(known_hosts))
    server.start()
    try:
        yield server, host
    finally:
        server.stop()
