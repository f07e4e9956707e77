"""Small Markdown building blocks for the summary: tables that always parse, and value formats."""

from __future__ import annotations

import time
from collections.abc import Sequence

from tui.core.formatting import NA


def cell(value: object) -> str:
    """One table cell: no newline or bare pipe may break the row."""
    text = NA if value is None or value == "" else str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").strip()


def table(
    headers: Sequence[str], rows: Sequence[Sequence[object]], right: Sequence[int] = ()
) -> list[str]:
    """A GitHub-style table; columns listed in `right` are right-aligned (numbers)."""
    separator = ["---:" if index in right else "---" for index in range(len(headers))]
    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "|".join(separator) + "|"]
    for row in rows:
        padded = list(row) + [None] * (len(headers) - len(row))
        lines.append("| " + " | ".join(cell(value) for value in padded[: len(headers)]) + " |")
    return [*lines, ""]


def gb(size: float | None) -> str:
    return NA if size is None else f"{size / 1000**3:,.0f} GB"


def num(value: float | None, digits: int = 1, unit: str = "") -> str:
    if value is None:
        return NA
    return f"{value:,.{digits}f}{(' ' + unit) if unit else ''}"


def ms(seconds: float | None) -> str:
    return NA if seconds is None else f"{seconds * 1000:,.0f} ms"


def clock(epoch_s: float | None) -> str:
    if epoch_s is None:
        return NA
    return time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(epoch_s))


def index_ranges(indexes: Sequence[int]) -> str:
    """[0, 1, 2, 3, 6] -> "0-3, 6"."""
    ordered = sorted(set(indexes))
    parts: list[str] = []
    start = previous = None
    for value in ordered:
        if start is None:
            start = previous = value
        elif value == previous + 1:  # type: ignore[operator]
            previous = value
        else:
            parts.append(f"{start}-{previous}" if start != previous else str(start))
            start = previous = value
    if start is not None:
        parts.append(f"{start}-{previous}" if start != previous else str(start))
    return ", ".join(parts)
