"""`servedeck gpus`: table and JSON output.

NVML is replaced by tests/support/fake_nvml.py (no NVIDIA driver on this machine).
"""

from __future__ import annotations

import json
from pathlib import Path

import pynvml
import pytest

from tests.support.fake_nvml import FakeNvml, h200_box
from tui.cli import main


def test_json_has_stable_keys_with_units(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    FakeNvml(h200_box(2)).install(monkeypatch.setattr)
    assert main(["gpus", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["gpu_count"] == 2 and data["available"] is True and data["source"] == "nvml"
    sample = data["samples"][1]
    assert sample["memory_used_bytes"] == 61 * 1024**3
    assert sample["power_w"] == pytest.approx(121.5)
    assert data["statics"][0]["numa_node"] == 0
    assert list(sample)[:3] == ["index", "memory_used_bytes", "memory_total_bytes"]


def test_table(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    gpus = h200_box(2)
    gpus[1].lost = True
    FakeNvml(gpus).install(monkeypatch.setattr)
    assert main(["gpus"]) == 0
    out = capsys.readouterr().out
    assert "2 GPUs via nvml (driver 570.124.06, CUDA 12.8)" in out
    assert "60.0/140.4" in out and "LOST" in out


def test_watch_prints_json_lines(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    FakeNvml(h200_box(1)).install(monkeypatch.setattr)
    printed = []

    real_sleep = __import__("asyncio").sleep

    async def stop_after_two(seconds: float) -> None:
        printed.append(seconds)
        if len(printed) == 2:
            raise KeyboardInterrupt
        await real_sleep(0)

    monkeypatch.setattr("tui.commands.gpus_cmd.asyncio.sleep", stop_after_two)
    assert main(["gpus", "--json", "--watch", "--interval", "0.5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(json.loads(line)["gpu_count"] == 1 for line in lines)
    assert printed == [0.5, 0.5]


def test_no_driver_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    FakeNvml([], init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND).install(monkeypatch.setattr)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["gpus"]) == 1
    assert capsys.readouterr().out == "GPUs: no NVIDIA driver (NVML library not found)\n"


def test_bad_profile_and_interval(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gpus", "--profile", "no-such-profile"]) == 2
    assert "profile 'no-such-profile' not found" in capsys.readouterr().err
    assert main(["gpus", "--interval", "0"]) == 2
