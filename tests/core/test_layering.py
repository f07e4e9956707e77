"""docs/ARCHITECTURE.md's layers: only the app, tui/screens/ and widgets/ may import textual.

The direct imports are import-linter contracts in pyproject.toml (`lint-imports`, run in
CI). Two things a static contract cannot say are checked here: that the contract's list of
UI-free modules names every module of the core (a new module is not silently exempt), and
that importing the core really loads no textual (lazy imports included, at run time).
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
UI_PACKAGES = ("tui.app", "tui.screens")


def _contract(contract_id: str) -> dict:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    return next(c for c in contracts if c["id"] == contract_id)


def _top_level_core() -> set[str]:
    names = set()
    for path in (REPO / "tui").iterdir():
        if path.name.startswith("__") or path.name.startswith("."):
            continue
        if path.is_dir() and (path / "__init__.py").exists():
            names.add(f"tui.{path.name}")
        elif path.suffix == ".py":
            names.add(f"tui.{path.stem}")
    return names - set(UI_PACKAGES)


def core_modules() -> list[str]:
    modules = []
    for path in sorted((REPO / "tui").rglob("*.py")):
        name = ".".join(path.relative_to(REPO).with_suffix("").parts)
        if name.startswith(UI_PACKAGES) or path.name == "__main__.py":
            continue
        modules.append(name.removesuffix(".__init__"))
    return modules


def test_the_core_contract_names_every_core_module() -> None:
    listed = set(_contract("core-below-ui")["source_modules"])
    missing = sorted(_top_level_core() - listed)
    assert missing == [], f"add {missing} to the core-below-ui contract in pyproject.toml"
    assert sorted(listed - _top_level_core()) == [], "the contract names a module that is gone"


def test_importing_every_core_module_loads_no_textual() -> None:
    """Import the core in a fresh interpreter: transitive imports count too."""
    script = (
        "import importlib, sys\n"
        f"for name in {core_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        "leaked = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(','.join(leaked))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
