"""A tune's result table, fitted to a terminal's width.

Every column at once is ~140 columns wide, more with a skip's arithmetic in its row. To
fit a width, the headers and cells are first abbreviated (a skip's or failure's reason
goes below the table), then columns are dropped least telling first, never the
objective's, the verdict's or the configuration's; a configuration name still too long
is cut last. The handoff's Markdown and `--wide` get every column.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tui.core.formatting import NA, gib
from tui.tune.driver import Outcome

# Dropped in this order while the table is too wide (the objective's own is kept); at
# "names" the configuration names longer than NAME_S are cut before the last columns go.
DROP_ORDER = ("kv", "gpus", "load", "total", "names", "single", "per_gpu", "capacity")
NAME_S = 30
OBJECTIVE_COLUMN = {"capacity": "capacity", "single_stream": "single", "tok_per_gpu": "per_gpu"}
GAP = "  "
ELLIPSIS = "~"


def _num(value: float | None, spec: str = ".1f") -> str:
    return NA if value is None else format(value, spec)


def verdict(o: Outcome, *, with_reason: bool) -> str:
    """served | failed at PHASE | timeout at PHASE | skipped[: arithmetic] | over budget."""
    if o.outcome in ("failed", "timeout"):
        return f"{o.outcome} at {o.phase or '?'}"
    if o.outcome == "skipped" and with_reason:
        return f"skipped: {o.reason}"
    return o.outcome


@dataclass(frozen=True, slots=True)
class Column:
    """One column: its id, its header in full and abbreviated, its cell in full and short."""

    id: str
    header: str
    short: str
    cell: Callable[[Outcome], str]
    short_cell: Callable[[Outcome], str] | None = None


NONE_PROVED = "none proved"  # a search ran and no level met the SLO (the why goes below)
NO_GPUS = "no GPUs"  # a CPU box: a per-GPU figure does not apply


def _users(o: Outcome, short: bool = False) -> str:
    """`24 users`; `>=1 user` when no level above it missed (a floor, not the limit)."""
    users = o.capacity_users
    if users is None:
        return NONE_PROVED if o.capacity_none_proved else NA
    text = (">=" if o.capacity_users_above is None else "") + str(users)
    return text if short else f"{text} {'user' if users == 1 else 'users'}"


def _per_gpu(o: Outcome, text: str) -> str:
    """A per-GPU cell: "no GPUs" on a box without any, never a figure over 0 GPUs."""
    return NO_GPUS if o.gpus == 0 else text


COLUMNS = (
    Column("name", "configuration", "configuration", lambda o: o.name),
    Column(
        "outcome",
        "outcome",
        "outcome",
        lambda o: verdict(o, with_reason=True),
        lambda o: verdict(o, with_reason=False),
    ),
    Column("load", "load s", "load s", lambda o: _num(o.load_s, ".0f")),
    Column("single", "1-stream tok/s", "1-str", lambda o: _num(o.single_stream_tok_s)),
    Column(
        "capacity",
        "capacity",
        "users",
        _users,
        lambda o: _users(o, short=True),
    ),
    Column("total", "total tok/s", "total", lambda o: _num(o.total_tok_s, ".0f")),
    Column("per_gpu", "tok/s/GPU", "/GPU", lambda o: _per_gpu(o, _num(o.tok_per_gpu))),
    Column("gpus", "GPUs", "GPUs", lambda o: _per_gpu(o, str(o.gpus))),
    Column("kv", "KV room/GPU", "KV/GPU", lambda o: _per_gpu(o, gib(o.kv_room_bytes_per_gpu))),
)


def _rows(ordered: Sequence[Outcome], columns: Sequence[Column], short: bool) -> list[list[str]]:
    head = ["#", *((c.short if short else c.header) for c in columns)]
    body = [
        [str(n), *(((c.short_cell or c.cell) if short else c.cell)(o) for c in columns)]
        for n, o in enumerate(ordered, 1)
    ]
    return [head, *body]


def _width(rows: Sequence[Sequence[str]]) -> int:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return sum(widths) + len(GAP) * (len(widths) - 1)


def fitted_rows(
    ordered: Sequence[Outcome], objective: str, width: int | None
) -> tuple[list[list[str]], bool]:
    """The header and rows that fit `width` (None: every column), and whether abbreviated."""
    columns = list(COLUMNS)
    rows = _rows(ordered, columns, short=False)
    if width is None or _width(rows) <= width:
        return rows, False
    keep = OBJECTIVE_COLUMN[objective]
    rows = _rows(ordered, columns, short=True)
    for drop in DROP_ORDER:
        if _width(rows) <= width:
            break
        if drop == "names":
            _cut_names(rows, NAME_S)
        elif drop != keep:
            columns = [c for c in columns if c.id != drop]
            cut = max(len(row[1]) for row in rows)
            rows = _rows(ordered, columns, short=True)
            _cut_names(rows, cut)
    over = _width(rows) - width
    if over > 0:
        _cut_names(rows, max(len(row[1]) for row in rows) - over)
    return rows, True


def _cut_names(rows: list[list[str]], width: int) -> None:
    """Configuration names over `width` cut, marked with ELLIPSIS (the header stays)."""
    width = max(len(rows[0][1]), width)
    for row in rows[1:]:
        if len(row[1]) > width:
            row[1] = row[1][: width - len(ELLIPSIS)] + ELLIPSIS


def table_lines(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [GAP.join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
