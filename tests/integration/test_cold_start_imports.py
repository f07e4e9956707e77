"""The console's first frame imports only what it draws (issue 18, cold start).

Every module below costs the cold start 5-50 ms and is needed only once a source
runs or a pane is used; a module-level import of one of them in a module the app
imports would quietly undo that. Measured in a fresh interpreter, as a user starts it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Loaded after the first paint (sources, recorder) or when a pane or action first needs them.
DEFERRED = (
    "httpx",  # metrics, readiness, bench, webhook
    "prometheus_client",  # the metrics parser
    "pynvml",  # the GPU source
    "sqlite3",  # the recorder
    "markdown_it",  # the summary screen
    "asyncssh",  # remote hosts
    "tui.summary",
    "tui.sim",
    "tui.plan",
    "tui.bench.driver",
    "tui.bench.workload",
    "tui.record.session",
    "tui.record.writer",
    "tui.record.schema",
    "tui.record.query",
    "tui.alerts.webhook",
    "tui.gpu.factory",
    "tui.gpu.nvml",
    "tui.gpu.smi",
    "tui.logs.journal",
    "tui.serving.load.explain",
    "tui.serving.unit.restart_guard",
    "tui.health.report",
    "tui.health.interconnect.rules",
    "tui.tune",  # the Tune view (U): its driver imports httpx, its record sqlite3
    "tui.screens.tune",
)


def _modules_after(statement: str) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-c", f"{statement}\nimport sys\nprint('\\n'.join(sys.modules))"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return set(result.stdout.split())


def _loaded(modules: set[str]) -> list[str]:
    return [
        name
        for name in DEFERRED
        if name in modules or any(loaded.startswith(name + ".") for loaded in modules)
    ]


def test_importing_the_console_loads_no_source_or_pane_internals() -> None:
    # tui.app loads its console lazily: name the class, as the CLI does (`import tui.app`
    # alone loaded no console, so the Tune view's httpx and sqlite3 went unseen).
    modules = _modules_after("from tui.app import ServedeckApp")
    assert "tui.app.console" in modules
    assert _loaded(modules) == []


def test_opening_a_local_deck_loads_no_source_internals() -> None:
    modules = _modules_after(
        "from tui.core.config import Profile\nfrom tui.compose import open_deck\n"
        "open_deck(Profile(name='local'))"
    )
    assert _loaded(modules) == []


def test_the_check_sees_a_deferred_module_when_it_is_loaded() -> None:
    """The test can fail: importing the planner is caught."""
    assert _loaded(_modules_after("import tui.app\nimport tui.plan.layout")) == ["tui.plan"]


def test_a_recording_dir_that_cannot_be_made_is_a_state_not_a_crash(tmp_path: Path) -> None:
    """The recorder starts after the first frame; a data dir that is a file must not crash it."""
    from tui.core.config import demo_profile
    from tui.record.session import ConsoleRecording

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    recording = ConsoleRecording(demo_profile(), "simulator", db_path=blocker / "r" / "x.sqlite")
    try:
        assert not recording.recording
        assert recording.status.startswith("not recording: ") and "not-a-dir" in recording.status
    finally:
        recording.close()
