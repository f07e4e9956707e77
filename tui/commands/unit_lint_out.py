"""`servedeck doctor --unit`: print the unit lint's findings (text or JSON)."""

from __future__ import annotations

import asyncio
import json

from tui.compose import open_deck
from tui.core.config import Profile
from tui.ops.unit_lint import lint_deck_unit
from tui.serving.unit.lint import finding_lines
from tui.serving.unit.lint_run import UnitLintReport


def run_unit_lint(profile: Profile, *, as_json: bool) -> int:
    """0 when nothing fails (warnings allowed), 1 when a finding fails."""

    async def _run() -> UnitLintReport:
        deck = open_deck(profile)  # the demo lints its simulated unit's packaged file
        try:
            return await lint_deck_unit(deck)
        finally:
            await deck.close()

    report = asyncio.run(_run())
    if as_json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        sources = ", ".join(report.sources) or "unit text"
        print(f"servedeck doctor --unit: {report.unit} ({sources})")
        print("\n".join(finding_lines(list(report.findings))) or "no findings: the unit is fine")
    return 0 if report.ok else 1
