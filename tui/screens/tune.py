"""The Tune view's screens: the space file asked for, the Plan's preflight confirmed, the run shown.

They only ask and draw: the console's tune part (tui/app/console_tune.py) plans, runs
and cancels, and hands the run's snapshots to `TuneScreen`'s view.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Input, Label, Static

from tui.screens.dialog import Dialog, YesNoDialog
from tui.tune.progress import TuneSnapshot
from widgets.keys import bindings_for
from widgets.tune_view import TuneView


class TuneSpaceScreen(Dialog[str]):
    """Which tune.toml: the default filled in; Enter plans it, Escape asks nothing."""

    DEFAULT_CSS = "TuneSpaceScreen Input { margin: 1 0; }"

    def __init__(self, default_path: str) -> None:
        super().__init__()
        self.default_path = default_path

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-frame"):
            yield Label("Tune: the space of serving configurations (a tune.toml)")
            yield Input(self.default_path, id="tune-space-path")
            yield Static(
                "[dim]Enter shows the Plan's preflight; nothing starts before you confirm.[/]"
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Plan", variant="primary", id="tune-space-plan")
                yield Button("Cancel", id="tune-space-cancel")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        path = self.query_one(Input).value.strip()
        self.dismiss(path or None if event.button.id == "tune-space-plan" else None)


class TuneConfirmScreen(YesNoDialog):
    """The Plan's preflight (what runs in which order, what is skipped and why): run it?"""

    DEFAULT_CSS = """
    TuneConfirmScreen > .dialog-frame { max-width: 120; }
    TuneConfirmScreen #tune-plan-scroll { height: auto; max-height: 20; }
    """

    def __init__(self, title: str, plan_lines: Sequence[str], note: str, runnable: int) -> None:
        super().__init__()
        self.title_text = title
        self.plan_lines = tuple(plan_lines)
        self.note = note
        self.runnable = runnable

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-frame"):
            yield Label(self.title_text, id="confirm-title")
            with VerticalScroll(id="tune-plan-scroll"):
                yield Static("\n".join(self.plan_lines), id="tune-plan", markup=False)
            yield Static(self.note, markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Run", variant="warning", id="confirm-yes", disabled=not self.runnable)
                yield Button("Cancel", id="confirm-no")


class TuneScreen(Dialog[None]):
    """The run: each configuration's state, the run's words, the ranked table at the end.

    Escape (or c) asks to cancel a running tune (the unit is restored as it was); q hides
    the view while the tune runs on (the tune key brings it back).
    """

    KEY_SCOPE = "tune"
    DEFAULT_CSS = """
    TuneScreen > .dialog-frame { width: 96%; max-width: 200; height: 90%; padding: 0 1; }
    TuneScreen #tune-title { text-style: bold; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = bindings_for("tune")

    def __init__(
        self, title: str, cancel: Callable[[], None], snapshot: TuneSnapshot | None = None
    ) -> None:
        super().__init__()
        self.title_text = title
        self._cancel = cancel
        self._snapshot = snapshot

    def compose(self) -> ComposeResult:
        with Vertical(id="tune-frame", classes="dialog-frame"):
            yield Static(self.title_text, id="tune-title", markup=False)
            yield TuneView(id="tune-view")
            yield Static("[dim]Esc/c cancel (asks; the unit is restored) · q hide (it runs on)[/]")

    def on_mount(self) -> None:
        if self._snapshot is not None:
            self.show(self._snapshot)

    def show(self, snapshot: TuneSnapshot) -> None:
        self._snapshot = snapshot
        if self.is_mounted:
            self.query_one(TuneView).show(snapshot)

    def result_width(self) -> int:
        """The width the ranked result is fitted and wrapped to: the view's own."""
        return self.query_one(TuneView).text_width()

    def action_cancel_tune(self) -> None:
        """A finished tune just closes; a running one is the part's to ask about and cancel."""
        if self._snapshot is not None and self._snapshot.finished:
            self.dismiss(None)
        else:
            self._cancel()

    def action_hide(self) -> None:
        self.dismiss(None)


class TuneCancelScreen(YesNoDialog):
    """Cancel the running tune? The safe answer keeps it running."""

    def __init__(self, unit: str) -> None:
        super().__init__()
        self.unit = unit

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-frame"):
            yield Label("Cancel the tune?", id="confirm-title")
            yield Static(
                f"The configuration running now is stopped, its drop-in removed and "
                f"{self.unit} put back as it was before the tune.",
                markup=False,
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Cancel the tune", variant="warning", id="confirm-yes")
                yield Button("Keep it running", id="confirm-no")
