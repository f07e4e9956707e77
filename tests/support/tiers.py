"""Test tiers are folders: tests/core (pure), tests/ui (Pilot and snapshots), tests/integration.

The fast tier a developer runs before every commit is `pytest tests/core tests/ui`; the
same tests carry the `fast` marker, so `pytest -m fast` from the root selects them too.
A test that starts real servers (sshd, journald, the simulator's box, Chromium, tmux,
Prometheus, vLLM) or takes seconds belongs in tests/integration.
"""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
FAST_TIERS = ("core", "ui")
TIERS = (*FAST_TIERS, "integration")


def tier_of(path: Path) -> str | None:
    """The tier folder a test file lives in (None outside tests/<tier>/)."""
    try:
        relative = path.resolve().relative_to(TESTS)
    except ValueError:
        return None
    return relative.parts[0] if len(relative.parts) > 1 and relative.parts[0] in TIERS else None


# The real-vLLM tests are the longest part of the run. Those that share the session's
# server run on one xdist worker. Those that start servers of their own run beside it,
# one after the other on a second worker, in ORPHANING_FILES' order, each handing the
# server it ends with to the next (vllm_harness.VllmServerFactory.hand_on): the load
# explainer's warm server is the one the restart guard's test orphans, that test's
# restarted server the one the orphan killer's test orphans (three starts, not five).
# A real-vLLM test that starts its own server (DP=2, the tune's restarts) is a group of its
# own, so they spread over the workers the others leave free (one group of them all was the
# run's longest pole: 7-8 minutes on one worker). Tests that share a server their module
# starts once (a fixture named *_module_server: n-gram speculative decoding with LoRA on)
# are one group, on one worker. Every other test runs with the rest of its file, so a
# module's servers start once.
REAL_VLLM_SESSION = "real_vllm_session"
REAL_VLLM_ORPHANS = "real_vllm_orphans"
ORPHANING_FILES = (
    "test_real_vllm_load_explain.py",
    "test_real_vllm_guard.py",
    "test_real_vllm_procs.py",
)
REAL_VLLM_OWN = "real_vllm_own"
MODULE_SERVER_SUFFIX = "_module_server"
REAL_VLLM_GROUPS = (REAL_VLLM_SESSION, REAL_VLLM_ORPHANS, REAL_VLLM_OWN)


def xdist_group_of(item: pytest.Item) -> str:
    if "real_vllm" not in item.keywords:
        return item.path.name
    if "real_vllm_server" in getattr(item, "fixturenames", ()):
        return REAL_VLLM_SESSION
    if item.path.name in ORPHANING_FILES:
        return REAL_VLLM_ORPHANS
    fixtures = getattr(item, "fixturenames", ())
    shared = sorted(name for name in fixtures if name.endswith(MODULE_SERVER_SUFFIX))
    if shared:
        return f"{REAL_VLLM_OWN}:{item.path.name}::{shared[0]}"
    return f"{REAL_VLLM_OWN}:{item.path.name}::{item.name}"


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        tier = tier_of(item.path)
        if tier is not None:
            item.add_marker(getattr(pytest.mark, tier))
        if tier in FAST_TIERS:
            item.add_marker(pytest.mark.fast)
        item.add_marker(pytest.mark.xdist_group(xdist_group_of(item)))
    # The real-vLLM groups first: xdist (--no-loadscope-reorder) hands groups out in this
    # order, so they start at once while the other workers share the rest; a group's tests
    # run in this order too (the orphaning files in theirs).
    items.sort(key=_run_order)


def _run_order(item: pytest.Item) -> tuple[bool, int]:
    group = xdist_group_of(item)
    handing_on = ORPHANING_FILES.index(item.path.name) if group == REAL_VLLM_ORPHANS else 0
    return not group.startswith(REAL_VLLM_GROUPS), handing_on
