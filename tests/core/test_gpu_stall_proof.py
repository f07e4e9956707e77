"""tests/perf/gpu_stall_proof.py here, where no NVIDIA GPU runs: its one-line refusal, and
the check each step's verdict goes through on the GPU box (the readings below are the ones an
H100 gave, `servedeck status --json`'s `progress` as it printed them)."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tui.gpu.nvml import NvmlGpuSource
from tui.gpu.nvml_calls import NvmlUnavailable

SCRIPT = Path(__file__).parents[1] / "perf" / "gpu_stall_proof.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_stall_proof", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


proof = _load()
FLAT = "4 running, 0 waiting, no generated token for 11 s (stall after 10 s)"
RIGHT: dict[str, dict[str, Any]] = {
    "serving": {"state": "serving", "kind": None, "evidence": ["164 tok/s generated"]},
    "gpu_spin": {
        "state": "stalled",
        "kind": "gpu_spin",
        "kind_text": "GPUs busy with no tokens",
        "evidence": [FLAT, "GPU utilization 100 % over 1 GPUs, 694 W, 4 running, 0 waiting"],
    },
    "cpu_block": {
        "state": "stalled",
        "kind": "cpu_block",
        "kind_text": "GPUs idle with requests queued",
        "evidence": [FLAT, "GPU utilization 0 % over 1 GPUs, 72 W, 4 running, 0 waiting"],
    },
}


def reading(step: Any, progress: dict[str, Any] | None, errors: tuple[str, ...] = ()) -> Any:
    return proof.Reading(step, 100.0, 699.0, progress, errors, 13.0)


def right_progress(step: Any) -> dict[str, Any]:
    return RIGHT[step.kind or step.state]


def test_no_gpu_is_said_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        source = asyncio.run(NvmlGpuSource.open())
    except NvmlUnavailable:
        pass
    else:
        asyncio.run(source.aclose())
        pytest.skip("an NVIDIA GPU answers here: the proof would run")
    assert asyncio.run(proof.main([])) == 2
    assert capsys.readouterr().out == "no NVIDIA GPU: nothing to prove here\n"


@pytest.mark.parametrize("step", proof.STEPS, ids=lambda step: step.name)
def test_each_expected_verdict_passes(step: Any) -> None:
    assert proof.problem(reading(step, right_progress(step))) is None


def test_a_wrong_kind_is_named_with_its_evidence() -> None:
    spin = proof.STEPS[1]
    why = proof.problem(reading(spin, RIGHT["cpu_block"]))
    assert why is not None and why.startswith(
        "CPU hang, GPU pinned: expected stalled/gpu_spin, read stalled/cpu_block: "
    )
    assert "GPU utilization 0 %" in why


@pytest.mark.parametrize(
    "evidence",
    [
        [FLAT, "GPU utilization 100 % over 1 GPUs, 4 running, 0 waiting"],  # no power read
        [FLAT, "GPU utilization 60 % over 1 GPUs, 300 W, 4 running, 0 waiting"],  # not pinned
        ["GPU utilization 100 % over 1 GPUs, 694 W, 4 running, 0 waiting"],  # tokens not said flat
    ],
    ids=["no-power", "not-pinned", "tokens-unsaid"],
)
def test_a_spin_verdict_must_show_its_evidence(evidence: list[str]) -> None:
    progress = {**RIGHT["gpu_spin"], "evidence": evidence}
    assert proof.problem(reading(proof.STEPS[1], progress)) is not None


def test_no_verdict_says_why() -> None:
    missing = reading(proof.STEPS[0], None, ("status exited 3: host unreachable",))
    assert proof.problem(missing) == (
        "streams, GPU idle: no verdict (status exited 3: host unreachable)"
    )


def test_the_table_marks_unknowns_and_wrong_steps() -> None:
    unread = proof.Reading(proof.STEPS[2], None, None, RIGHT["gpu_spin"], (), 13.2)
    text = proof.table([reading(proof.STEPS[0], RIGHT["serving"]), unread])
    header, first, second, *evidence = text.splitlines()
    assert header.split()[:3] == ["step", "NVML", "util"]
    assert first.endswith("yes") and "100 %" in first and "699 W" in first
    assert second.endswith("no") and "  ?  " in second
    assert "stalled: GPUs busy with no tokens" in second
    assert "  CPU hang, GPU freed: " + FLAT in evidence
