"""The tune's plan: invalid and too-big layouts skipped with the arithmetic, the rest by load time."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tui.core.config import Profile
from tui.hosts.local import LocalHost
from tui.hosts.profiles import load_profile
from tui.plan.inventory import NoGpus, inventory_from_nvidia_smi, stated_inventory
from tui.plan.layout import FITS, INVALID, TOO_BIG
from tui.sim.facts import simulated_model_facts
from tui.tune.driver import Outcome
from tui.tune.preflight import UNCHECKED, plan_lines, plan_space, plan_without_gpus
from tui.tune.space import parse_space

SPACE = """
[grid]
"--tensor-parallel-size" = [4, 6, 8]
"--enable-expert-parallel" = [false, true]
[[config]]
name = "tp16"
"--tensor-parallel-size" = 16
"""


def _profile() -> Profile:
    return load_profile(None, demo=True)


def test_each_configuration_gets_the_plans_verdict_and_arithmetic() -> None:
    space = parse_space(SPACE, Path("tune.toml"))
    gpus = stated_inventory(8, 97_887 / 1024, "12.0", False)
    planned = plan_space(space, simulated_model_facts(), gpus, _profile(), 60.0)
    by_name = {p.config.name: p for p in planned}
    assert by_name["no-ep tp=6"].verdict == INVALID
    assert "64 / 6" in by_name["no-ep tp=6"].reason
    assert (
        by_name["ep tp=4"].verdict == TOO_BIG
        and "weights + 2.00 GiB reserve >" in by_name["ep tp=4"].reason
    )
    assert (
        by_name["tp16"].verdict == INVALID
        and "needs 16 GPUs, the host has 8" in by_name["tp16"].reason
    )
    runnable = [p for p in planned if p.runnable]
    assert {p.config.name for p in runnable} == {"no-ep tp=8", "ep tp=8"}
    assert all(p.verdict == FITS and p.kv_room_bytes_per_gpu for p in runnable)
    # the runnable come first, ordered by predicted load time (weights per GPU x the base)
    assert planned[: len(runnable)] == tuple(runnable)
    loads = [p.predicted_load_s for p in runnable]
    assert loads == sorted(loads) and all(s is not None and 0 < s <= 61 for s in loads)
    text = plan_lines(planned)
    assert text[0] == "2 to run, by predicted load time; 5 skipped"
    assert any(
        line.startswith("  skip no-ep tp=6: invalid: attention heads 64 / 6") for line in text
    )


def test_unknown_base_load_time_stays_unknown() -> None:
    space = parse_space(SPACE, Path("tune.toml"))
    gpus = stated_inventory(8, 97_887 / 1024, "12.0", False)
    planned = plan_space(space, simulated_model_facts(), gpus, _profile(), None)
    assert all(p.predicted_load_s is None for p in planned)
    assert "load ~unknown" in plan_lines(planned)[1]


def test_a_host_without_gpus_is_said_and_each_configuration_runs_unchecked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CPU box (a CPU build of vLLM): this machine's real nvidia-smi lookup with no
    nvidia-smi on PATH gives NoGpus, and the plan says so instead of inventing a GPU."""
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no nvidia-smi here
    with pytest.raises(NoGpus, match="local: no nvidia-smi: no GPUs"):
        asyncio.run(inventory_from_nvidia_smi(LocalHost()))
    space = parse_space(SPACE, Path("tune.toml"))
    planned = plan_without_gpus(space, _profile(), 40.0, "local: no nvidia-smi: no GPUs")
    assert all(p.runnable and p.verdict == UNCHECKED and p.gpus == 0 for p in planned)
    # a load predicted only for the profile's own layout (TP=8 in the demo profile)
    loads = {p.config.name: p.predicted_load_s for p in planned}
    assert loads["no-ep tp=8"] == 40.0 and loads["no-ep tp=4"] is None, loads
    text = plan_lines(planned)
    assert text[:2] == [
        f"{len(planned)} to run, by predicted load time; 0 skipped",
        "  local: no nvidia-smi: no GPUs: layout not checked",
    ]
    assert "  1. no-ep tp=8  [TP=8, no GPU, load ~40s]" in text, text
    outcome = Outcome("x", "k", "served", planned[0].gpus, "TP=1", total_tok_s=100.0)
    assert outcome.tok_per_gpu is None  # no GPU: per-GPU throughput is not a number
