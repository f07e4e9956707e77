"""DESIGN.md section 3: only tui/app.py, tui/screens/ and widgets/ may import textual."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
UI_ALLOWED = ("tui/app.py", "tui/screens/", "widgets/")


def _imports_textual(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(), filename=str(path))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        if any(name == "textual" or name.startswith("textual.") for name in names):
            lines.append(node.lineno)
    return lines


def core_modules() -> list[Path]:
    return sorted(
        path
        for path in (REPO / "tui").rglob("*.py")
        if not path.relative_to(REPO).as_posix().startswith(UI_ALLOWED)
    )


def test_no_textual_import_outside_the_ui_layer() -> None:
    offenders = {
        path.relative_to(REPO).as_posix(): lines
        for path in core_modules()
        if (lines := _imports_textual(path))
    }
    assert offenders == {}, f"textual imported in the UI-free core: {offenders}"


def test_the_scanner_catches_an_offender(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nfrom textual.widgets import Static\n")
    assert _imports_textual(bad) == [2]


def test_importing_every_core_module_loads_no_textual() -> None:
    """Import the core in a fresh interpreter: transitive imports count too."""
    modules = [
        ".".join(path.relative_to(REPO).with_suffix("").parts)
        for path in core_modules()
        if path.name != "__main__.py"
    ]
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "leaked = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(','.join(leaked))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
