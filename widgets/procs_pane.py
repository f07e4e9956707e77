"""The GPU processes pane: a DataTable of classified processes, keyed by identity.

A pure view: `show_listing(listing, now_s)` diffs rows by (boot_id, pid, start
ticks), so a refresh keeps the cursor on the same process and a reused pid is a
new row. Leftovers are highlighted; the app reads the selection to build targets.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.coordinate import Coordinate
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from tui.core.formatting import duration_compact, gib
from tui.procs.model import GpuProcess, ProcIdentity, ProcListing
from tui.procs.order import SORTS, next_sort, ordered
from tui.procs.text import gpu_column, sm_column
from widgets.keys import bindings_for

COLUMNS = (
    ("class", "Class"),
    ("pid", "PID"),
    ("user", "User"),
    ("gpu", "GPU"),
    ("memory", "GPU memory"),
    ("sm", "SM %"),
    ("age", "Age"),
    ("command", "Command"),
)
CLASS_STYLES = {
    "leftover": "bold black on yellow",
    "defunct": "bold red",
    "service": "green",
    "suspect": "bold red",
    "foreign": "dim",
}


def row_key(identity: ProcIdentity) -> str:
    return f"{identity.boot_id}/{identity.pid}/{identity.start_ticks}"


class ProcsPane(DataTable[Text]):
    """Classified GPU processes of one host."""

    DEFAULT_CSS = """
    ProcsPane {
        height: 1fr;
    }
    """

    # procs.move only documents the arrows DataTable binds itself
    BINDINGS: ClassVar[list[BindingType]] = [
        binding
        for binding in bindings_for("procs")
        if not isinstance(binding, Binding) or binding.action != "noop"
    ]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)  # type: ignore[arg-type]
        self._processes: dict[str, GpuProcess] = {}  # the rows shown
        self._all: dict[str, GpuProcess] = {}  # the whole listing, filter or not
        self._now_s = 0.0
        self.sort_by = SORTS[0]
        self.filter_text = ""
        self.typing = False  # `/` pressed: keys go to the filter until Enter or Escape

    def on_mount(self) -> None:
        for key, label in COLUMNS:
            self.add_column(self._label(key, label), key=key)

    def _label(self, key: str, label: str) -> str:
        return f"{label} ▼" if key == self.sort_by else label

    @staticmethod
    def cells(proc: GpuProcess, now_s: float) -> dict[str, Text]:
        style = "bold yellow" if proc.klass == "leftover" else ""
        return {
            "class": Text(proc.klass, style=CLASS_STYLES.get(proc.klass, "")),
            "pid": Text(str(proc.pid), style=style, justify="right"),
            "user": Text(proc.user),
            "gpu": Text(gpu_column(proc)),
            "memory": Text(gib(proc.gpu_memory_bytes), style=style, justify="right"),
            "sm": Text(sm_column(proc), justify="right"),
            "age": Text(duration_compact(proc.age_s(now_s), always_minutes=True), justify="right"),
            "command": Text(proc.command[:160], style=style),
        }

    def show_listing(self, listing: ProcListing, now_s: float) -> None:
        """Keep the listing and draw the rows the filter keeps, in the sort's order."""
        self._all = {row_key(proc.identity): proc for proc in listing.processes}
        self._now_s = now_s
        self._draw()

    def _draw(self) -> None:
        """Diff the rows in place (update, add, remove; the cursor stays on its process);
        a changed order re-adds the rows and puts the cursor back on its process."""
        shown = ordered(self._all.values(), self.sort_by, self.filter_text)
        fresh = {row_key(proc.identity): proc for proc in shown}
        kept = [key for key in self._processes if key in fresh]
        in_order = kept == [key for key in fresh if key in self._processes]
        cursor = self.selected()
        with self.app.batch_update():
            if not in_order:
                self.clear()
                self._processes = {}
            for key in [key for key in self._processes if key not in fresh]:
                self.remove_row(key)
            for key, proc in fresh.items():
                cells = self.cells(proc, self._now_s)
                if key in self._processes:
                    for column, value in cells.items():
                        self.update_cell(key, column, value, update_width=True)
                else:
                    self.add_row(*(cells[column] for column, _ in COLUMNS), key=key)
            if not in_order and cursor is not None and row_key(cursor.identity) in fresh:
                self.move_cursor(row=self.get_row_index(row_key(cursor.identity)))
        self._processes = fresh
        self._show_state()

    def _show_state(self) -> None:
        """The filter (and how many rows it hides) in the top border while one is set."""
        hidden = len(self._all) - len(self._processes)
        if self.typing or self.filter_text:
            caret = "▏" if self.typing else ""
            self.styles.border_top = ("solid", "yellow")
            self.border_title = f"filter: {self.filter_text}{caret} ({hidden} hidden) · Esc clears"
        else:
            self.styles.border_top = None
            self.border_title = None

    def action_cycle_sort(self) -> None:
        self.sort_by = next_sort(self.sort_by)
        for key, label in COLUMNS:
            self.columns[ColumnKey(key)].label = Text(self._label(key, label))
        self._draw()
        self.refresh()

    def action_open_filter(self) -> None:
        self.typing = True
        self._show_state()

    def action_clear_filter(self) -> None:
        self.typing = False
        self.filter_text = ""
        self._draw()

    def on_key(self, event: events.Key) -> None:
        """While the filter is typed, every key is its text: no console key fires."""
        if not self.typing:
            return
        event.stop()
        event.prevent_default()
        if event.key == "escape":
            self.action_clear_filter()
            return
        if event.key == "enter":
            self.typing = False
        elif event.key == "backspace":
            self.filter_text = self.filter_text[:-1]
        elif event.is_printable and event.character:
            self.filter_text += event.character
        self._draw()

    @property
    def processes(self) -> tuple[GpuProcess, ...]:
        """The whole listing, whatever the filter hides."""
        return tuple(self._all.values())

    def selected(self) -> GpuProcess | None:
        if not self._processes or self.cursor_row < 0 or self.cursor_row >= self.row_count:
            return None
        key = self.coordinate_to_cell_key(Coordinate(self.cursor_row, 0)).row_key.value
        return self._processes.get(key or "")
