"""A worker of the unit's virtualenv is proven the service's however the venv was made.

`python -m venv` and uv make a venv whose bin/python is a symlink, so a process it starts
runs the base interpreter (/proc/PID/exe is the base python), and a vLLM worker retitles
itself (`VLLM::Worker_TP0`): neither its program nor its command line names the venv of
the unit's ExecStart. It maps the venv's libraries (vLLM's torch; here setproctitle's C
extension, copied into a real symlinked venv). The unit, answered by a stand-in systemctl
(no systemd runs here), has no WorkingDirectory=, as most units, and the orphan runs from
/. Everything else is real: the venv, the orphan under PID 1, the listing and the kill.
/proc names paths with their symlinks resolved: a unit naming its venv or its
WorkingDirectory= through a symlinked folder proves its processes all the same.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest
import setproctitle

from tests.support import procs_fixtures
from tests.support.procs_fixtures import (
    GPU_HINTS,
    proc_state,
    service_profile,
    spawn_pid1_orphan,
    wait_until,
)
from tui.cli import main
from tui.gpu.model import GpuProcessUsage

GIB = 1024**3


@pytest.fixture(scope="module")
def symlinked_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real venv made with symlinks, holding setproctitle (a C extension) of its own."""
    root = tmp_path_factory.mktemp("venv-proof") / "venv"
    venv.EnvBuilder(symlinks=True, with_pip=False).create(root)
    site = subprocess.run(
        [
            str(root / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_path('purelib'))",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    shutil.copytree(Path(setproctitle.__file__).parent, Path(site) / "setproctitle")
    return root


@pytest.fixture(autouse=True)
def hint_gpu_source(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No GPU here: the deck's GPU source names the test's orphan as NVML would."""

    async def hint_source(deck: object) -> procs_fixtures.HintGpuSource:
        return procs_fixtures.HintGpuSource()

    monkeypatch.setattr("tui.deck.Deck.gpu_source", hint_source)
    yield
    GPU_HINTS.clear()


@pytest.fixture
def venv_orphan(symlinked_venv: Path) -> Iterator[int]:
    """A `VLLM::Worker_TP0` run by the symlinked venv's python from /, orphaned under PID 1,
    holding 8 GiB of the stand-in GPU."""
    pid, pidfd = spawn_pid1_orphan(python=str(symlinked_venv / "bin" / "python"), cwd="/")
    GPU_HINTS.append(GpuProcessUsage(pid, 0, 8 * GIB))
    try:
        yield pid
    finally:
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        os.close(pidfd)


def listed(profile: Path, pid: int, capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    assert main(["--profile", str(profile), "procs", "--json"]) == 0
    processes = json.loads(capsys.readouterr().out)["processes"]
    (found,) = [p for p in processes if p["identity"]["pid"] == pid]
    return found  # type: ignore[no-any-return]


def test_a_retitled_worker_of_a_symlinked_venv_is_its_units_leftover(
    symlinked_venv: Path,
    venv_orphan: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pid = venv_orphan
    # The premise: nothing but its mapped libraries names the venv.
    assert not os.readlink(f"/proc/{pid}/exe").startswith(str(symlinked_venv))
    assert Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"VLLM::Worker_TP0")
    assert os.readlink(f"/proc/{pid}/cwd") == "/"
    vllm = str(symlinked_venv / "bin" / "vllm")
    profile = service_profile(
        tmp_path, monkeypatch, working_directory="", exec_start=(vllm, "serve", "/models/m")
    )

    found = listed(profile, pid, capsys)
    assert found["klass"] == "leftover", found
    assert f"from the unit's environment {symlinked_venv}" in found["reason"]

    assert main(["--profile", str(profile), "kill", "--leftovers", "--yes"]) == 0
    out = capsys.readouterr().out
    assert f"pid {pid}: terminated [SIGTERM]" in out, out
    assert wait_until(lambda: proc_state(pid) in (None, "Z"))


def test_the_venv_named_through_a_symlinked_folder_proves_it_too(
    symlinked_venv: Path,
    venv_orphan: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # ExecStart=/srv/current/bin/vllm with /srv/current -> the venv: /proc names the target.
    link = tmp_path / "current"
    link.symlink_to(symlinked_venv, target_is_directory=True)
    profile = service_profile(
        tmp_path, monkeypatch, working_directory="", exec_start=(str(link / "bin" / "vllm"),)
    )
    found = listed(profile, venv_orphan, capsys)
    assert found["klass"] == "leftover", found
    assert f"from the unit's environment {link}" in found["reason"]


def test_another_venvs_worker_stays_a_suspect(
    venv_orphan: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    other = tmp_path / "other-venv"
    venv.EnvBuilder(symlinks=True, with_pip=False).create(other)
    profile = service_profile(
        tmp_path, monkeypatch, working_directory="", exec_start=(str(other / "bin" / "vllm"),)
    )
    found = listed(profile, venv_orphan, capsys)
    assert found["klass"] == "suspect", found
    assert f"not run from {other}" in found["reason"]
    assert main(["--profile", str(profile), "kill", "--leftovers", "--yes"]) == 0
    capsys.readouterr()
    assert proc_state(venv_orphan) not in (None, "Z")


def test_a_working_directory_named_through_a_symlink_proves_it_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # WorkingDirectory=/srv/current with /srv/current -> a release folder: /proc/PID/cwd
    # names the release folder.
    release = tmp_path / "release-1"
    release.mkdir()
    link = tmp_path / "current"
    link.symlink_to(release, target_is_directory=True)
    pid, pidfd = spawn_pid1_orphan(cwd=str(link))
    try:
        assert os.readlink(f"/proc/{pid}/cwd") == str(release.resolve())
        profile = service_profile(tmp_path, monkeypatch, working_directory=str(link))
        found = listed(profile, pid, capsys)
        assert found["klass"] == "leftover", found
        assert f"from the unit's directory {link}" in found["reason"]
    finally:
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        os.close(pidfd)
