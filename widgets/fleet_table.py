"""The Fleet pane's table: one row per host, the columns that fit the pane's width.

A pure view: given FleetRows it draws them; the state word, sort and filter come
from tui.fleet.view, the figures from the rows. Rows are keyed by host name so the
cursor stays on its host while rows are re-sorted on every refresh. A host name or label
value is the source's choice: its control characters and markup are escaped (`free`).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import DataTable

from tui.core.formatting import GIB, duration_compact, printable
from tui.fleet.model import FleetRow
from tui.fleet.view import host_state
from widgets.gpu_format import clip

NA = "n/a"

STATE_STYLE = {
    "serving": "green",
    "loading": "yellow",
    "failed": "bold red",
    "stalled": "bold red",
    "degraded": "bold yellow",
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
    ("progress", "Progress"),
    ("reqs", "Run/Wait"),
    ("kv", "KV%"),
    ("toks", "tok/s"),
    ("gpus", "GPUs"),
    ("mem", "Mem (all)"),
    ("fullest", "Fullest GPU"),
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
    ("mem", "Mem (all)"),
    ("temp", "Temp"),
    ("alerts", "!"),
)


# Which columns a narrow pane keeps first: who, how it is, what is wrong, how fresh a
# Prometheus row's figures are, then the figures.
KEEP_ORDER = (
    "host", "state", "alerts", "src", "load", "toks", "age", "mem", "fullest", "temp", "power",
    "left", "ready", "progress", "reqs", "kv", "gpus", "util", "unit",
)  # fmt: skip
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


def progress_cell(row: FleetRow) -> str:
    """The engine's verdict as judged (its own word, `unknown` included); n/a: not judged."""
    if row.progress is None:
        return NA
    style = STATE_STYLE.get(row.progress, "")
    return f"[{style}]{row.progress}[/]" if style else row.progress


def memory_cell(row: FleetRow, compact: bool) -> str:
    """The memory of all the host's GPUs together, in GiB: no bar or percentage to mistake
    for the fullest GPU's (that figure has its column, `fullest_cell`)."""
    used, total = row.gpu_mem_used_bytes, row.gpu_mem_total_bytes
    if used is None or not total:
        return NA
    return f"{used / GIB:.0f}/{total / GIB:.0f}G"


def fullest_cell(row: FleetRow) -> str:
    """The fullest GPU's memory in use, as a percentage of that GPU's memory."""
    return _na(row.gpu_mem_used_pct_max, "{:.0f}%")


ALERTS_MIN_CELLS = 20  # Alerts is kept this wide before the figures after it
HOST_MAX_CELLS = 30
# A narrow pane's host column: room for a member's `└ NAME headless` of an 8-letter name.
HOST_COMPACT_CELLS = 19
LABELS_FROM_CELLS = 150


def host_cell(row: FleetRow, compact: bool) -> str:
    """Who a row is: a deployment's row by its name and its hosts (never its row key), each
    member beneath it marked, headless rank hosts said; the label only where there is room."""
    if row.members:
        name = f"{row.deployment}: {len(row.members)} hosts"
        return name if compact else f"deployment {name}"
    host = f"└ {row.host}" if row.deployment is not None else row.host
    host += " headless" if row.headless else ""
    return host if not row.label or compact else f"{host} {row.label}"


def ready_cell(row: FleetRow) -> str:
    """/health's answer; n/a on a headless rank host, which runs no API server to answer."""
    if row.health_ok is None or row.headless:
        return NA
    return "[green]yes[/]" if row.health_ok else "no"


def values(row: FleetRow, compact: bool = False) -> dict[str, str]:
    """Every column's markup for one host, uncut but for the source's own text."""
    state = host_state(row)
    return {
        "host": free(host_cell(row, compact), HOST_COMPACT_CELLS if compact else HOST_MAX_CELLS),
        "src": SOURCE_WORD.get(row.source, row.source),
        "age": age_cell(row),
        "state": f"[{STATE_STYLE[state]}]{state}[/]",
        "unit": free(row.unit_state, 12),
        "load": free(load_cell(row), 14),
        "ready": ready_cell(row),
        "progress": progress_cell(row),
        "reqs": NA if row.running is None else f"{row.running}/{_na(row.waiting)}",
        "kv": _na(row.kv_pct, "{:.0f}%"),
        "toks": _na(row.gen_tok_s, "{:.0f}"),
        "gpus": _na(row.gpu_count),
        "mem": memory_cell(row, compact),
        "fullest": fullest_cell(row),
        "util": _na(row.gpu_util_pct_max, "{:.0f}%"),
        "temp": _na(row.temp_c_max, "{:.0f}C"),
        "power": _na(row.power_w, "{:.0f}W"),
        "left": _na(row.leftovers),
        "alerts": free(", ".join(row.alerts), 200)
        if row.alerts
        else ("" if row.reachable else "!"),
    }


def cells(row: FleetRow, compact: bool) -> list[Text]:
    """The cells of one layout (FULL_COLUMNS or COMPACT_COLUMNS), alerts cut short."""
    drawn = values(row, compact)
    if row.alerts:
        drawn["alerts"] = free(", ".join(row.alerts), 3 if compact else 28)
    layout = COMPACT_COLUMNS if compact else FULL_COLUMNS
    return [Text.from_markup(drawn[column]) for column, _ in layout]


def fitted_columns(drawn: Sequence[dict[str, str]], width: int) -> dict[str, int]:
    """The columns that fit `width` cells, most needed first, each with its width; Alerts
    takes what is left. A column that does not fit is left out whole, never cut."""
    widths = {
        column: max(
            [Text(title).cell_len]
            + [Text.from_markup(cells_of[column]).cell_len for cells_of in drawn]
        )
        for column, title in FULL_COLUMNS
    }
    kept: dict[str, int] = {}
    used = 0
    for column in KEEP_ORDER:
        need = min(widths[column], ALERTS_MIN_CELLS) if column == "alerts" else widths[column]
        if kept and used + need + 2 > width:
            continue
        kept[column] = need
        used += need + 2
    if "alerts" in kept:  # what is left widens Alerts up to its longest cell
        kept["alerts"] = min(widths["alerts"], kept["alerts"] + max(0, width - used))
    return {column: kept[column] for column, _ in FULL_COLUMNS if column in kept}


class FleetTable(DataTable[Text]):
    """Hosts as rows; `show(rows, width)` redraws and keeps the cursor on its host."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self.columns_shown: dict[str, int] = {}
        self._hosts: list[str] = []  # by row: a host can be listed twice (two sources)

    def _columns_for(self, fitted: dict[str, int]) -> None:
        if self.columns_shown == fitted:
            return
        self.clear(columns=True)
        titles = dict(FULL_COLUMNS)
        for column, cells_wide in fitted.items():
            self.add_column(titles[column], key=column, width=cells_wide)
        self.columns_shown = fitted

    def show(self, rows: Sequence[FleetRow], width: int) -> None:
        selected = self.selected_host()
        room = width - 2 * self.cell_padding - self.styles.scrollbar_size_vertical
        # Labels (the model) beside host names only where there is room for them.
        drawn = [values(row, compact=room < LABELS_FROM_CELLS) for row in rows]
        fitted = fitted_columns(drawn, room)
        self._columns_for(fitted)
        self.clear()
        self._hosts = [row.host for row in rows]
        for index, (row, cells_of) in enumerate(zip(rows, drawn, strict=True)):
            if "alerts" in fitted and row.alerts:
                cells_of["alerts"] = free(", ".join(row.alerts), fitted["alerts"])
            self.add_row(*(Text.from_markup(cells_of[column]) for column in fitted), key=str(index))
        if selected is not None and selected in self._hosts:
            self.move_cursor(row=self._hosts.index(selected))

    def row_of(self, host: str) -> int | None:
        """The first row drawn for a host, or None when it is not shown."""
        return self._hosts.index(host) if host in self._hosts else None

    def host_at(self, row: int) -> str | None:
        """The host drawn on one row (rows are keyed by place, never by a name that repeats)."""
        return self._hosts[row] if 0 <= row < len(self._hosts) else None

    def selected_host(self) -> str | None:
        return self.host_at(self.cursor_row) if self.row_count else None
