"""Number formatting shared by the widgets (display only, no domain logic)."""

from __future__ import annotations

GIB = 1024**3


def format_bytes_gib(value_bytes: float | None, digits: int = 1) -> str:
    if value_bytes is None:
        return "n/a"
    return f"{value_bytes / GIB:.{digits}f} GiB"
