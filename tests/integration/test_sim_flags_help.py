"""The simulator's flags (`servedeck sim`, `servedeck demo`): each says what it does, and
what it says is what happens: a stated default is the default, a stated fault is the fault."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.integration.test_cli import _leaf_parsers
from tui.cli import build_parser
from tui.compose import CONSOLE_DEMO_LOAD_S
from tui.sim import spec
from tui.sim.box import free_port

REPO = Path(__file__).resolve().parents[2]
_STATED_DEFAULT = re.compile(r"\((?:default:? )?(-?\d+(?:\.\d+)?)[;,)]")


def _parsers() -> dict[str, argparse.ArgumentParser]:
    return dict(_leaf_parsers(build_parser()))


def test_every_default_a_help_text_states_is_the_default() -> None:
    """Over every option of every command: "(default 45)", "(200)" is the parser's default."""
    stated = 0
    for name, parser in _parsers().items():
        for action in parser._actions:
            if not action.help or action.help == argparse.SUPPRESS:
                continue
            found = _STATED_DEFAULT.search(action.help)
            if found is None:
                continue
            stated += 1
            assert isinstance(action.default, int | float), (name, action.option_strings)
            assert float(found.group(1)) == float(action.default), (
                f"{name} {action.option_strings[0]}: help says {found.group(1)}, "
                f"the default is {action.default}"
            )
    assert stated >= 10


def test_sim_and_demo_flags_each_have_help() -> None:
    parsers = _parsers()
    for name in ("sim", "demo"):
        options = [a for a in parsers[name]._actions if a.option_strings]
        assert len(options) >= 4, name
        for action in options:
            assert action.help and len(action.help.split()) >= 3, (name, action.option_strings)


def test_demo_help_describes_the_box_the_demo_opens() -> None:
    demo = _parsers()["demo"]
    description = demo.description or ""
    assert f"{spec.GPU_COUNT}x RTX PRO 6000" in description and "RTX PRO 6000" in spec.GPU_NAME
    assert spec.MODEL_NAME.split("/")[-1] in description
    load = next(a for a in demo._actions if "--load-seconds" in a.option_strings)
    assert load.default == CONSOLE_DEMO_LOAD_S


def test_sim_port_state_dir_and_fail_at_shard_do_what_their_help_says() -> None:
    """`--port P` serves on P; no `--state-dir`: a new temporary folder, gone after the
    stop; `--fail-at-shard 3`: the load fails at shard 3 with the error the help names."""
    parsers = _parsers()
    help_of = {
        option: action.help or ""
        for action in parsers["sim"]._actions
        for option in action.option_strings
    }
    assert "a new temporary folder" in help_of["--state-dir"]
    port = free_port()
    argv = ["sim", "--port", str(port), "--load-seconds", "3", "--fail-at-shard", "3"]
    result = subprocess.run(
        [sys.executable, "-m", "tui", *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    out = result.stdout
    assert result.returncode == 1, out[-2000:] + result.stderr[-2000:]
    assert f"base URL  http://127.0.0.1:{port}" in out
    state_dir = re.search(r"state dir (\S+)", out)
    assert state_dir is not None and "servedeck-sim-" in state_dir.group(1)
    assert not Path(state_dir.group(1)).exists()  # the temporary folder went with the stop
    bars = re.findall(r"shards:\s+\d+% Completed \| (\d+)/(\d+)", out)
    assert bars and int(bars[-1][0]) == 2, bars  # shard 3 never completes
    error = next(line for line in out.splitlines() if "Error:" in line and "ERROR" in line)
    fault = help_of["--fail-at-shard"]
    named = re.search(r"\(([^)]*)\)", fault)
    assert named is not None, fault
    assert all(word in error.lower() for word in named.group(1).lower().split()), (fault, error)
