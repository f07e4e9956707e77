"""README's key table is written from the command table (tui/core/keymap.py), and compared both ways.

The block between README's markers comes from `python -m tui.core.keymap --write README.md`:
a key in the table with no README row fails, and so does a README row whose id the table
does not have (a key removed or renamed), each by its id.
"""

from __future__ import annotations

import re
from pathlib import Path

from tui.core.keymap import BY_ID, README_END, README_START, markdown_block, with_block

README = Path(__file__).resolve().parents[2] / "README.md"
_ROW_ID = re.compile(r"^\|.*\| `([^`]+)` \|$")


def readme_ids(text: str) -> list[str]:
    """The id of every row between the markers (the last column)."""
    start, end = text.index(README_START), text.index(README_END)
    return [m.group(1) for line in text[start:end].splitlines() if (m := _ROW_ID.match(line))]


def drift(text: str) -> tuple[list[str], list[str]]:
    """(ids of the table missing from README, README ids the table does not have)."""
    documented = readme_ids(text)
    return sorted(set(BY_ID) - set(documented)), sorted(set(documented) - set(BY_ID))


def test_every_key_of_the_table_has_a_readme_row_and_every_row_a_key() -> None:
    missing, unknown = drift(README.read_text())
    assert missing == [], (
        f"README's key table lacks {missing}: python -m tui.core.keymap --write README.md"
    )
    assert unknown == [], f"README lists keys the table does not have: {unknown}"


def test_the_readme_block_is_the_generated_one() -> None:
    text = README.read_text()
    assert markdown_block() in text, (
        "README's key table drifted: python -m tui.core.keymap --write README.md"
    )
    assert with_block(text) == text


def test_drift_is_found_both_ways() -> None:
    text = "intro\n" + markdown_block() + "\nafter\n"
    assert drift(text) == ([], [])
    row = next(line for line in text.splitlines() if line.endswith("| `fleet.sort` |"))
    assert drift(text.replace(row + "\n", "")) == (["fleet.sort"], [])
    extra = row.replace("fleet.sort", "fleet.gone")
    assert drift(text.replace(row, row + "\n" + extra)) == ([], ["fleet.gone"])
    stale = text.replace(row, "| `s` | Fleet | Sort | `fleet.sort` |")
    assert with_block(stale) == text  # --write puts the table's row back
