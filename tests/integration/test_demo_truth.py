"""The demo agrees with itself, doctor tells the truth, a missing key file is named.

The plan checks run against a real SimBox (its GPU model and its load log);
the CLI checks run `python -m tui` as a process, like tests/integration/test_cli_scripting.py.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli_support import closed_port, run, write_profile
from tests.support.summary_helpers import demo_deck
from tui.core.config import HostConfig, demo_profile
from tui.core.errors import HostError
from tui.hosts.local import LocalHost
from tui.hosts.ssh import SSHHost
from tui.ops.plan import plan_for_deck
from tui.plan import FITS
from tui.plan.inventory import GIB
from tui.serving.load.tracker import LoadTracker
from tui.sim import spec
from tui.sim.box import SimBox
from tui.sim.deck import SimDeck
from tui.sim.facts import simulated_model_facts
from tui.summary import collect_summary, render_markdown
from tui.summary.mdtable import clock


# -- item 1: the plan and the running demo -------------------------------------------------
def test_demo_checkpoint_size_is_the_simulated_checkpoints_own() -> None:
    facts = simulated_model_facts()
    assert facts.stated_checkpoint_bytes is not None
    assert abs(facts.stated_checkpoint_bytes - spec.MODEL_WEIGHTS_BYTES) < 1024
    assert facts.weights.total_bytes / GIB == pytest.approx(spec.MODEL_WEIGHTS_BYTES / GIB, 0.001)


async def test_demo_plan_says_its_own_layout_fits(sim_box_factory: Callable[..., SimBox]) -> None:
    box = sim_box_factory()
    profile = demo_profile()
    plan = await plan_for_deck(SimDeck(profile, LocalHost(), box), box.snapshot())
    chosen = plan.find(profile.model.tp)
    assert chosen is not None and chosen.verdict == FITS, chosen.reason if chosen else plan


async def test_plan_takes_the_engines_kv_cache_from_the_log(
    sim_box_factory: Callable[..., SimBox],
) -> None:
    box = sim_box_factory()
    box.start()
    assert box.wait_until_active(timeout_s=90) == "active"
    tracker = LoadTracker()
    tracker.feed_many(box.log_path.read_text().splitlines())
    facts = tracker.snapshot().facts
    assert facts.kv_cache_tokens
    profile = demo_profile()
    plan = await plan_for_deck(SimDeck(profile, LocalHost(), box), box.snapshot(), facts)
    chosen = plan.find(profile.model.tp)
    assert chosen is not None and chosen.verdict == FITS
    assert chosen.max_tokens == facts.kv_cache_tokens
    assert f"{facts.kv_cache_tokens:,} tokens" in chosen.reason and "engine log" in chosen.reason
    other = plan.find(8, ep=True)
    assert other is not None and "engine log" not in other.reason  # only the running layout


# -- item 16: --demo answers about the simulator; doctor does not claim "ready" ------------
def test_plan_demo_plans_the_simulator_and_its_layout_fits(cli_env: dict[str, str]) -> None:
    result = run(cli_env, "plan", "--demo")
    assert result.returncode == 0, result.stderr
    assert "/models/" not in result.stderr
    assert "(simulated)" in result.stdout
    chosen = next(line for line in result.stdout.splitlines() if "(chosen)" in line)
    assert "**TP=8** (chosen)" in chosen and "| fits |" in chosen


def test_doctor_demo_checks_the_simulator(cli_env: dict[str, str]) -> None:
    result = run(cli_env, "doctor", "--demo")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "(simulator)" in result.stdout.splitlines()[0]
    assert "nvml" not in result.stdout and "nvidia-smi" not in result.stdout
    assert "/health answers 200" in result.stdout
    assert result.stdout.rstrip().endswith("verdict: ready")


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has a driver")
def test_doctor_is_not_ready_without_a_driver_and_a_server(
    cli_env: dict[str, str],
    tmp_path: Path,
) -> None:
    profile = write_profile(
        tmp_path,
        "bare",
        f'[host]\nkind = "local"\n[service]\nbase_url = "http://127.0.0.1:{closed_port()}"\n',
    )
    result = run(cli_env, "doctor", "-p", str(profile))
    assert result.returncode == 1
    verdict = result.stdout.splitlines()[-1]
    assert verdict.startswith("verdict: not ready")
    assert "no GPU driver" in verdict and "does not answer" in verdict


def _systemd_unreachable() -> bool:
    if shutil.which("systemctl") is None:
        return False
    probe = subprocess.run(
        ["systemctl", "show", "servedeck-probe.service", "-p", "LoadState"],
        capture_output=True,
        text=True,
    )
    return probe.returncode != 0 and not probe.stdout.strip()


@pytest.mark.skipif(not _systemd_unreachable(), reason="systemd answers on this machine")
def test_doctor_says_systemd_is_unreachable_not_unit_not_found(
    cli_env: dict[str, str],
    tmp_path: Path,
) -> None:
    profile = write_profile(
        tmp_path,
        "unit",
        f'[host]\nkind = "local"\n[service]\nunit = "vllm.service"\n'
        f'base_url = "http://127.0.0.1:{closed_port()}"\n',
    )
    result = run(cli_env, "doctor", "-p", str(profile))
    unit = next(line for line in result.stdout.splitlines() if "] unit" in line)
    assert "cannot reach systemd" in unit
    assert "not found on the host" not in result.stdout


# -- item 21: a missing identity file is named ---------------------------------------------
MISSING_KEY = "~/.ssh/servedeck-test-no-such-key"


def _ssh_profile(tmp_path: Path) -> Path:
    return write_profile(
        tmp_path,
        "keyless",
        f'[host]\nkind = "ssh"\nhostname = "127.0.0.1"\nport = {closed_port()}\n'
        f'user = "op"\nidentity_file = "{MISSING_KEY}"\n'
        f'[service]\nunit = "vllm.service"\n',
    )


def test_profiles_check_and_doctor_name_the_missing_identity_file(
    cli_env: dict[str, str],
    tmp_path: Path,
) -> None:
    profile = _ssh_profile(tmp_path)
    checked = run(cli_env, "profiles", "check", str(profile))
    assert checked.returncode == 0  # the profile itself is valid
    assert f"identity file {MISSING_KEY} not found" in checked.stderr
    doctor = run(cli_env, "doctor", "-p", str(profile))
    assert doctor.returncode == 1
    text = " ".join(doctor.stdout.split())  # the detail may wrap at 80 columns
    assert f"identity file {MISSING_KEY} not found" in text
    assert "No such file or directory" not in doctor.stdout


async def test_the_console_host_names_the_missing_identity_file() -> None:
    """SSHHost is what the console connects with: its error is what the panes show."""
    config = HostConfig(
        kind="ssh", hostname="127.0.0.1", port=closed_port(), user="op", identity_file=MISSING_KEY
    )
    host = SSHHost(config)
    try:
        with pytest.raises(HostError, match=f"identity file {MISSING_KEY} not found"):
            await host.run(["true"], timeout_s=10)
    finally:
        await host.close()


# -- item 3: the handoff document dates a stop by the stop ---------------------------------
async def test_summary_says_inactive_since_the_stop_not_the_start(
    sim_box_factory: Callable[..., SimBox],
) -> None:
    box = sim_box_factory()
    box.start()
    assert box.wait_until_active(timeout_s=90) == "active"
    started = box.unit.main_start_s
    assert started is not None
    while time.time() < started + 1.5:  # the stop must fall in a later second than the start
        await asyncio.sleep(0.1)
    before_stop = time.time()
    box.stop()
    assert box.unit.wait_for_state(("inactive", "failed"), timeout_s=30) == "inactive"
    deck = demo_deck(box)
    try:
        inputs = await collect_summary(deck)
    finally:
        await deck.close()
    unit = inputs.service.unit  # type: ignore[union-attr]
    assert unit.active_state == "inactive"
    assert unit.since_s is not None and unit.since_s >= int(before_stop)
    text = render_markdown(inputs)
    assert f"inactive (dead) since {clock(unit.since_s)}" in text
    assert f"since {clock(started)}" not in text
