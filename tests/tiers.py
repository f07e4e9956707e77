"""The fast tier: `pytest -m fast`, the tests a developer runs before every commit.

Tests of the modules below get the `fast` marker, minus the few slow ones named in SLOW
(which get `slow`). A module not listed is not in the fast tier: it starts real servers
(sshd, journal, the simulator, Chromium, tmux, vLLM) or takes seconds per test. List a
new module here when its tests are pure or drive one widget, and run in well under a
second each.
"""

from __future__ import annotations

import pytest

FAST_MODULES = frozenset(
    {
        # core: pure, no processes
        "test_app_messages",
        "test_bench_metrics",
        "test_file_tail",
        "test_fill_flat",
        "test_gpu_history",
        "test_gpu_history_series",
        "test_gpu_nvml",
        "test_gpu_smi",
        "test_gpus_cmd",
        "test_health_cli",
        "test_health_summary",
        "test_hostile_profiles",
        "test_layering",
        "test_load_variants",
        "test_loadwatch",
        "test_log_ingest_fast_paths",
        "test_local_host",
        "test_metrics",
        "test_plan",
        "test_procs_classify",
        "test_procs_state_machine",
        "test_profiles",
        "test_readme_keys",
        "test_ready_eta",
        "test_restart_loop",
        "test_secrets_outputs",
        "test_service",
        "test_smi_complete_sample",
        "test_tiers",
        "test_unit_lint",
        # ui: one widget or dialog under Pilot, snapshots
        "test_app_shell",
        "test_bench_view",
        "test_console_workers",
        "test_gpu_pane",
        "test_gpu_pane_fast_paths",
        "test_hostile_console",
        "test_kill_dialog_narrow",
        "test_killer_refusals",
        "test_log_pane",
        "test_log_triage",
        "test_no_profile_hint",
        "test_offered_keys",
        "test_plan_view",
        "test_quiet_update_same_text",
        "test_record_snapshots",
        "test_toasts",
    }
)

# Slow tests inside fast modules (measured: seconds each on a loaded 2-core machine).
SLOW = frozenset(
    {
        "test_restart_loop.py::test_a_simulated_unit_restarting_into_its_leftovers_is_a_loop",
        "test_gpus_cmd.py::test_demo_gpus_json_shows_the_loaded_simulated_box",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = item.path.stem
        if module not in FAST_MODULES:
            continue
        test_id = f"{item.path.name}::{item.name.split('[', 1)[0]}"
        item.add_marker(pytest.mark.slow if test_id in SLOW else pytest.mark.fast)
