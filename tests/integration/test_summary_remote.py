"""The summary of a box behind a jump host: facts over SSH, log and /metrics through the route.

The "remote box" is this machine reached through two real sshd servers (jump A -> B),
serving the simulator on B's loopback (reached only through an SSH port forward).
"""

from __future__ import annotations

import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.sshd_fixtures import SshdPair
from tests.support.summary_helpers import table_shapes
from tui.core.config import HandoffNotes, ModelConfig, Profile, ServiceConfig
from tui.deck import Deck
from tui.hosts.ssh import SSHHost
from tui.sim.box import SimBox
from tui.summary import collect_summary, render_markdown

pytestmark = pytest.mark.sshd
KIMI_CONFIG = Path(__file__).parents[1] / "support" / "fixtures" / "models" / "Kimi-K2.5.json"


def remote_profile(sshd: SshdPair, box: SimBox, model_dir: Path) -> Profile:
    return Profile(
        name="jumped",
        host=sshd.jump_config(),
        service=ServiceConfig(
            base_url=box.base_url, log_file=str(box.log_path), python=sys.executable
        ),
        model=ModelConfig(name="Kimi-K2.5", path=str(model_dir), tp=8, checkpoint_gib=554.3),
        handoff=HandoffNotes(goal="summary over a jump host"),
    )


def model_dir_with_config(tmp_path: Path) -> Path:
    """A model folder holding only config.json (no shards: the summary falls back to it)."""
    folder = tmp_path / "Kimi-K2.5-INT4"
    folder.mkdir()
    shutil.copy(KIMI_CONFIG, folder / "config.json")
    return folder


async def test_summary_over_a_jump_host(
    sshd: SshdPair, serving_box: SimBox, tmp_path: Path
) -> None:
    profile = remote_profile(sshd, serving_box, model_dir_with_config(tmp_path))
    deck = Deck(profile, SSHHost(profile.host))
    started = time.perf_counter()
    try:
        inputs = await collect_summary(deck)
    finally:
        await deck.close()
    elapsed = time.perf_counter() - started
    problems = "\n".join(inputs.problems)
    # No GPU on this machine: only the GPU collector may complain.
    assert all(p.startswith("gpus") or "no NVIDIA" in p for p in inputs.problems), problems
    assert inputs.overview is not None and inputs.overview.hostname
    assert inputs.software is not None and inputs.software.python_version == sys.version.split()[0]
    assert inputs.disk is not None and inputs.disk.path == profile.model.path
    assert inputs.model is not None and inputs.model.arch is not None
    assert inputs.model.arch.num_layers == 61 and "config.json only" in inputs.model.source
    assert inputs.load is not None and inputs.load.ready
    assert inputs.metrics is not None  # /metrics through the SSH port forward
    text = render_markdown(inputs)
    assert "# State summary: jumped on" in text and " via " in text
    assert "| serving |" in text and "Goal: summary over a jump host" in text
    assert all(all(n == header for n in rows) for header, rows in table_shapes(text))
    assert elapsed < 60, elapsed  # generous: a loaded shared machine; figures in tests/perf


async def test_an_unreachable_host_gives_lines_not_a_crash(
    sshd: SshdPair, serving_box: SimBox, tmp_path: Path
) -> None:
    profile = remote_profile(sshd, serving_box, tmp_path)
    dead = replace(profile.host, port=1, jump=(), connect_timeout_s=5.0)
    profile = replace(profile, host=dead)
    deck = Deck(profile, SSHHost(dead))
    try:
        inputs = await collect_summary(deck)
    finally:
        await deck.close()
    assert inputs.overview is None and inputs.problems
    text = render_markdown(inputs)
    assert "## Collection problems" in text and "host overview:" in text
