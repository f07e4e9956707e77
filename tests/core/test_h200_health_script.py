"""tests/perf/h200_health.py end to end, here without a GPU.

The script is meant for a real H200 box. No NVIDIA driver runs on this machine, so the
NVML calls are answered by the stand-in (tests/support/fake_nvml.py + the health calls of
tests/core/test_health_nvml.py); everything else (servedeck's reader, the kernel log read,
the badges, the Textual render) is the real code the box will run.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pynvml
import pytest

from tests.core.test_health_nvml import HealthNvml
from tests.support.fake_nvml import h200_box

SCRIPT = Path(__file__).parents[1] / "perf" / "h200_health.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("h200_health", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_script_writes_figures_and_svgs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    faults = {1: {"rows": (0, 1, 1, 0)}}
    gpus = h200_box(count=2)
    gpus[0].unsupported = {"nvmlDeviceGetRetiredPages", "nvmlDeviceGetNvLinkErrorCounter"}
    HealthNvml(gpus, faults).install(monkeypatch.setattr)
    module = _load()
    monkeypatch.setattr(module, "SCREENSHOTS", tmp_path / "screenshots")
    monkeypatch.setenv("OUT", str(tmp_path / "out"))
    assert await module.main() == 0
    printed = json.loads(capsys.readouterr().out)
    saved = json.loads((tmp_path / "out" / "health-h200.json").read_text())
    assert printed == saved
    assert saved["gpu_count"] == 2 and saved["nvml_health_read_ms"] >= 0
    gpu0, gpu1 = saved["gpus"]
    assert gpu0["counters"]["retired_pages_sbe"] == "n/a"
    assert gpu0["counters"]["nvlink_errors"] == "n/a"
    assert any("nvmlDeviceGetNvLinkErrorCounter" in why for why in gpu0["unavailable"])
    assert (gpu1["codes"], gpu1["badge"]) == ("R", "warn")
    assert saved["synthetic_xid_badge"] == {"gpu": 0, "codes": "X", "severity": "crit"}
    for name in ("health-badge-h200.svg", "health-badge-h200-synthetic-xid.svg"):
        assert (tmp_path / "out" / name).read_text().startswith("<svg")
    plain = (tmp_path / "out" / "health-badge-h200.svg").read_text()
    assert plain != (tmp_path / "out" / "health-badge-h200-synthetic-xid.svg").read_text()


def test_script_says_why_without_nvml() -> None:
    """Run as the box runs it: here NVML has no library, so a one-line reason, exit 2."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("h200_health: NVML unavailable:"), done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert pynvml  # the import the script needs is installed in the test venv
