"""Running `python -m tui` as a process with servedeck's folders in a temporary place."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WIDTH = 80


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    """servedeck's own folders (and TMPDIR) in tmp_path, so a run leaves nothing behind."""
    for name in ("config", "data", "log", "tmp"):
        (tmp_path / name).mkdir()
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "SERVEDECK_CONFIG_DIR": str(tmp_path / "config"),
        "SERVEDECK_DATA_DIR": str(tmp_path / "data"),
        "SERVEDECK_LOG_DIR": str(tmp_path / "log"),
        "TMPDIR": str(tmp_path / "tmp"),
    }


def run(
    env: dict[str, str], *args: str, timeout_s: float = 180
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=env,
    )


def assert_fits(text: str, what: str) -> None:
    wide = [line for line in text.splitlines() if len(line) > WIDTH]
    assert not wide, f"{what}: {len(wide)} line(s) wider than {WIDTH}: {wide[0]!r}"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_profile(folder: Path, name: str, body: str) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(body)
    return path
