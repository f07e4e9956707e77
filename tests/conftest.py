"""Shared test setup: every run gets its own servedeck config, data and log dirs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

# Fixture plugins, one module per area (keeps this file free of merge fights).
pytest_plugins: list[str] = [
    "tests.support.sim_fixtures",
    "tests.support.gpu_fixtures",
    "tests.support.journal_fixtures",
    "tests.support.sshd_fixtures",
    "tests.support.procs_fixtures",
    "tests.support.bench_fixtures",
    "tests.support.vllm_harness",
    "tests.support.cli_support",
    "tests.support.tiers",
    "tests.support.quiet",
    "tests.support.worker_scope",
    "tests.support.leftover_tasks",
    "tests.support.skipped_parts",
]


@pytest.fixture(autouse=True)
def isolated_dirs(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """Point platformdirs-backed paths at a temporary folder so tests never touch ~."""
    root = tmp_path_factory.mktemp("servedeck-home")
    for name in ("CONFIG", "DATA", "LOG"):
        folder = root / name.lower()
        folder.mkdir()
        monkeypatch.setenv(f"SERVEDECK_{name}_DIR", str(folder))
    yield root
