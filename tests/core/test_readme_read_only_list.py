"""README names the subcommands that take `--read-only`: exactly those the parser gives it.

A command added to WITH_READ_ONLY (`tune`) without README saying so leaves a new user
believing it cannot be limited; one README names that the parser refuses is worse.
"""

from __future__ import annotations

import re
from pathlib import Path

from tui.cli import WITH_READ_ONLY

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_read_only_commands(text: str) -> set[str]:
    """The backquoted names in the parentheses before "take `--read-only`"."""
    flat = " ".join(text.split())
    match = re.search(r"\(([^()]*)\) take `--read-only`", flat)
    assert match, "README no longer says which subcommands take --read-only"
    return set(re.findall(r"`([a-z-]+)`", match.group(1)))


def test_readme_lists_every_command_that_takes_read_only() -> None:
    assert readme_read_only_commands(README.read_text()) == set(WITH_READ_ONLY)
