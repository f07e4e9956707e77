"""The kill dialog at 80x24 never cuts a PID, user or GPU memory figure (issue item 10).

Long PIDs, a long user name and eight targets: at 80 columns the table cannot hold
them, so each process gets a block with every figure whole. Killing a live rank of
the running service says it takes the engine down.
"""

from __future__ import annotations

import io
import re
from dataclasses import replace

from rich.console import Console
from textual.widgets import Button, Static

from tests.support.procs_app import ProcsTestApp
from tests.support.screen_text import screen_text
from tests.ui.test_procs_ui import NOW_S, SEED, gpu_process
from tui.procs import ProcListing
from tui.screens.kill_confirm import KillConfirmScreen

USER = "inference-svc"
MANY = ProcListing(
    "gpu-box-01",
    "boot-1",
    NOW_S,
    tuple(
        replace(gpu_process(4_194_301 - i, "leftover", 84.7, f"VLLM::Worker_TP{i}"), user=USER)
        for i in range(8)
    ),
)


def drawn(widget: Static) -> str:
    """The text a Static draws at its own width on screen."""
    console = Console(width=widget.content_region.width, record=True, file=io.StringIO())
    console.print(widget.content)
    return console.export_text()


def whole(word: str, text: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(word)}(?![\w.])", text) is not None


async def test_eight_targets_at_80_columns_show_every_figure_whole() -> None:
    app = ProcsTestApp(MANY, NOW_S)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("k")
        await pilot.pause(0.3)
        screen = app.screen
        assert isinstance(screen, KillConfirmScreen)
        text = drawn(screen.query_one("#kill-targets", Static))
        for proc in MANY.processes:
            assert whole(str(proc.pid), text), (proc.pid, text)
        assert text.count(USER) == len(MANY.processes), text
        assert text.count("84.7 GiB") == len(MANY.processes), text
        assert "…" not in text
        # The buttons stay on a 24-row screen whatever the number of targets.
        shown = screen_text(app)
        assert "Kill" in shown and "Cancel" in shown, shown
        assert screen.query_one("#kill-confirm", Button).region.bottom <= 24


async def test_a_wide_terminal_keeps_the_table() -> None:
    app = ProcsTestApp(SEED, NOW_S)
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.press("k")
        await pilot.pause(0.3)
        text = drawn(app.screen.query_one("#kill-targets", Static))
        assert "GPU memory" in text.splitlines()[0]  # one header row: a table
        assert "4177" in text and "84.2 GiB" in text


async def test_killing_a_service_rank_warns_it_takes_the_engine_down() -> None:
    service = SEED.processes[0]
    assert service.klass == "service"
    app = ProcsTestApp(SEED, NOW_S)
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(KillConfirmScreen("gpu-box-01", [service], timeout_s=15.0))
        await pilot.pause(0.3)
        shown = screen_text(app)
        words = " ".join(shown.replace("█", " ").split())
        assert "takes the running engine down" in words, shown
        assert whole(str(service.pid), shown)
