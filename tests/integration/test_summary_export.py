"""Writing summaries: atomic, never over an existing file without --force; the CLI end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tui.summary import SummaryExistsError, default_summary_name, export_summary
from tui.summary.export import write_atomically

REPO = Path(__file__).resolve().parents[2]


def test_refuses_an_existing_file_and_replaces_it_with_force(tmp_path: Path) -> None:
    target = tmp_path / "s.md"
    write_atomically(target, "first\n")
    with pytest.raises(SummaryExistsError, match="use --force"):
        write_atomically(target, "second\n")
    assert target.read_text() == "first\n"
    write_atomically(target, "third\n", force=True)
    assert target.read_text() == "third\n"
    assert [p.name for p in tmp_path.iterdir()] == ["s.md"]  # no temp file left behind


def test_default_name_is_timestamped_and_safe(tmp_path: Path) -> None:
    name = default_summary_name("kimi k2/int4", now_s=0)
    assert name.startswith("summary-kimi-k2-int4-") and name.endswith(".md")
    path = export_summary("x\n", "kimi", folder=tmp_path)
    assert path.parent == tmp_path and path.name.startswith("summary-kimi-")


def test_missing_folder_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="does not exist"):
        write_atomically(tmp_path / "nope" / "s.md", "x")


def _cli(
    *args: str, cwd: Path, python_flags: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *python_flags, "-m", "tui", "summary", "--demo", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def test_cli_writes_a_timestamped_file_then_refuses_to_overwrite(tmp_path: Path) -> None:
    result = _cli(cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    written = list(tmp_path.glob("summary-demo-*.md"))
    assert len(written) == 1 and f"wrote {written[0]}" in result.stdout
    text = written[0].read_text()
    assert text.startswith("# State summary: demo on simulator") and "## At a glance" in text
    again = _cli("-o", str(written[0]), cwd=tmp_path, python_flags=("-X", "importtime"))
    assert again.returncode == 2 and "already exists (use --force" in again.stderr
    assert "Traceback" not in again.stderr
    # Refused before any collection: the simulator was not even imported (importtime lists
    # every module the process loaded) to find out that the file exists.
    assert "tui.sim.box" not in again.stderr
    forced = _cli("-o", str(written[0]), "--force", "--json", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert written[0].read_text().lstrip().startswith("{")
