"""The command line: version, help, module entry point, one-line errors."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tui import __version__
from tui.cli import COMMAND_MODULES, WITH_READ_ONLY, WITHOUT_DEMO, build_parser, main

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


def test_every_subcommand_offers_the_common_options_that_mean_something_for_it() -> None:
    """--profile everywhere; --demo not on the simulator's own commands; --read-only only
    on the commands that can change the host or load its server (not `plan`, `gpus`)."""
    leaves = [leaf for leaf in _leaf_parsers(build_parser()) if not leaf[0].startswith("profiles")]
    assert len(leaves) >= 7
    for name, subparser in leaves:
        if name == "fleet":  # its own --demo N and --read-only
            continue
        options = {option for action in subparser._actions for option in action.option_strings}
        command = name.split()[0]
        assert "--profile" in options, name
        assert ("--demo" in options) == (command not in WITHOUT_DEMO), name
        assert ("--read-only" in options) == (command in WITH_READ_ONLY), name
    for name, subparser in leaves:  # and every option says what it does
        for action in subparser._actions:
            if action.option_strings and action.help != argparse.SUPPRESS:
                assert action.help, f"{name} {action.option_strings[0]}: no help text"


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


def test_fleet_with_an_unknown_profile_is_one_line_exit_2() -> None:
    """`fleet -p NAME` (a repeatable option, so a list) once crashed the demo check."""
    result = run("fleet", "-p", "does-not-exist", "--json")
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, result.stderr
    assert "profile 'does-not-exist' not found" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


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


def _help_of(words: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as ended:
        main([*words, "--help"])
    assert ended.value.code == 0
    return capsys.readouterr().out


def test_every_command_help_says_what_the_command_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`servedeck tune --help` printed only usage and options; every command (and every
    nested one, `profiles list`) says in a paragraph what it does, above its options."""
    leaves = [name for name, _ in _leaf_parsers(build_parser())]
    commands = sorted({*COMMAND_MODULES, *leaves})
    assert "tune" in commands and "profiles list" in commands
    for command in commands:
        text = _help_of(command.split(), capsys)
        head = text.split("options:")[0]
        paragraphs = [p for p in head.split("\n\n") if p.strip()]
        described = [p for p in paragraphs if not p.startswith("usage:")]
        assert described, f"servedeck {command} --help: no description\n{text}"
        assert len(" ".join(described).split()) >= 4, f"{command}: {described}"
