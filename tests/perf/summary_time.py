"""Time to produce the state summary: the simulated 8-GPU box locally, and through a jump host.

Run from the repository root:  python tests/perf/summary_time.py [--runs 5]
It runs itself under pytest so the real sshd pair and simulator fixtures start
and stop exactly as in the tests; the figures print at the end (median, min, max
of collect + render, after one warm-up run that opens the connections).
Targets: local <= 1 s, through SSH with a jump <= 3 s.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.integration.test_summary_remote import model_dir_with_config, remote_profile  # noqa: E402
from tests.support.sshd_fixtures import SshdPair  # noqa: E402
from tests.support.summary_helpers import demo_deck  # noqa: E402
from tui.deck import Deck  # noqa: E402
from tui.hosts.ssh import SSHHost  # noqa: E402
from tui.sim.box import SimBox  # noqa: E402
from tui.summary import collect_summary, render_markdown  # noqa: E402

RUNS = int(os.environ.get("SUMMARY_PERF_RUNS", "5"))
FIGURES: list[str] = []


def _line(label: str, seconds: list[float], target_s: float, slowest: dict[str, float]) -> str:
    parts = ", ".join(
        f"{name} {value:.3f}" for name, value in sorted(slowest.items(), key=lambda kv: -kv[1])[:3]
    )
    return (
        f"{label}: median {statistics.median(seconds):.3f} s, min {min(seconds):.3f}, "
        f"max {max(seconds):.3f} over {len(seconds)} runs (target <= {target_s:g} s); "
        f"slowest collectors (last run, s): {parts}"
    )  # fmt: skip


async def _time(deck: Deck) -> tuple[list[float], dict[str, float]]:
    started = time.perf_counter()
    render_markdown(await collect_summary(deck))  # first run: connections, forwards, imports
    FIGURES.append(f"  first (cold) run {time.perf_counter() - started:.3f} s")
    times = []
    inputs = None
    for _ in range(RUNS):
        started = time.perf_counter()
        inputs = await collect_summary(deck)
        render_markdown(inputs)
        times.append(time.perf_counter() - started)
    assert inputs is not None
    return times, inputs.timings_s


async def test_local_demo_box(serving_box: SimBox) -> None:
    deck = demo_deck(serving_box)
    try:
        times, timings = await _time(deck)
    finally:
        await deck.host.close()
    FIGURES.append(_line("simulated 8-GPU box, local", times, 1.0, timings))


async def test_through_a_jump_host(sshd: SshdPair, serving_box: SimBox, tmp_path: Path) -> None:
    profile = remote_profile(sshd, serving_box, model_dir_with_config(tmp_path))
    deck = Deck(profile, SSHHost(profile.host))
    try:
        times, timings = await _time(deck)
    finally:
        await deck.close()
    FIGURES.append(_line("sshd with one jump", times, 3.0, timings))


def test_print_figures() -> None:
    print("\n" + "\n".join(FIGURES))


if __name__ == "__main__":
    if "--runs" in sys.argv:
        os.environ["SUMMARY_PERF_RUNS"] = sys.argv[sys.argv.index("--runs") + 1]
    os.chdir(REPO)
    sys.exit(pytest.main([__file__, "-q", "-s", "-p", "no:cacheprovider"]))
