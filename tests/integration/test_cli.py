"""The command line: version, help, module entry point, one-line errors."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from tui import __version__
from tui.cli import build_parser

REPO = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def test_version_through_python_dash_m() -> None:
    result = run("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"servedeck {__version__}"


def _leaf_parsers(
    parser: argparse.ArgumentParser, name: str = ""
) -> list[tuple[str, argparse.ArgumentParser]]:
    nested = [
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    ]
    if not nested:
        return [(name, parser)]
    return [
        leaf
        for action in nested
        for child_name, child in action.choices.items()
        for leaf in _leaf_parsers(child, f"{name} {child_name}".strip())
    ]


def test_every_subcommand_accepts_the_common_options() -> None:
    leaves = [leaf for leaf in _leaf_parsers(build_parser()) if not leaf[0].startswith("profiles")]
    assert len(leaves) >= 7
    for name, subparser in leaves:
        options = {option for action in subparser._actions for option in action.option_strings}
        assert {"--profile", "--demo", "--read-only"} <= options, name


def test_common_options_before_the_subcommand_survive() -> None:
    args = build_parser().parse_args(["--read-only", "-p", "box", "gpus"])
    assert (args.read_only, args.profile) == (True, "box")
    args = build_parser().parse_args(["gpus", "--demo"])
    assert args.demo and args.profile is None


def test_unknown_profile_is_one_line_exit_2() -> None:
    result = run("doctor", "--profile", "does-not-exist")
    assert result.returncode == 2
    assert result.stderr.startswith("servedeck: error: profile 'does-not-exist' not found")
    assert "Traceback" not in result.stderr


def test_doctor_on_this_machine_gives_one_verdict_per_check() -> None:
    result = run("doctor")
    assert "Traceback" not in result.stderr
    lines = result.stdout.splitlines()
    checks = [line for line in lines if line.startswith("[")]
    names = {line[7:].split()[0] for line in checks}
    assert {"host", "nvml", "nvidia-smi", "systemctl", "journalctl", "unit", "service"} <= names
    assert lines[-1].startswith("verdict: ")
    # No NVIDIA driver here: that is a warning, not a failure of the host.
    assert any(line.startswith("[OK  ] host") for line in checks)
