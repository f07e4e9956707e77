"""The killer reaches only what provably belongs to the service (real processes).

A process named like a vLLM worker (`exec -a VLLM::Worker_TP0 sleep 900`), orphaned by a
double fork, run as `nobody` when the tests run as root, for a profile whose unit does
not exist, is a suspect: listed with the proof it lacks, never in K's default set, never
ended by `servedeck kill --leftovers --yes`. A real unrelated HTTP server on the
profile's port while the unit is inactive is named as the port holder and left serving.
The test process is a child subreaper while its orphan lives, so the orphan is adopted
by "the console", as with a console running as one, and is reaped here at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.procs_fixtures import (
    PR_SET_CHILD_SUBREAPER,
    proc_state,
    service_profile,
    wait_until,
)
from tui.cli import main
from tui.compose import open_deck
from tui.core.profile_store import load_profile
from tui.ops.gpu_hints import deck_context
from tui.procs.kill import leftovers
from tui.procs.listing import list_gpu_processes
from tui.procs.model import ProcListing

NOBODY = 65534
# The subshell's child execs the disguised sleep in a new session and the subshell exits:
# the sleep is reparented to the nearest subreaper (this test), its title VLLM::Worker_TP0.
DISGUISED = (
    "(setsid bash -c 'exec -a VLLM::Worker_TP0 sleep 900' </dev/null >/dev/null 2>&1 & echo $!)"
)

HTTP_SERVER = r"""
import http.server, sys
server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@pytest.fixture
def disguised_orphan() -> Iterator[int]:
    """`exec -a VLLM::Worker_TP0 sleep 900`, orphaned, as nobody when we are root."""
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    as_nobody = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    argv = [*(as_nobody if os.geteuid() == 0 else []), "bash", "-c", DISGUISED]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd="/tmp")
    pid = int(out.stdout.strip())
    pidfd = os.pidfd_open(pid)
    try:
        assert wait_until(lambda: _cmdline(pid).startswith(b"VLLM::Worker_TP0\0"), 10)
        yield pid
    finally:
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        os.close(pidfd)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


@pytest.fixture
def http_server() -> Iterator[tuple[int, subprocess.Popen[str]]]:
    """A real HTTP server that is not the service, on a port the kernel picked."""
    process = subprocess.Popen(
        [sys.executable, "-c", HTTP_SERVER], stdout=subprocess.PIPE, text=True, cwd="/tmp"
    )
    assert process.stdout is not None
    port = int(process.stdout.readline())
    yield port, process
    process.kill()
    process.wait(timeout=30)


def _listed(capsys: pytest.CaptureFixture[str], profile: Path) -> dict[int, dict]:  # type: ignore[type-arg]
    assert main(["--profile", str(profile), "procs", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    return {proc["identity"]["pid"]: proc for proc in listing["processes"]}


async def _k_listing(profile: Path) -> ProcListing:
    """What the console's K starts from: the deck's listing with its context."""
    deck = open_deck(load_profile(str(profile)))
    try:
        return await list_gpu_processes(deck.host, None, await deck_context(deck))
    finally:
        await deck.close()


def test_a_disguised_orphan_of_another_user_is_a_suspect_never_killed(
    disguised_orphan: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pid = disguised_orphan
    profile = tmp_path / "nounit.toml"
    profile.write_text('[service]\nengine = "vllm"\nunit = "servedeck-no-such-unit.service"\n')

    found = _listed(capsys, profile)[pid]
    assert found["klass"] == "suspect", found
    assert "not proven the service's" in found["reason"]
    assert "no record of its start" in found["reason"]
    if os.geteuid() == 0:
        assert found["user"] == "nobody"

    # K's default set is leftovers(): the suspect is not in it.
    listing = asyncio.run(_k_listing(profile))
    assert listing.find(pid) is not None
    assert pid not in {proc.pid for proc in leftovers(listing.processes)}

    assert main(["--profile", str(profile), "kill", "--leftovers", "--yes"]) == 0
    assert "no leftover GPU processes" in capsys.readouterr().out
    # Named by pid with --yes it still needs the typed confirmation a foreign one gets.
    assert main(["--profile", str(profile), "kill", str(pid), "--yes"]) == 2
    assert "--confirm-foreign" in capsys.readouterr().err
    assert proc_state(pid) not in (None, "Z")


def test_an_unrelated_server_on_the_port_is_named_not_killed(
    http_server: tuple[int, subprocess.Popen[str]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    port, process = http_server
    # The unit exists and is inactive (systemctl is a stand-in here: no systemd runs).
    profile = service_profile(tmp_path, monkeypatch, port=port, active_state="inactive")

    found = _listed(capsys, profile)[process.pid]
    assert found["klass"] == "foreign", found
    assert f"holds port {port}" in found["reason"] and found["pid_source"] == "port"

    assert main(["--profile", str(profile), "kill", "--leftovers", "--yes"]) == 0
    capsys.readouterr()
    assert process.poll() is None
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as answer:
        assert answer.status == 200  # still serving
