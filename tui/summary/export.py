"""Writing a summary to disk: atomic, and never over an existing file unless asked.

The text goes to a temporary file in the target's folder, is flushed and
fsynced, then moves into place: with `force` by os.replace, otherwise by
os.link, which fails if the name exists (the O_EXCL of renames), so a
concurrent writer or an older summary is never clobbered silently.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import time
from pathlib import Path

from tui.core.errors import ServedeckError


class SummaryExistsError(ServedeckError):
    """The target file exists and --force was not given (exit code 2)."""

    exit_code = 2


def default_summary_name(profile_name: str, now_s: float | None = None) -> str:
    """`summary-<profile>-YYYYmmdd-HHMMSS.md`, safe as a file name."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now_s))
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", profile_name).strip("-") or "profile"
    return f"summary-{safe}-{stamp}.md"


def _write_exclusive(path: Path, text: str) -> None:
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise SummaryExistsError(f"{path}: already exists (use --force to replace it)") from None
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)


def check_writable(path: Path, *, force: bool = False) -> None:
    """Refuse, before any work, a target whose folder is missing or that exists (no force)."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise ServedeckError(f"{path}: folder {folder} does not exist")
    if path.exists() and not force:
        raise SummaryExistsError(f"{path}: already exists (use --force to replace it)")


def write_atomically(path: Path, text: str, *, force: bool = False) -> Path:
    """Write `text` to `path` all at once; refuse an existing file unless `force`."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    check_writable(path, force=force)
    descriptor, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp_name, 0o644)
        if force:
            os.replace(temp_name, path)
        else:
            try:
                os.link(temp_name, path)
            except FileExistsError:
                raise SummaryExistsError(
                    f"{path}: already exists (use --force to replace it)"
                ) from None
            except PermissionError:
                _write_exclusive(path, text)  # a filesystem without hard links
    except OSError as error:
        raise ServedeckError(f"{path}: cannot write it ({error.strerror or error})") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
    return path


def export_summary(
    text: str,
    profile_name: str,
    target: Path | None = None,
    *,
    folder: Path | None = None,
    force: bool = False,
) -> Path:
    """Write to `target`, or to a timestamped name in `folder` (default: the current folder)."""
    if target is None:
        target = (folder or Path.cwd()) / default_summary_name(profile_name)
    return write_atomically(target, text, force=force)
