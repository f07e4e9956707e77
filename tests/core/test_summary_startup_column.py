"""The Benchmarks table's startup column belongs to the load a run was measured on.

Walked through the demo: a quick run on a 15 s load, a stop, a 10 s load, a second quick
run; the second summary gave the first run "startup 10 s" (the current load's) though
the first summary had said 15 s for the same run. A run measured before the current load
began says n/a: that load's startup is not known to this table.
"""

from __future__ import annotations

import re
from datetime import datetime

from tests.core.test_bench_best import CONTEXT, _level, _run
from tui.core.config import demo_profile
from tui.serving.load.progress import LoadFacts, LoadProgress, PhaseSpan
from tui.summary.inputs import SummaryInputs
from tui.summary.render import benchmarks

LOAD_START_S = datetime.fromisoformat("2026-12-06T19:39:32+00:00").timestamp()


def _load() -> LoadProgress:
    timeline = (
        PhaseSpan("starting", LOAD_START_S, 0.0),
        PhaseSpan("weights", LOAD_START_S, 8.0),
        PhaseSpan("serving", LOAD_START_S + 10.0, 60.0),
    )
    return LoadProgress(
        phase="serving", phase_elapsed_s=60.0, load_elapsed_s=None, shards_done=64,
        shards_total=64, shard_pct=100.0, eta_s=None, eta_source=None, http_starting=True,
        ready=True, failure_line=None, failure_context=(), last_error_line=None,
        facts=LoadFacts(), timeline=timeline, engine_stats=None, mem_used_bytes=None,
        mem_fill_bytes_per_s=None, at_s=LOAD_START_S + 70.0,
    )  # fmt: skip


def _startup_cells(text: str) -> dict[str, str]:
    """Run time -> the startup cell of its row."""
    rows = [line for line in text.splitlines() if re.match(r"^\| 2026-", line)]
    return {row.split("|")[1].strip(): row.rstrip("|").split("|")[-1].strip() for row in rows}


def test_a_run_from_an_earlier_load_has_no_startup_of_the_current_one() -> None:
    profile = demo_profile()
    earlier = _run("a1", (_level(1, 4, 62.1),), preset="quick",
                   when="2026-12-06T19:38:10+00:00", context=CONTEXT)  # fmt: skip
    current = _run("b2", (_level(1, 4, 64.6),), preset="quick",
                   when="2026-12-06T19:40:03+00:00", context=CONTEXT)  # fmt: skip
    inputs = SummaryInputs(
        profile, "simulator", LOAD_START_S + 80.0, load=_load(),
        benchmarks=(current, earlier), bench_config_hash=CONTEXT.config_hash,
    )  # fmt: skip
    cells = _startup_cells("\n".join(benchmarks(inputs)))
    assert cells["2026-12-06 19:40"] == "10 s", cells
    assert cells["2026-12-06 19:38"] == "n/a", cells
