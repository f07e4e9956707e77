"""`servedeck procs` and `servedeck kill` against real orphaned processes.

The test process makes itself a child subreaper, so the orphans are adopted by
"the console" the way they would be if it ran as one; the GPU source is the
hint source in procs_fixtures (no GPU here; the simulator's will replace it).
"""

from __future__ import annotations

import json

import pytest

from tests.support import procs_fixtures
from tests.support.procs_fixtures import GPU_HINTS, service_profile, wait_until
from tui.cli import main
from tui.core.audit import read_audit
from tui.gpu.model import GpuProcessUsage

GIB = 1024**3


@pytest.fixture(autouse=True)
def hint_gpu_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """No GPU here: the deck's GPU source is replaced by one that names the test's processes."""

    async def hint_source(deck: object) -> procs_fixtures.HintGpuSource:
        return procs_fixtures.HintGpuSource()

    monkeypatch.setattr("tui.deck.Deck.gpu_source", hint_source)


@pytest.fixture
def run(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    """main() with a profile whose stopped unit runs as this test's user from its directory
    (systemctl is a stand-in here): the proof that the test's orphans are its leftovers."""
    profile = service_profile(tmp_path, monkeypatch)
    return lambda argv: main(["--profile", str(profile), *argv])


def test_procs_json_lists_an_adopted_worker_as_leftover(spawn_orphan, run, capsys) -> None:  # type: ignore[no-untyped-def]
    worker = spawn_orphan("VLLM::Worker_TP3", adopted_by_test=True)
    GPU_HINTS.append(GpuProcessUsage(worker.pid, 3, 30 * GIB))
    assert run(["procs", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    # Only this test's worker is asked about: another run's orphan on a shared machine that
    # matches the service's patterns is rightly listed too.
    (proc,) = [p for p in listing["processes"] if p["identity"]["pid"] == worker.pid]
    assert proc["klass"] == "leftover" and proc["gpu_memory_bytes"] == 30 * GIB
    assert run(["procs"]) == 0
    out = capsys.readouterr().out
    assert "leftover" in out and str(worker.pid) in out and "30.0 GiB" in out


def test_procs_states_each_process_sm_share_and_unknown_as_null(spawn_orphan, run, capsys) -> None:  # type: ignore[no-untyped-def]
    busy = spawn_orphan("VLLM::Worker_TP0", adopted_by_test=True)
    unknown = spawn_orphan("VLLM::Worker_TP1", adopted_by_test=True)
    GPU_HINTS.extend(
        [
            GpuProcessUsage(busy.pid, 0, 30 * GIB, sm_util_percent=87.5),
            GpuProcessUsage(unknown.pid, 1, 30 * GIB),  # its GPU does not report it
        ]
    )
    assert run(["procs", "--json"]) == 0
    by_pid = {p["identity"]["pid"]: p for p in json.loads(capsys.readouterr().out)["processes"]}
    assert by_pid[busy.pid]["sm_util_percent"] == 87.5
    assert by_pid[busy.pid]["gpus"][0]["sm_util_percent"] == 87.5
    assert by_pid[unknown.pid]["sm_util_percent"] is None  # unknown, never 0
    assert run(["procs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "SM%" in next(line for line in lines if line.startswith("CLASS"))
    assert " 88 " in next(line for line in lines if f" {busy.pid} " in line)
    assert "   ? " in next(line for line in lines if f" {unknown.pid} " in line)


def test_kill_leftovers_needs_yes_off_a_terminal(spawn_orphan, run, capsys) -> None:  # type: ignore[no-untyped-def]
    worker = spawn_orphan("VLLM::Worker_TP0", adopted_by_test=True)
    GPU_HINTS.append(GpuProcessUsage(worker.pid, 0, 10 * GIB))
    assert run(["kill", "--leftovers"]) == 2
    assert "--yes" in capsys.readouterr().err
    assert worker.alive()


def test_kill_leftovers_yes_sigkills_a_stubborn_worker_and_reports_freed(  # type: ignore[no-untyped-def]
    spawn_orphan, run, capsys
) -> None:
    stubborn = spawn_orphan("VLLM::Worker_TP0", ignore_term=True, adopted_by_test=True)
    polite = spawn_orphan("VLLM::Worker_TP1", adopted_by_test=True)
    GPU_HINTS.extend(
        [GpuProcessUsage(stubborn.pid, 0, 20 * GIB), GpuProcessUsage(polite.pid, 1, 20 * GIB)]
    )
    assert run(["kill", "--leftovers", "--yes", "--timeout", "1"]) == 0
    out = capsys.readouterr().out
    assert f"pid {stubborn.pid}: killed [SIGTERM SIGKILL]" in out
    assert f"pid {polite.pid}: terminated [SIGTERM]" in out
    assert "40.00 GiB GPU memory freed" in out
    assert wait_until(lambda: not stubborn.alive() and not polite.alive())
    events = [record["event"] for record in read_audit()]
    assert events == ["kill-request", "kill-outcome"]


def test_kill_read_only_is_refused_and_audited(spawn_orphan, run, capsys) -> None:  # type: ignore[no-untyped-def]
    worker = spawn_orphan("VLLM::Worker_TP0", adopted_by_test=True)
    GPU_HINTS.append(GpuProcessUsage(worker.pid, 0, GIB))
    assert run(["--read-only", "kill", str(worker.pid), "--yes"]) == 3
    assert "read-only" in capsys.readouterr().err
    assert worker.alive()
    (record,) = read_audit()
    assert record["event"] == "kill-refused" and record["targets"][0]["pid"] == worker.pid


def test_kill_foreign_needs_the_pid_typed(spawn_orphan, run, capsys) -> None:  # type: ignore[no-untyped-def]
    worker = spawn_orphan("python3 some_training_job.py", adopted_by_test=True)
    GPU_HINTS.append(GpuProcessUsage(worker.pid, 0, 5 * GIB))
    assert run(["kill", str(worker.pid), "--yes"]) == 2
    assert "--confirm-foreign" in capsys.readouterr().err
    assert worker.alive()
    code = run(["kill", str(worker.pid), "--yes", "--confirm-foreign", str(worker.pid)])
    assert code == 0, capsys.readouterr()
    assert wait_until(lambda: not worker.alive())


def test_kill_a_pid_that_holds_no_gpu_is_a_usage_error(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["kill", "1", "--yes"]) == 2
    assert "not a GPU process" in capsys.readouterr().err
    assert main(["kill", "--yes"]) == 2
