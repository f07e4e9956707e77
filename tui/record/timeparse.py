"""Instants on the command line: `2026-11-30 03:12`, ISO 8601, `03:12` (today), `2h` (ago), epoch."""

from __future__ import annotations

import re
import time
from datetime import datetime

from tui.core.errors import UsageError

_AGO = re.compile(r"^-?(\d+(?:\.\d+)?)\s*([smhd])(?:\s*ago)?$")
_UNITS_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_instant(text: str, option: str = "time", now_s: float | None = None) -> float:
    """Seconds since the epoch (local time for dates without an offset); UsageError otherwise."""
    now_s = time.time() if now_s is None else now_s
    value = text.strip()
    if value == "now":
        return now_s
    ago = _AGO.match(value)
    if ago:
        return now_s - float(ago.group(1)) * _UNITS_S[ago.group(2)]
    if re.fullmatch(r"\d{9,}(?:\.\d+)?", value):
        return float(value)
    if re.fullmatch(r"\d{1,2}:\d\d(?::\d\d)?", value):
        today = datetime.fromtimestamp(now_s).strftime("%Y-%m-%d")
        value = f"{today} {value}"
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        raise UsageError(
            f"{option}: cannot read {text!r}; use '2026-11-30 03:12', '03:12', '2h' (ago) "
            "or seconds since the epoch"
        ) from None
