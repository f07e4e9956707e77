"""The GPU processes pane: a DataTable of classified processes, keyed by identity.

A pure view: `show_listing(listing, now_s)` diffs rows by (boot_id, pid, start
ticks), so a refresh keeps the cursor on the same process and a reused pid is a
new row. Leftovers are highlighted; the app reads the selection to build targets.
"""

from __future__ import annotations

from rich.text import Text
from textual.coordinate import Coordinate
from textual.widgets import DataTable

from tui.core.formatting import duration_compact, gib
from tui.procs.model import GpuProcess, ProcIdentity, ProcListing
from tui.procs.text import gpu_column

COLUMNS = (
    ("class", "Class"),
    ("pid", "PID"),
    ("user", "User"),
    ("gpu", "GPU"),
    ("memory", "GPU memory"),
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

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)  # type: ignore[arg-type]
        self._processes: dict[str, GpuProcess] = {}

    def on_mount(self) -> None:
        for key, label in COLUMNS:
            self.add_column(label, key=key)

    @staticmethod
    def cells(proc: GpuProcess, now_s: float) -> dict[str, Text]:
        style = "bold yellow" if proc.klass == "leftover" else ""
        return {
            "class": Text(proc.klass, style=CLASS_STYLES.get(proc.klass, "")),
            "pid": Text(str(proc.pid), style=style, justify="right"),
            "user": Text(proc.user),
            "gpu": Text(gpu_column(proc)),
            "memory": Text(gib(proc.gpu_memory_bytes), style=style, justify="right"),
            "age": Text(duration_compact(proc.age_s(now_s), always_minutes=True), justify="right"),
            "command": Text(proc.command[:160], style=style),
        }

    def show_listing(self, listing: ProcListing, now_s: float) -> None:
        """Diff the rows against the listing: update, add, remove; keep the cursor's process."""
        fresh = {row_key(proc.identity): proc for proc in listing.processes}
        with self.app.batch_update():
            for key in [key for key in self._processes if key not in fresh]:
                self.remove_row(key)
            for key, proc in fresh.items():
                cells = self.cells(proc, now_s)
                if key in self._processes:
                    for column, value in cells.items():
                        self.update_cell(key, column, value, update_width=True)
                else:
                    self.add_row(*(cells[column] for column, _ in COLUMNS), key=key)
        self._processes = fresh

    @property
    def processes(self) -> tuple[GpuProcess, ...]:
        return tuple(self._processes.values())

    def selected(self) -> GpuProcess | None:
        if not self._processes or self.cursor_row < 0 or self.cursor_row >= self.row_count:
            return None
        key = self.coordinate_to_cell_key(Coordinate(self.cursor_row, 0)).row_key.value
        return self._processes.get(key or "")
