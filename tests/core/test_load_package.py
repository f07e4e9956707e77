"""The load package's place: its `__init__` lists every module, the map names it, and it
stands below the Deck (a Host or plain data in, never a Deck or the simulator)."""

from __future__ import annotations

import ast
from pathlib import Path

import tui.serving.load as load
from tui.serving.load.eta import ready_clock_for

REPO = Path(__file__).resolve().parents[2]
PACKAGE = Path(load.__file__).parent


def test_every_load_module_is_listed_in_the_package_docstring() -> None:
    doc = load.__doc__ or ""
    modules = sorted(path.name for path in PACKAGE.glob("*.py") if path.name != "__init__.py")
    assert modules, PACKAGE
    names = [line.partition(": ")[0] for line in doc.splitlines()]
    listed = [name for name in names if name.endswith(".py")]
    assert [name for name in modules if name not in listed] == []
    assert [name for name in listed if not (PACKAGE / name).exists()] == []


def test_the_architecture_map_names_the_load_package() -> None:
    assert "| `tui/serving/load/` |" in (REPO / "docs" / "ARCHITECTURE.md").read_text()


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):  # inside functions too
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_the_load_package_imports_neither_the_deck_nor_the_simulator() -> None:
    above = {
        f"{path.name}: {name}"
        for path in PACKAGE.glob("*.py")
        for name in _imported(path)
        if name in ("tui.deck", "tui.ops") or name.startswith(("tui.sim", "tui.ops."))
    }
    assert above == set()


def test_the_ready_clock_plans_with_the_phase_shares_its_caller_states(tmp_path: Path) -> None:
    shares = {"starting": 0.1, "weights": 0.5, "api": 0.4}
    clock = ready_clock_for("box", 100.0, shares)
    assert clock.default_basis == "simulator's phase times"
    assert clock.defaults == {"starting": 10.0, "weights": 50.0, "serving": 40.0}
    assert ready_clock_for("box", 100.0, None).default_basis == "defaults"
    assert ready_clock_for("box").default_basis == "defaults"
