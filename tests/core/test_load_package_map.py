"""The load package's map stays true: its `__init__` lists every module, the map names it."""

from __future__ import annotations

from pathlib import Path

import tui.serving.load as load

REPO = Path(__file__).resolve().parents[2]
PACKAGE = Path(load.__file__).parent


def test_every_load_module_is_listed_in_the_package_docstring() -> None:
    doc = load.__doc__ or ""
    modules = sorted(path.name for path in PACKAGE.glob("*.py") if path.name != "__init__.py")
    assert modules, PACKAGE
    assert [name for name in modules if f"- `{name}`" not in doc] == []
    listed = [line.split("`")[1] for line in doc.splitlines() if line.startswith("- `")]
    assert [name for name in listed if not (PACKAGE / name).exists()] == []


def test_the_architecture_map_names_the_load_package() -> None:
    assert "| `tui/serving/load/` |" in (REPO / "docs" / "ARCHITECTURE.md").read_text()
