"""`servedeck gpus --demo`: a real simulated box is loaded first."""

from __future__ import annotations

import json

import pytest

from tui.cli import main


def test_demo_gpus_json_shows_the_loaded_simulated_box(capsys: pytest.CaptureFixture[str]) -> None:
    """`gpus --demo` loads a simulated box first: eight 96 GB GPUs holding the model's share."""
    assert main(["gpus", "--demo", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["simulated"] is True and data["gpu_count"] == 8
    assert {static["numa_node"] for static in data["statics"]} == {0, 1}
    assert all(sample["memory_used_bytes"] > 10 * 1024**3 for sample in data["samples"])
    assert all(len(sample["processes"]) == 1 for sample in data["samples"])
