"""The unit's command line: its effective `ExecStart=` as words, read one way by every reader.

The Plan (the LoRA flags' memory) and `servedeck tune` (the base each configuration's
flags replace) both need what systemd would run: the last `ExecStart=` of the unit with
its drop-ins applied (an empty assignment resets the list), its prefixes dropped.
"""

from __future__ import annotations

import shlex

from tui.core.errors import ServedeckError
from tui.serving.unit.lint import parse_unit

# systemd's ExecStart= prefixes (`-` ignore failure, `@` argv[0], `+!:` privileges).
_PREFIXES = "-@+!:"


class ExecStartError(ServedeckError):
    """An `ExecStart=` that cannot be split into words as systemd would (exit code 2)."""

    exit_code = 2


def exec_start_argv(name: str, text: str) -> list[str]:
    """The effective `ExecStart=` of `systemctl cat` text as words; [] when the unit has none."""
    starts = parse_unit(name, text).all("Service", "ExecStart")
    if not starts:
        return []
    try:
        return shlex.split(starts[-1].lstrip(_PREFIXES))
    except ValueError as error:
        raise ExecStartError(f"{name}: ExecStart cannot be split into words ({error})") from None
