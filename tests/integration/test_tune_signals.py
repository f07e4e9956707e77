"""`servedeck tune` as a real process on the simulator: SIGTERM, SIGKILL, a deadline, --apply.

Each test starts `python -m tui tune --demo` with a two-configuration space and a short
load, then signals it or lets it finish; what it did to the unit is read back from the
audit log, the restore marker and the simulated box's own folder. The single-stream
benchmark asks for 4 tokens a request: its 16 requests take 2 s, not 5 (none of these
tests reads its figure).
"""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.cli_support import REPO, cli_env, run  # noqa: F401 (fixture)
from tui.core.audit import read_audit

SPACE = """
[tune]
objective = "single_stream"
budget_s = 300
deadline_s = {deadline_s}
input_tokens = 64
output_tokens = 4

[[config]]
name = "first"
"--max-num-seqs" = 4
{first_env}

[[config]]
name = "second"
"--max-num-seqs" = 8
"""


class Tune:
    """A running `servedeck tune` whose output lines are collected as they come."""

    def __init__(self, env: dict[str, str], *args: str, stdin: int | None = None) -> None:
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tui", "tune", "--demo", *args],
            cwd=REPO,
            env={**env, "PYTHONUNBUFFERED": "1"},
            stdin=stdin if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, timeout_s: float = 90.0) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = next((line for line in self.lines if text in line), None)
            if found is not None:
                return found
            if self.process.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.05)
        raise AssertionError(f"no {text!r} in the output:\n" + "\n".join(self.lines))

    def finish(self, timeout_s: float = 120.0) -> int:
        code = self.process.wait(timeout=timeout_s)
        self._reader.join(timeout=5)
        return code

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _space(tmp_path: Path, deadline_s: float = 60, first_env: str = "") -> str:
    path = tmp_path / "tune.toml"
    path.write_text(SPACE.format(deadline_s=deadline_s, first_env=first_env))
    return str(path)


def _audit(env: dict[str, str]) -> list[dict]:
    return list(read_audit(Path(env["SERVEDECK_LOG_DIR"]) / "demo" / "audit.jsonl"))


def _marker(env: dict[str, str]) -> Path:
    """The restore marker in the demo's own data folder."""
    return Path(env["SERVEDECK_DATA_DIR"]) / "demo" / "tune-restore.json"


def _dropin(line: str) -> Path:
    """The drop-in's path from the `$ tee PATH` line the tune prints."""
    return Path(line.split("$ tee ", 1)[1].strip())


@pytest.fixture
def audit_env(cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:  # noqa: F811
    monkeypatch.setenv("SERVEDECK_LOG_DIR", cli_env["SERVEDECK_LOG_DIR"])
    monkeypatch.setenv("SERVEDECK_DATA_DIR", cli_env["SERVEDECK_DATA_DIR"])
    return cli_env


@pytest.mark.timeout(180)
def test_sigterm_mid_configuration_restores_the_unit_and_audits_it(
    tmp_path: Path, audit_env: dict[str, str]
) -> None:
    tune = Tune(audit_env, "--space", _space(tmp_path), "--yes")
    dropin = _dropin(tune.wait_for("$ tee "))
    assert dropin.is_file()
    time.sleep(1.0)  # into the first configuration's load
    tune.process.send_signal(signal.SIGTERM)
    assert tune.finish() == 130, tune.text
    assert "tune cancelled: the unit is as it was" in tune.text
    assert "unit restored: drop-in removed, service started as before" in tune.text
    records = _audit(audit_env)
    removed = [r for r in records if r["event"] == "tune.dropin" and r["what"] == "remove"]
    assert removed and removed[-1]["ok"] and removed[-1]["dropin"] == str(dropin), records
    # the service was running before the tune: it is started again after the removal
    at = records.index(removed[-1])
    assert any(
        r["event"] == "service.request" and r.get("action") == "start" for r in records[at:]
    ), records[at:]
    assert not _marker(audit_env).exists()


@pytest.mark.timeout(180)
def test_sigkill_leaves_the_marker_and_restore_undoes_it(
    tmp_path: Path, audit_env: dict[str, str]
) -> None:
    tune = Tune(audit_env, "--space", _space(tmp_path), "--yes")
    dropin = _dropin(tune.wait_for("$ tee "))
    time.sleep(1.0)
    tune.process.send_signal(signal.SIGKILL)
    tune.finish()
    marker = _marker(audit_env)
    assert marker.is_file() and str(dropin) in marker.read_text()
    assert dropin.is_file()  # the dead tune's drop-in, on its simulated box
    restored = run(audit_env, "tune", "--demo", "--restore")
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert str(dropin) in restored.stdout and "Traceback" not in restored.stderr
    assert not dropin.exists() and not marker.exists()
    assert not dropin.parent.parent.exists()  # the dead tune's box: swept, processes ended


@pytest.mark.timeout(240)
def test_the_next_tune_undoes_a_killed_tune_first(
    tmp_path: Path, audit_env: dict[str, str]
) -> None:
    space = _space(tmp_path, deadline_s=60)
    tune = Tune(audit_env, "--space", space, "--yes")
    dropin = _dropin(tune.wait_for("$ tee "))
    tune.process.send_signal(signal.SIGKILL)
    tune.finish()
    marker = _marker(audit_env)
    assert marker.is_file()
    again = Tune(audit_env, "--space", space, "--yes", "--dry-run")
    assert again.finish() == 0, again.text
    assert marker.is_file()  # a dry run starts nothing and undoes nothing
    again = Tune(audit_env, "--space", space, "--yes")
    assert again.finish(timeout_s=200) == 0, again.text
    assert str(dropin) in again.text and not dropin.exists() and not marker.exists()


@pytest.mark.timeout(240)
def test_a_load_past_its_deadline_is_a_timeout_and_the_run_goes_on(
    tmp_path: Path, audit_env: dict[str, str]
) -> None:
    slow = 'env = { SERVEDECK_SIM_LOAD_SLOWDOWN = "50" }'
    tune = Tune(audit_env, "--space", _space(tmp_path, deadline_s=12, first_env=slow), "--yes")
    assert tune.finish(timeout_s=220) == 0, tune.text
    assert "deadline: 12 s passed in phase" in tune.text
    assert "timeout at " in tune.text  # the phase it was in, recorded with the outcome
    # the result table: rank, name, outcome, ...
    table = (line.split() for line in tune.lines if line[:1].isdigit())
    rows = {words[1]: words[2] for words in table if len(words) > 2}
    assert rows.get("first") == "timeout" and rows.get("second") == "served", tune.text
    assert "unit restored: drop-in removed, service started as before" in tune.text


@pytest.mark.timeout(240)
def test_apply_without_confirmation_removes_the_dropin_and_says_so(
    tmp_path: Path, audit_env: dict[str, str]
) -> None:
    controller, terminal = pty.openpty()
    try:
        tune = Tune(audit_env, "--space", _space(tmp_path), "--apply", stdin=terminal)
        tune.wait_for("2. second")  # the plan; the run's question follows
        # yes to the run; the apply question then meets the end of input (Ctrl-D)
        os.write(controller, b"y\n\x04")
        assert tune.finish(timeout_s=220) == 0, tune.text
    finally:
        os.close(terminal)
        os.close(controller)
    assert "not applied" in tune.text and "drop-in removed" in tune.text, tune.text
    writes = [r for r in _audit(audit_env) if r["event"] == "tune.dropin"]
    assert writes[-1]["what"] == "remove", writes


@pytest.mark.timeout(240)
def test_apply_with_yes_keeps_the_winners_dropin(tmp_path: Path, audit_env: dict[str, str]) -> None:
    tune = Tune(audit_env, "--space", _space(tmp_path), "--apply", "--yes")
    assert tune.finish(timeout_s=220) == 0, tune.text
    applied = tune.wait_for("applied: ")
    writes = [r for r in _audit(audit_env) if r["event"] == "tune.dropin"]
    assert writes[-1]["what"] in ("write", "reload"), writes
    kept = [r for r in writes if r["what"] == "write"][-1]
    assert f"servedeck tune: {applied.split()[1]}" in kept["text"], (applied, kept)


@pytest.mark.timeout(120)
def test_another_hosts_marker_is_kept_and_the_tune_refuses(
    tmp_path: Path, audit_env: dict[str, str]
) -> None:
    marker = _marker(audit_env)
    marker.parent.mkdir(parents=True, exist_ok=True)
    left = (
        '{"host": "gpu-7", "unit": "vllm.service", "dropin_path": '
        '"/etc/systemd/system/vllm.service.d/90-servedeck-tune.conf", '
        '"was_active": true, "written_at_s": 1.0}'
    )
    marker.write_text(left)
    result = run(audit_env, "tune", "--demo", "--space", _space(tmp_path), "--yes")
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    assert "gpu-7" in result.stderr and "--restore" in result.stderr, result.stderr
    assert marker.read_text() == left  # what gpu-7 needs undone is not lost
    assert not [r for r in _audit(audit_env) if r["event"] == "tune.dropin"]
