"""README's `fleet --demo N` sentence says from how many boxes each state appears, as the
demo makes them (walked with `--demo 6`: README promised a stopped box with leftovers,
and none came)."""

from __future__ import annotations

import re
from pathlib import Path

from tui.fleet.demo import demo_kind

README = Path(__file__).resolve().parents[2] / "README.md"


def _first_count(kind: str) -> int:
    """The smallest fleet in which the demo has a box of this kind."""
    return next(n for n in range(1, 50) if kind in (demo_kind(i, n) for i in range(n)))


def test_readme_says_from_how_many_boxes_each_demo_state_comes() -> None:
    flat = " ".join(README.read_text().split())
    match = re.search(r"`servedeck fleet --demo N \[--json\]` shows (.*?)\)\.", flat)
    assert match, "README no longer describes fleet --demo N"
    said = match.group(1)
    claims = {
        "failed": r"one failed from (\d+)",
        "unreachable": r"one unreachable from (\d+)",
        "stopped": r"one stopped with leftovers from (\d+)",
    }
    for kind, pattern in claims.items():
        found = re.search(pattern, said)
        assert found, f"README does not say from how many boxes a {kind} box comes: {said}"
        assert int(found.group(1)) == _first_count(kind), (kind, said)
    every = re.search(r"`--demo (\d+)` shows every state", said)
    assert every and int(every.group(1)) >= max(map(_first_count, claims)), said
