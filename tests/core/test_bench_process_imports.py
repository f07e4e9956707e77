"""The benchmark processes are run apart, never imported by the house.

`python -m tui.bench.runner` and `python -m tui.bench.capacity.runner` measure latency in
a process of their own (the console's rendering never inflates it). What a caller shares
with one (its spec, its result) lives in a module of its own (`tui/bench/capacity/spec.py`):
an import of the process module instead loads the whole search where it does not run.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROCESSES = ("tui.bench.runner", "tui.bench.capacity.runner")


def _imports(path: Path) -> set[str]:
    """Modules a file imports (`from a.b import c` counts as a.b and a.b.c)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_module_imports_a_benchmark_process() -> None:
    """Failed before: tui/tune/driver.py took CapacitySpec through capacity/runner.py."""
    found = []
    for folder in ("tui", "widgets"):
        for path in sorted((REPO / folder).rglob("*.py")):
            name = ".".join(path.relative_to(REPO).with_suffix("").parts)
            found += [f"{name} imports {p}" for p in PROCESSES if p != name and p in _imports(path)]
    assert found == [], found
