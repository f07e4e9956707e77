"""Write log lines to a file with secrets redacted (the log pane's export)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tui.core.errors import ServedeckError
from tui.core.redact import redact_text


def export_lines(texts: Iterable[str], path: Path) -> int:
    """Write each line redacted; returns how many were written."""
    count = 0
    try:
        with path.open("w", encoding="utf-8") as handle:
            for text in texts:
                handle.write(redact_text(text) + "\n")
                count += 1
    except OSError as error:
        raise ServedeckError(f"cannot write {path}: {error.strerror}") from None
    return count
