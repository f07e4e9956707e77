"""S/R behind the restart guard: leftovers in the way open this dialog, not the confirm.

The dialog names each leftover's PID, GiB and reason and offers K (end them) first;
it never starts anything itself. The guard's listing runs in a worker off the UI.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label, Static

from tui.core.errors import ServedeckError
from tui.logs.line import texts_of
from tui.screens.dialog import Dialog
from tui.serving.restart_loop import RestartLoopDetector, record
from widgets.keys import bindings_for

if TYPE_CHECKING:  # the guard (and the doctor's checks) load with the first start/restart
    from tui.app import ServedeckApp
    from tui.logs.line import LogLine
    from tui.serving.restart_guard import GuardVerdict
    from tui.serving.service import UnitState


class GuardRefusedScreen(Dialog[bool]):
    """Dismissed True when the operator chose K (end the leftovers first)."""

    DEFAULT_CSS = """
    GuardRefusedScreen > .dialog-frame { width: 90%; max-width: 140; }
    """
    TONE = "-danger"
    AUTO_FOCUS = "#guard-cancel"
    BINDINGS = bindings_for("guard")  # and the dialog's escape (cancel)

    def __init__(self, verdict: GuardVerdict) -> None:
        super().__init__()
        self.verdict = verdict

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-frame"):
            yield Label(
                f"{self.verdict.verb.capitalize()} refused: {self.verdict.why()}",
                id="guard-title",
            )
            yield Static("\n".join(self.verdict.process_lines()), id="guard-procs", markup=False)
            yield Static(
                "[dim]A new engine would fail its KV-cache check, OOM or find "
                "its port taken. End the leftovers first.[/]"
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("K: end leftovers", variant="error", id="guard-kill")
                yield Button("Cancel", id="guard-cancel")

    def cancel_result(self) -> bool:
        return False

    def action_kill_first(self) -> None:
        self.dismiss(True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "guard-kill")


async def guard_then_confirm(app: ServedeckApp, verb: str, confirm: Callable[[], None]) -> None:
    """Open the confirm dialog only when the guard passes; else the refusal offering K."""
    from tui.ops.restart_guard import check
    from tui.serving.restart_guard import GUARDED_VERBS

    if verb not in GUARDED_VERBS:
        confirm()
        return
    try:
        verdict = await check(app.deck, verb)
    except ServedeckError as error:
        app.notify(f"restart guard could not list leftovers: {error}", severity="warning")
        confirm()
        return
    if not verdict.blocked:
        confirm()
        return

    def answered(kill_first: bool | None) -> None:
        if kill_first:
            app.action_kill_leftovers()

    app.push_screen(GuardRefusedScreen(verdict), answered)


def watch_restart_loop(
    app: ServedeckApp, state: UnitState | None = None, lines: Sequence[LogLine] = ()
) -> None:
    """Feed the app's restart-loop detector; a new loop becomes an incident and an alert."""
    detector = getattr(app, "_restart_loop_detector", None)
    if detector is None:
        detector = RestartLoopDetector(app.profile.service.unit or app.profile.name)
        app._restart_loop_detector = detector  # type: ignore[attr-defined]
    if state is not None:
        detector.observe(state.n_restarts, time.time())
    detector.feed(texts_of(lines))
    loop = detector.check()
    if loop is not None:
        record(loop, app.deck.host.label)
        app.notify(loop.message(), title="Restart loop", severity="error", timeout=30)
