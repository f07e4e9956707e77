"""README's key table lists every key of the command table (tui/core/keymap.py).

The command table drives the bindings, the footer, `?` and the palette; the README is
written by hand, so this test is what keeps it from falling behind a new key.
"""

from __future__ import annotations

import re
from pathlib import Path

from tui.core.keymap import COMMANDS

README = Path(__file__).resolve().parents[2] / "README.md"
# Textual's key names for the characters the README writes as themselves.
_CHARACTERS = {
    "question_mark": "?",
    "slash": "/",
    "colon": ":",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "left_curly_bracket": "{",
    "right_curly_bracket": "}",
}


def _key_table(text: str) -> str:
    section = re.split(r"^## Keys\n", text, maxsplit=1, flags=re.M)[1].split("\n## ", 1)[0]
    return "\n".join(line for line in section.splitlines() if line.startswith("|"))


def documented_keys(text: str) -> set[str]:
    """Every `backticked` key of the Keys table, with ranges such as `1`-`5` expanded."""
    table = _key_table(text)
    keys = set(re.findall(r"`([^`]+)`", table))
    for low, high in re.findall(r"`(\d)`-`(\d)`", table):
        keys |= {str(n) for n in range(int(low), int(high) + 1)}
    return keys | {key.lower() for key in keys if len(key) > 1}


def _names(key: str) -> list[str]:
    names = [_CHARACTERS.get(name, name) for name in key.split(",")]
    return [name if len(name) == 1 else name.lower() for name in names]


def test_readme_lists_every_key_of_the_command_table() -> None:
    documented = documented_keys(README.read_text())
    missing = sorted(
        f"{command.binding_id} ({name})"
        for command in COMMANDS
        for name in _names(command.key)
        if name not in documented
    )
    assert missing == [], f"README's key table lacks: {missing}"


def test_a_missing_key_is_found() -> None:
    text = "## Keys\n\n| key | where | what |\n|---|---|---|\n| `q` | anywhere | quit |\n"
    assert documented_keys(text) == {"q"}
    assert "K" not in documented_keys(text)
    assert documented_keys(text.replace("`q`", "`1`-`3`")) >= {"1", "2", "3"}
