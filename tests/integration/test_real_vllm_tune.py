"""`servedeck tune` end to end on the real vLLM CPU build: two configurations, real restarts.

The tune's own path (`tui.tune.session.tune_on_deck`, what the command and the console
run) over a Deck of this machine: no GPU (a real `nvidia-smi` lookup says so, and the
Plan says "no GPUs: layout not checked" instead of inventing one), a unit-like service
whose each start runs the venv's `vllm serve` with the drop-in's flags and environment
(tests/support/vllm_unit.py: systemd is not the init here, the module says what stands in
for it), the unit's output as the log. Each configuration is written as a drop-in,
started through the restart guard, its load followed, its /health awaited, measured by
the benchmark process (one level: the single-stream objective) and stopped; the unit ends
as it began: stopped, no drop-in, no restore marker, no process of it left.
"""

from __future__ import annotations

import asyncio
import shutil
import time
import uuid
from pathlib import Path

import pytest

from tests.support.vllm_harness import (
    MODELINFOS,
    copy_new_files,
    free_port,
    record_timing,
    shared_modelinfos,
    short_tmpdir,
)
from tests.support.vllm_install import VllmVenv
from tests.support.vllm_procs import ProcInfo, kill_run, processes_with_marker
from tests.support.vllm_unit import UNIT, CpuBoxDeck, ProcessUnit, unit_text
from tui.core.audit import read_audit
from tui.core.profile_store import load_profile
from tui.summary.recorded import recorded_history
from tui.tune.dropin import read_marker
from tui.tune.preflight import plan_for_deck, plan_lines
from tui.tune.results import ranked, result_lines
from tui.tune.session import tune_on_deck
from tui.tune.space import parse_space

pytestmark = pytest.mark.real_vllm

SPACE = """
[tune]
objective = "single_stream"
budget_s = 900
deadline_s = 300
input_tokens = 32
output_tokens = 16

[[config]]
name = "seqs=2"
"--max-num-seqs" = 2

[[config]]
name = "seqs=8"
"--max-num-seqs" = 8
env = { VLLM_CPU_KVCACHE_SPACE = "2" }
"""


def _profile(folder: Path, port: int, log_path: Path, model_dir: Path) -> Path:
    path = folder / "cpu-vllm.toml"
    path.write_text(
        "[service]\n"
        'engine = "vllm"\n'
        f'unit = "{UNIT}"\n'
        f'base_url = "http://127.0.0.1:{port}"\n'
        f'log_file = "{log_path}"\n'
        "[model]\n"
        'name = "tiny-llama"\n'
        f'path = "{model_dir}"\n'
        "[benchmark.slo]\n"  # two shared cores: the single stream's figures, not an SLO verdict
        "ttft_p99_ms = 0\nitl_p99_ms = 0\nmin_user_tok_s = 0\n"
    )
    return path


class LaunchLog(ProcessUnit):
    """The ProcessUnit, keeping each start's command line (env assignments included)."""

    def __init__(self, text: str, state_dir: Path, port: int) -> None:
        self.launched: list[list[str]] = []
        super().__init__(text, state_dir, port)

    def _argv(self) -> list[str]:
        argv = super()._argv()
        self.launched.append(argv)
        return argv


def _after_stop(run_id: str, settle_s: float = 15.0) -> list[ProcInfo]:
    """The run's processes left once the stop settles. multiprocessing's resource tracker
    ignores SIGTERM and ends by itself when the last server process is gone (its pipe
    closes): under load it was still cleaning up when the unit read inactive (ppid 1). A
    systemd stop (KillMode=control-group) ends only once the cgroup is empty, so what is
    judged is what is left after that settling, not the tracker's last seconds."""
    deadline = time.monotonic() + settle_s
    left = processes_with_marker(run_id)
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = processes_with_marker(run_id)
    return left


@pytest.mark.timeout(600)
def test_two_configurations_tuned_end_to_end_on_the_cpu_build(
    vllm_venv: VllmVenv, tiny_model_dir: Path, tmp_path: Path
) -> None:
    workdir, state_dir = tmp_path / "unit", tmp_path / "state"
    workdir.mkdir()
    state_dir.mkdir()
    copy_new_files(shared_modelinfos(vllm_venv), workdir / "vllm-cache" / MODELINFOS)
    port, tmpdir, run_id = free_port(), short_tmpdir(), uuid.uuid4().hex
    text = unit_text(vllm_venv, tiny_model_dir, port, workdir, tmpdir, run_id)
    unit = LaunchLog(text, state_dir, port)
    profile = load_profile(str(_profile(tmp_path, port, unit.stdout_path, tiny_model_dir)))
    space = parse_space(SPACE, tmp_path / "tune.toml")
    said: list[str] = []

    async def tune() -> tuple[list[str], list]:  # type: ignore[type-arg]
        deck = CpuBoxDeck(profile, unit)
        try:
            planned = await plan_for_deck(deck, space)
            return plan_lines(planned), await tune_on_deck(deck, space, planned, say=said.append)
        finally:
            await deck.close()

    started = time.monotonic()
    try:
        plan, outcomes = asyncio.run(tune())
        record_timing("tune of two configurations (two starts)", time.monotonic() - started)
        left = _after_stop(run_id)
    finally:
        kill_run(run_id, grace_s=10.0)
        shutil.rmtree(tmpdir, ignore_errors=True)
    table = result_lines(outcomes, space.objective)
    print("\n".join([*plan, *said[-3:], *table]))

    assert plan[1] == "  local: no nvidia-smi: no GPUs: layout not checked", plan
    assert [o.outcome for o in outcomes] == ["served", "served"], (outcomes, said)
    for outcome in outcomes:
        assert outcome.gpus == 0 and outcome.tok_per_gpu is None, outcome
        assert outcome.load_s and outcome.single_stream_tok_s, outcome
    # no 0 stands for unknown: a capacity is proved (the SLO is off: only the client, errors
    # or a cut-short level fail one) or "none proved" with that level and why; no GPUs is said
    rows = [line.split("  ") for line in table[1:3]]
    for outcome, row in zip(ranked(outcomes, space.objective), rows, strict=True):
        cells = [cell.strip() for cell in row if cell.strip()]
        assert cells[-3:] == ["no GPUs", "no GPUs", "no GPUs"], table
        if outcome.capacity_users is None:
            assert (outcome.capacity_none_proved or "").startswith("at 1 user, "), outcome
            assert outcome.total_tok_s is None and "none proved" in cells, table
            assert f"{outcome.name}: capacity none proved: " in "\n".join(table), table
        else:
            assert outcome.capacity_users > 0 and outcome.total_tok_s, outcome
    assert not any(" 0 users" in line or "/0;" in line or "/0\n" in line for line in table), table
    best = ranked(outcomes, space.objective)[0]
    assert any(line.startswith(f"best: {best.name}") for line in table), table
    # each start ran the drop-in's command line and environment
    assert len(unit.launched) == 2
    for argv, seqs in zip(unit.launched, ("2", "8"), strict=True):
        assert argv[argv.index("--max-num-seqs") + 1] == seqs, argv
    assert "VLLM_CPU_KVCACHE_SPACE=2" in unit.launched[1]
    assert "VLLM_CPU_KVCACHE_SPACE=1" in unit.launched[0]  # the unit's own, without a drop-in
    log = unit.stdout_path.read_text(errors="replace")
    assert "'max_num_seqs': 2" in log and "'max_num_seqs': 8" in log
    # the unit as it began: stopped, no drop-in, no marker, none of its processes left
    assert unit.state == "inactive" and not list(unit.dropin_dir.glob("*.conf"))
    assert read_marker() is None and left == [], left
    audit = list(read_audit())
    starts = [r for r in audit if r["event"] == "service.request" and r.get("action") == "start"]
    assert len(starts) == 2, starts
    assert any(r["event"] == "tune.dropin" and r.get("what") == "remove" for r in audit)
    # each start a Deployment attempt, the tune on the Timeline
    history = recorded_history(profile, profile.host_label)
    assert history is not None and history.tune is not None, history
    assert [a.outcome for a in history.attempts].count("served") == 2, history.attempts
