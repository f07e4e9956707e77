"""The kill confirmation modal: every target in full, typed confirmation for foreign ones.

It only asks; it never kills. Dismissed with a KillConfirmation (the pids the
operator confirmed) or None. The app then runs `tui.procs.kill_processes` in a
worker, off the UI thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Input, Label, Static

from tui.core.formatting import gib
from tui.procs.model import CONFIRM_CLASSES, GpuProcess
from tui.procs.text import format_start
from tui.screens.dialog import Dialog


@dataclass(frozen=True, slots=True)
class KillConfirmation:
    targets: tuple[GpuProcess, ...]
    confirmed_foreign: frozenset[int]


_HEADERS = ("Host", "PID", "Class", "User", "Started", "GPU memory", "Command")
# The narrowest Command column worth a table; below it each process gets a block.
_MIN_COMMAND_CELLS = 16


def _cells(host_label: str, proc: GpuProcess) -> tuple[str, ...]:
    return (
        host_label,
        str(proc.pid),
        proc.klass,
        proc.user,
        format_start(proc.start_time_s),
        gib(proc.gpu_memory_bytes),
        proc.command[:200],
    )


def _class_text(proc: GpuProcess) -> Text:
    return Text(proc.klass, style="bold red" if proc.klass in CONFIRM_CLASSES else "bold yellow")


def targets_table(host_label: str, targets: Sequence[GpuProcess]) -> Table:
    table = Table(expand=True, show_edge=False, pad_edge=False)
    for header in _HEADERS:
        table.add_column(header, overflow="fold", no_wrap=header != "Command")
    for proc in targets:
        cells = _cells(host_label, proc)
        table.add_row(*cells[:2], _class_text(proc), *cells[3:])
    return table


def target_blocks(host_label: str, targets: Sequence[GpuProcess]) -> Group:
    """One block per process: every figure whole on its own line, the command folded."""
    blocks: list[Text] = []
    for proc in targets:
        block = Text()
        block.append(f"PID {proc.pid}", style="bold")
        block.append("  ")
        block.append_text(_class_text(proc))
        block.append(f"  on {host_label}\n")
        block.append(f"user {proc.user}  started {format_start(proc.start_time_s)}\n")
        block.append(f"GPU memory {gib(proc.gpu_memory_bytes)}")
        if proc.gpu_indices:
            block.append(f" on GPU {','.join(str(i) for i in proc.gpu_indices)}")
        block.append("\n")
        block.append(proc.command[:200], style="dim")
        block.overflow = "fold"
        blocks.append(block)
        blocks.append(Text(""))
    return Group(*blocks[:-1])


class KillTargets:
    """The targets as a table when it fits the width whole, else one block per process.

    A destructive dialog never cuts a PID, a user or a memory figure: Rich would
    ellipsize no-wrap cells of a table too wide for the terminal (80 columns).
    """

    def __init__(self, host_label: str, targets: Sequence[GpuProcess]) -> None:
        self.host_label = host_label
        self.targets = tuple(targets)

    def table_width(self) -> int:
        """Columns a table needs with every cell but the command whole."""
        rows = [_HEADERS, *(_cells(self.host_label, proc) for proc in self.targets)]
        widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADERS) - 1)]
        separators = 3 * (len(_HEADERS) - 1)  # " │ " between columns
        return sum(widths) + separators + _MIN_COMMAND_CELLS

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.table_width() <= options.max_width:
            yield targets_table(self.host_label, self.targets)
        else:
            yield target_blocks(self.host_label, self.targets)


def service_warning(targets: Sequence[GpuProcess]) -> str | None:
    """Killing a live rank of the running service takes the whole engine down: say so."""
    ranks = [proc for proc in targets if proc.klass == "service"]
    if not ranks:
        return None
    pids = " ".join(str(proc.pid) for proc in ranks)
    return (
        f"PID {pids} belongs to the running service: killing it takes the running engine "
        "down (every request fails until it is restarted)."
    )


class KillConfirmScreen(Dialog[KillConfirmation | None]):
    """Lists host, pid, class, user, start time, GPU memory and command of every target."""

    DEFAULT_CSS = """
    KillConfirmScreen > .dialog-frame {
        width: 90%;
        max-width: 160;
        padding: 0 1;
    }
    /* Many targets scroll; the buttons stay on screen at 24 rows. */
    KillConfirmScreen #kill-targets-scroll {
        height: auto;
        max-height: 40vh;
    }
    KillConfirmScreen Label {
        width: 100%;
    }
    KillConfirmScreen #kill-service-warning {
        color: $error;
        text-style: bold;
        margin-top: 1;
    }
    KillConfirmScreen #kill-foreign-warning {
        color: $error;
        margin-top: 1;
    }
    KillConfirmScreen .dialog-buttons {
        margin-top: 0;
    }
    """
    TONE = "-danger"
    # The safe button has the focus from the first frame (not after on_mount: keys typed
    # quickly after the dialog opens must not land on the destructive one).
    AUTO_FOCUS = "#kill-cancel"

    def __init__(self, host_label: str, targets: Sequence[GpuProcess], timeout_s: float) -> None:
        super().__init__()
        self.host_label = host_label
        self.targets = tuple(targets)
        self.timeout_s = timeout_s
        self.foreign = tuple(proc for proc in self.targets if proc.klass in CONFIRM_CLASSES)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-frame"):
            yield Label(
                f"End {len(self.targets)} process(es) on {self.host_label}? "
                f"SIGTERM, then SIGKILL after {self.timeout_s:g} s.",
                id="kill-title",
            )
            # Not a Tab stop: one Tab from Cancel reaches Kill (the list scrolls by mouse,
            # and it is short unless many processes are ended at once).
            with VerticalScroll(id="kill-targets-scroll", can_focus=False):
                yield Static(KillTargets(self.host_label, self.targets), id="kill-targets")
            warning = service_warning(self.targets)
            if warning:
                yield Label(warning, id="kill-service-warning")
            if self.foreign:
                pids = " ".join(str(proc.pid) for proc in self.foreign)
                yield Label(
                    "Foreign or suspect processes are not proven the service's. "
                    f"Type their pid(s) to confirm: {pids}",
                    id="kill-foreign-warning",
                )
                yield Input(placeholder=pids, id="kill-typed")
            with Horizontal(classes="dialog-buttons"):
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
