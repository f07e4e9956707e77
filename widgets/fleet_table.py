"""The Fleet pane's table: one row per host, compact columns under 120 cells wide.

A pure view: given FleetRows it draws them; the state word, sort and filter come
from tui.fleet.view, the figures from the rows. Rows are keyed by host name so the
cursor stays on its host while rows are re-sorted on every refresh. A host name or label
value is the source's choice: its control characters and markup are escaped (`free`).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist

from tui.core.formatting import GIB, duration_compact, printable
from tui.fleet.model import FleetRow
from tui.fleet.view import host_state
from widgets.gpu_format import bar, clip

COMPACT_BELOW_CELLS = 120
NA = "n/a"

STATE_STYLE = {
    "serving": "green",
    "loading": "yellow",
    "failed": "bold red",
    "unreachable": "bold red",
    "slow": "red",
    "stale": "bold yellow",
    "stopped": "dim",
    "unknown": "dim",
}

# (column id, title) for each layout; the ids are the sort keys of tui.fleet.view.
FULL_COLUMNS = (
    ("host", "Host"),
    ("src", "Src"),
    ("state", "State"),
    ("age", "Age"),
    ("unit", "Unit"),
    ("load", "Load"),
    ("ready", "Ready"),
    ("reqs", "Run/Wait"),
    ("kv", "KV%"),
    ("toks", "tok/s"),
    ("gpus", "GPUs"),
    ("mem", "Memory (sum | worst)"),
    ("util", "Util max"),
    ("temp", "Temp"),
    ("power", "Power"),
    ("left", "Left"),
    ("alerts", "Alerts"),
)
COMPACT_COLUMNS = (
    ("host", "Host"),
    ("src", "Src"),
    ("state", "State"),
    ("age", "Age"),
    ("load", "Load"),
    ("toks", "tok/s"),
    ("mem", "Mem"),
    ("temp", "Temp"),
    ("alerts", "!"),
)


SOURCE_WORD = {"prometheus": "prom", "ssh": "ssh", "demo": "demo"}
# A Prometheus figure older than this is called out (yellow), whatever the scrape interval.
OLD_SAMPLE_S = 30.0


def age_cell(row: FleetRow) -> str:
    """How old the row's figures are (a Prometheus row: its host's last good scrape)."""
    if row.sample_age_s is None:
        return NA if row.source == "prometheus" else ""
    text = duration_compact(row.sample_age_s)
    if not row.reachable or row.sample_age_s >= OLD_SAMPLE_S:
        return f"[bold yellow]{text}[/]"
    return text


def free(text: str | None, width: int) -> str:
    """A cell of text the source chose: controls escaped, clipped, markup-escaped."""
    return NA if text is None else clip(printable(text), width)


def _na(value: object, fmt: str = "{}") -> str:
    return NA if value is None else fmt.format(value)


def load_cell(row: FleetRow) -> str:
    if row.phase is None:
        return NA
    if row.shards_total and row.phase in ("weights", "starting"):
        eta = f" {duration_compact(row.eta_s)}" if row.eta_s is not None else ""
        return f"{row.shards_done or 0}/{row.shards_total}{eta}"
    if row.eta_s is not None and row.phase not in ("serving", "failed", "stopped"):
        return f"{row.phase} {duration_compact(row.eta_s)}"
    return row.phase


def memory_cell(row: FleetRow, compact: bool) -> str:
    used, total = row.gpu_mem_used_bytes, row.gpu_mem_total_bytes
    fraction = used / total if used is not None and total else None
    worst = row.gpu_mem_used_pct_max
    if compact:
        return f"{bar(fraction, 4)} {_na(worst, '{:.0f}%')}"
    text = f"{used / GIB:.0f}/{total / GIB:.0f}G" if fraction is not None else NA  # type: ignore[operator]
    return f"{bar(fraction, 5)} {text} | {_na(worst, '{:.0f}%')}"


def cells(row: FleetRow, compact: bool) -> list[Text]:
    state = host_state(row)
    name = row.host if not row.label or compact else f"{row.host} {row.label}"
    values = {
        "host": free(name, 14 if compact else 30),
        "src": SOURCE_WORD.get(row.source, row.source),
        "age": age_cell(row),
        "state": f"[{STATE_STYLE[state]}]{state}[/]",
        "unit": free(row.unit_state, 12),
        "load": free(load_cell(row), 14),
        "ready": NA if row.health_ok is None else ("[green]yes[/]" if row.health_ok else "no"),
        "reqs": NA if row.running is None else f"{row.running}/{_na(row.waiting)}",
        "kv": _na(row.kv_pct, "{:.0f}%"),
        "toks": _na(row.gen_tok_s, "{:.0f}"),
        "gpus": _na(row.gpu_count),
        "mem": memory_cell(row, compact),
        "util": _na(row.gpu_util_pct_max, "{:.0f}%"),
        "temp": _na(row.temp_c_max, "{:.0f}C"),
        "power": _na(row.power_w, "{:.0f}W"),
        "left": _na(row.leftovers),
        "alerts": free(", ".join(row.alerts), 3 if compact else 28)
        if row.alerts
        else ("" if row.reachable else "!"),
    }
    layout = COMPACT_COLUMNS if compact else FULL_COLUMNS
    return [Text.from_markup(values[column]) for column, _ in layout]


class FleetTable(DataTable[Text]):
    """Hosts as rows; `show(rows, width)` redraws and keeps the cursor on its host."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self.compact: bool | None = None

    def _columns_for(self, compact: bool) -> None:
        if self.compact == compact:
            return
        self.clear(columns=True)
        for column, title in COMPACT_COLUMNS if compact else FULL_COLUMNS:
            self.add_column(title, key=column)
        self.compact = compact

    def show(self, rows: Sequence[FleetRow], width: int) -> None:
        compact = width < COMPACT_BELOW_CELLS
        selected = self.selected_host()
        self._columns_for(compact)
        self.clear()
        for row in rows:
            self.add_row(*cells(row, compact), key=row.host)
        if selected is not None:
            keys = [row.host for row in rows]
            if selected in keys:
                self.move_cursor(row=keys.index(selected))

    def selected_host(self) -> str | None:
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except CellDoesNotExist:  # no cell under the cursor
            return None
        return str(key.value) if key.value is not None else None
