"""Plain CLI output that fits an 80-column terminal (the narrowest an operator's SSH gives).

A long detail wraps under its own column instead of running off the edge, so
nothing is cut: a PID, a path or a figure stays whole on one of the lines.
"""

from __future__ import annotations

import textwrap

WIDTH = 80


def hanging(head: str, detail: str, width: int = WIDTH) -> str:
    """`head` + `detail`, the detail wrapped at word boundaries under its own start column."""
    indent = " " * len(head)
    if len(head) + len(detail) <= width:
        return head + detail
    return textwrap.fill(
        detail,
        width=width,
        initial_indent=head,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )
