"""Every test lives in a tier folder, and the fast tiers start no real server."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.support.tiers import FAST_TIERS, TESTS, TIERS, xdist_group_of

# What a fast test must not start: each of these is a real server or a whole box.
_SLOW_PARTS = re.compile(
    r"SshdPair|sshd_pair|JournalWriter|start_vllm_server|VllmServer|chromium\(|"
    r"PrometheusServer|prometheus_factory|tmux"
)


def test_no_test_module_outside_a_tier() -> None:
    loose = sorted(path.name for path in TESTS.glob("test_*.py"))
    assert loose == [], f"move into tests/{{{','.join(TIERS)}}}: {loose}"
    for folder in TESTS.iterdir():
        if folder.is_dir() and any(folder.glob("test_*.py")):
            assert folder.name in TIERS, folder


def test_fast_tiers_start_no_real_server() -> None:
    offenders = [
        f"{path.parent.name}/{path.name}: {found.group(0)}"
        for tier in FAST_TIERS
        for path in sorted((TESTS / tier).glob("test_*.py"))
        if path.name != "test_tiers.py" and (found := _SLOW_PARTS.search(path.read_text()))
    ]
    assert offenders == []


@dataclass
class _Item:
    """What xdist_group_of reads of a collected test: its file, name, marks and fixtures."""

    path: Path
    name: str
    fixturenames: tuple[str, ...]
    keywords: tuple[str, ...] = ("real_vllm",)


def test_tests_sharing_a_module_server_run_on_one_worker() -> None:
    path = TESTS / "integration" / "test_real_vllm_2026.py"
    shared = [
        _Item(path, name, ("deck_of", "spec_lora_module_server"))
        for name in ("test_ngram", "test_lora")
    ]
    own = [_Item(path, name, ("vllm_server_factory",)) for name in ("test_dp", "test_other")]
    groups = [xdist_group_of(item) for item in (*shared, *own)]  # type: ignore[arg-type]
    assert groups[0] == groups[1] == "real_vllm_own:test_real_vllm_2026.py::spec_lora_module_server"
    assert len(set(groups)) == 3  # a test that starts its own server is still a group alone
