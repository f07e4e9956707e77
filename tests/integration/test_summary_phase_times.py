"""One figure per phase in the handoff summary of a demo load (issue 34).

The same summary gave four durations for one phase (compile 3.1 / 3.6 / 3.1 / 3.1 s):
vLLM's stated figures in the load facts and the waterfall, the console tracker's spans
(read times) in Deployment attempts, a fresh tracker's in the load timeline. A phase's
duration is now its span in the lines' own times everywhere; vLLM's own figure is shown
only labelled as vLLM's. Real parts: the console runs under Pilot on the simulator (its
server, engine and workers are processes writing a real log), keeps the load in
loads.jsonl and records it; the summary is collected from the same Deck.
"""

from __future__ import annotations

import json
import re
import time

from tui.app import ServedeckApp
from tui.compose import open_deck
from tui.core import paths
from tui.core.config import demo_profile
from tui.serving.load.explain import STEP_NAMES
from tui.summary import collect_summary, render_markdown

LOAD_S = 12.0
LOADING = ("starting", "weights", "compile", "kv_cache", "cuda_graphs")
_PHASE_OF_STEP = {name: phase for phase, name in STEP_NAMES.items()}
_PHASE_OF_STEP["start (engine init)"] = "starting"  # the waterfall's short name
# a duration as the summary writes it: `4.2 s`, `42 s`, `3 m 05 s`, `1 h 02 m`
_DURATION = r"\d+(?:\.\d)? s|\d+ m \d\d s|\d+ h \d\d m"


async def _until(pilot, predicate, timeout_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout_s:g} s waiting for {what}"
        await pilot.pause(0.1)


def _loads() -> list[dict[str, object]]:
    path = paths.data_dir() / "loads.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _section(text: str, heading: str) -> str:
    return text.split(f"{heading}\n", 1)[1].split("\n## ", 1)[0]


def _timeline(text: str) -> dict[str, str]:
    """`| phase | started | duration |` rows of the load timeline."""
    block = text.split("### Load timeline", 1)[1].split("\n\n", 2)[1]
    rows = [line.strip("|").split("|") for line in block.splitlines()[2:]]
    return {cells[0].strip(): cells[2].strip() for cells in rows if cells[0].strip() in LOADING}


def _waterfall(text: str) -> dict[str, str]:
    """`name |bar| duration` lines of the last load's waterfall."""
    block = _section(text, "## Last load").split("```\n", 1)[1].split("```", 1)[0]
    found = {}
    for line in block.splitlines()[:-1]:
        name, _, rest = line.split("|", 2)
        step = re.sub(r" \(vLLM: [^)]*\)", "", name.strip())
        if step in _PHASE_OF_STEP and _PHASE_OF_STEP[step] in LOADING:
            found[_PHASE_OF_STEP[step]] = rest.split("  (last")[0].strip()
    return found


def _attempts(text: str) -> dict[str, str]:
    """`phase duration` pairs in the one attempt's load time."""
    rows = _section(text, "## Deployment attempts").splitlines()
    (row,) = [line for line in rows if line.startswith("| 1 |")]
    cell = row.strip("|").split("|")[4]
    return dict(
        (phase, seconds)
        for phase, seconds in re.findall(rf"\b({'|'.join(LOADING)}) ({_DURATION})", cell)
    )


async def test_each_phase_has_one_duration_everywhere_in_the_summary() -> None:
    deck = open_deck(demo_profile(), demo_load_s=LOAD_S, demo_orphans_on_stop=0)
    app = ServedeckApp(deck.profile, deck)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await _until(pilot, lambda: app.unit_state is not None, 60, "the unit's state")
            app.service._run_action("start")
            await _until(pilot, lambda: app.ready, 120, "ready")
            await _until(pilot, lambda: len(_loads()) == 1, 60, "the load kept")
            await pilot.pause(1.0)
            text = render_markdown(await collect_summary(deck))
    finally:
        await deck.close()
    print(text)
    timeline, waterfall, attempts = _timeline(text), _waterfall(text), _attempts(text)
    assert set(timeline) == set(LOADING), timeline
    assert waterfall == timeline, (waterfall, timeline)
    assert attempts == timeline, (attempts, timeline)
    # vLLM's own figures appear only as vLLM's, never as a phase's duration
    facts = text.split("| load fact | value |", 1)[1].split("\n\n", 1)[0]
    for row in facts.splitlines()[1:]:
        unlabelled = re.sub(rf"vLLM: [\w. ]+? (?:{_DURATION})", "", row)
        assert not re.search(rf"\b(?:{_DURATION})", unlabelled), row
    assert "vLLM: compile " in facts and "vLLM: CUDA graphs " in facts, facts
