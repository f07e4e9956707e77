"""The kill confirmation modal: every target in full, typed confirmation for foreign ones.

It only asks; it never kills. Dismissed with a KillConfirmation (the pids the
operator confirmed) or None. The app then runs `tui.procs.kill_processes` in a
worker, off the UI thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from tui.procs.model import GpuProcess
from tui.procs.text import format_memory, format_start


@dataclass(frozen=True, slots=True)
class KillConfirmation:
    targets: tuple[GpuProcess, ...]
    confirmed_foreign: frozenset[int]


def targets_table(host_label: str, targets: Sequence[GpuProcess]) -> Table:
    table = Table(expand=True, show_edge=False, pad_edge=False)
    for header in ("Host", "PID", "Class", "User", "Started", "GPU memory", "Command"):
        table.add_column(header, overflow="fold", no_wrap=header != "Command")
    for proc in targets:
        style = "bold red" if proc.klass == "foreign" else ""
        table.add_row(
            host_label,
            str(proc.pid),
            Text(proc.klass, style=style or "bold yellow"),
            proc.user,
            format_start(proc.start_time_s),
            format_memory(proc.gpu_memory_bytes),
            proc.command[:200],
        )
    return table


class KillConfirmScreen(ModalScreen[KillConfirmation | None]):
    """Lists host, pid, class, user, start time, GPU memory and command of every target."""

    DEFAULT_CSS = """
    KillConfirmScreen {
        align: center middle;
    }
    KillConfirmScreen > Vertical {
        width: 90%;
        max-width: 160;
        height: auto;
        max-height: 90%;
        border: thick $error;
        background: $surface;
        padding: 1 2;
    }
    KillConfirmScreen #kill-foreign-warning {
        color: $error;
        margin-top: 1;
    }
    KillConfirmScreen Horizontal {
        height: auto;
        margin-top: 1;
    }
    KillConfirmScreen Button {
        margin-right: 2;
    }
    """
    # The safe button has the focus from the first frame (not after on_mount: keys typed
    # quickly after the dialog opens must not land on the destructive one).
    AUTO_FOCUS = "#kill-cancel"
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="kill-cancel")]

    def __init__(self, host_label: str, targets: Sequence[GpuProcess], timeout_s: float) -> None:
        super().__init__()
        self.host_label = host_label
        self.targets = tuple(targets)
        self.timeout_s = timeout_s
        self.foreign = tuple(proc for proc in self.targets if proc.klass == "foreign")

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(
                f"End {len(self.targets)} process(es) on {self.host_label}? "
                f"SIGTERM, then SIGKILL after {self.timeout_s:g} s.",
                id="kill-title",
            )
            yield Static(targets_table(self.host_label, self.targets), id="kill-targets")
            if self.foreign:
                pids = " ".join(str(proc.pid) for proc in self.foreign)
                yield Label(
                    f"Foreign processes are not the service's. Type their pid(s) to confirm: {pids}",
                    id="kill-foreign-warning",
                )
                yield Input(placeholder=pids, id="kill-typed")
            with Horizontal():
                yield Button("Kill", variant="error", id="kill-confirm")
                yield Button("Cancel", variant="default", id="kill-cancel")

    def on_mount(self) -> None:
        self.query_one("#kill-cancel", Button).focus()
        self._sync_button()

    def typed_pids(self) -> frozenset[int]:
        if not self.foreign:
            return frozenset()
        words = self.query_one("#kill-typed", Input).value.replace(",", " ").split()
        return frozenset(int(word) for word in words if word.isdigit())

    def _sync_button(self) -> None:
        needed = {proc.pid for proc in self.foreign}
        self.query_one("#kill-confirm", Button).disabled = not needed <= self.typed_pids()

    def on_input_changed(self, _event: Input.Changed) -> None:
        self._sync_button()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "kill-confirm":
            self.dismiss(KillConfirmation(self.targets, self.typed_pids()))
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
