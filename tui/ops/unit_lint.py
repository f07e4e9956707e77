"""Lint a Deck's unit: the real host's `systemctl cat`, or the simulator's seed unit."""

from __future__ import annotations

from tui.deck import Deck
from tui.serving.unit.lint_run import UnitLintReport, lint_text


async def lint_deck_unit(deck: Deck) -> UnitLintReport:
    """The unit the Deck reads (`Deck.unit_file`), linted against its profile."""
    unit = await deck.unit_file()
    return lint_text(deck.profile, unit.name, unit.text, unit.stop_s)
