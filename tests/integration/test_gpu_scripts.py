"""The GPU perf scripts run here (fake NVML) and fail clearly without a driver; no Textual in
the GPU sources."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tui.gpu.nvml_calls import nvml_driver_present

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_sources_do_not_import_textual() -> None:
    code = (
        "import sys, tui.gpu.nvml, tui.gpu.smi, tui.gpu.factory, tui.gpu.history, "
        "tui.commands.gpus_cmd; print('textual' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert result.stdout.strip() == "False", result.stderr


def test_gpu_tick_runs_on_the_fake_shim() -> None:
    result = subprocess.run(
        [sys.executable, "tests/perf/gpu_tick.py", "--fake", "--ticks", "3", "--gpus", "2"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "fake NVML shim" in result.stdout and "loop-thread CPU per sample()" in result.stdout


@pytest.mark.skipif(nvml_driver_present(), reason="an NVIDIA driver is present")
def test_h200_verify_without_driver_is_one_clear_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "tests/perf/h200_verify.py", str(tmp_path / "out")],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith("h200_verify: no NVIDIA driver here")
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
