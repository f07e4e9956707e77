"""The log view's copy of Textual's `Log` names the Textual it follows: the pinned one."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import widgets.textual_log_copy as copy

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_the_copy_follows_the_pinned_and_installed_textual() -> None:
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    pins = [dep.split("==")[1] for dep in dependencies if dep.startswith("textual==")]
    named = re.findall(r"Textual (\d+\.\d+\.\d+)", copy.__doc__ or "")
    assert pins and named == pins == [version("textual")]
