"""Every test lives in a tier folder, and the fast tiers start no real server."""

from __future__ import annotations

import re

from tests.support.tiers import FAST_TIERS, TESTS, TIERS

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
