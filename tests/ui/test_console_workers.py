"""Every console worker starts through one wrapper, and a worker's exception never exits the app.

The AST walk fails when a worker is started any other way (Textual's `@work`, a direct
`run_worker` call, a `Worker` built by hand), so the class of bug "a poll raised and the
console exited" cannot come back through a new call site.
"""

from __future__ import annotations

import ast
from pathlib import Path

from textual.app import App
from textual.widgets import Static

from tui.app.console_workers import WorkerFailed, console_worker
from tui.core import paths
from tui.core.formatting import duration_words
from tui.source_health import SourceHealth

REPO = Path(__file__).resolve().parents[2]
RUNNER = REPO / "tui" / "app" / "console_workers.py"


def _app_layer_files() -> list[Path]:
    """Where Textual may be imported (the import-linter contracts keep it there)."""
    folders = (REPO / "tui" / "app", REPO / "tui" / "screens", REPO / "widgets")
    return sorted(path for folder in folders for path in folder.rglob("*.py"))


def _worker_starts(path: Path) -> list[str]:
    """Each place in a file that starts a worker without the wrapper, as `file:line what`."""
    tree = ast.parse(path.read_text(), str(path))
    found: list[str] = []
    where = path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
    # A part's own `run_worker` that hands the call to its app (`self.app.run_worker`), so
    # that console_worker-decorated methods on the part start the app's workers.
    forwards = {
        id(call)
        for function in ast.walk(tree)
        if isinstance(function, ast.FunctionDef) and function.name == "run_worker"
        for call in ast.walk(function)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and ast.unparse(call.func) == "self.app.run_worker"
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                name = (
                    target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                )
                if name == "work":
                    found.append(f"{where}:{decorator.lineno} @work on {node.name}")
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "textual"
            and any(alias.name == "work" for alias in node.names)
        ):
            found.append(f"{where}:{node.lineno} imports textual.work")
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "Worker":
                found.append(f"{where}:{node.lineno} builds a Worker by hand")
            if name == "run_worker" and path != RUNNER:
                # The app's own run_worker override may call super().run_worker: nothing else.
                is_super = (
                    isinstance(func, ast.Attribute)
                    and isinstance(func.value, ast.Call)
                    and getattr(func.value.func, "id", "") == "super"
                )
                if not is_super and id(node) not in forwards:
                    found.append(f"{where}:{node.lineno} calls run_worker directly")
    return found


def test_every_worker_starts_through_the_wrapper() -> None:
    offenders = [start for path in _app_layer_files() for start in _worker_starts(path)]
    assert offenders == [], "start workers with console_worker (tui/app/console_workers.py)"


def test_the_walk_catches_the_old_way(tmp_path: Path) -> None:
    """The check itself can fail: the pattern that crashed the console is found."""
    sample = tmp_path / "old_way.py"
    sample.write_text(
        "from textual import work\n"
        "class A:\n"
        "    @work(exclusive=True, group='procs')\n"
        "    async def poll(self) -> None: ...\n"
        "    def go(self) -> None:\n"
        "        self.run_worker(self.poll())\n"
    )
    found = _worker_starts(sample)
    assert len(found) == 3, found


class _Failing(App[None]):
    """A minimal app whose worker raises a plain exception (not a ServedeckError)."""

    def __init__(self) -> None:
        super().__init__()
        self.failures: list[WorkerFailed] = []

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static("x")

    @console_worker("boom", pane="gpu", what=lambda app, n: f"sample {n} GPUs", user_action=True)
    async def boom(self, n: int) -> None:
        raise RuntimeError(f"stream ended; token sk-{'a' * 24} leaked")

    def on_worker_failed(self, message: WorkerFailed) -> None:
        self.failures.append(message)


async def test_a_raising_worker_becomes_a_message_and_a_log_record() -> None:
    app = _Failing()
    async with app.run_test() as pilot:
        app.boom(8)
        for _ in range(100):
            if app.failures:
                break
            await pilot.pause(0.05)
        assert app.is_running and not app._exit
        (failure,) = app.failures
        assert failure.pane == "gpu" and failure.what == "sample 8 GPUs" and failure.user_action
        assert "stream ended" in failure.reason and "sk-aaaa" not in failure.reason
    log = (paths.log_dir() / "console.log").read_text()
    assert "gpu: sample 8 GPUs failed: stream ended" in log and "sk-aaaa" not in log


def test_source_health_says_what_failed_when_it_retries_and_how_old_the_data_is() -> None:
    health = SourceHealth("GPU source").succeeded(now_s=100.0)
    assert health.describe(now_s=101.0) == ""
    health = health.failed("connection lost\nTraceback ...", retry_in_s=4.0, now_s=137.0)
    assert health.describe(now_s=137.0) == (
        "GPU source lost: connection lost, retrying in 4 s (last sample 37 s ago)"
    )
    again = health.failed("refused", retry_in_s=4.0, now_s=141.0)
    assert again.failed_since_s == 137.0 and again.failures == 2
    assert not again.succeeded(now_s=142.0).failing
    assert duration_words(245) == "4 min 5 s"


def test_a_countdown_inside_an_error_is_dropped_from_the_note() -> None:
    """The SSH host's own "next attempt in 0.4 s" is stale at once; the note has a live one."""
    health = SourceHealth("connection", noun="contact").failed(
        "root@box: not connected (cannot connect: refused); next attempt in 0.4 s",
        retry_in_s=2.0,
        now_s=10.0,
    )
    assert health.describe(now_s=10.0) == (
        "connection lost: root@box: not connected (cannot connect: refused), retrying in 2 s "
        "(no contact yet)"
    )
