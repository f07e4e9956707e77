"""The console is composed of parts, not mixed: each part is an object mypy checks.

A mixin writing attributes on the app needs a hand-kept stub or `self: Any` for mypy,
which then checks nothing of it; these fail when either comes back.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from tui.app import ServedeckApp

REPO = Path(__file__).resolve().parents[2]
PART_LINES_MAX = 400


def _self_typed_any(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.args.args:
            first = node.args.args[0]
            if first.arg == "self" and ast.unparse(first.annotation or ast.Constant(None)) == "Any":
                found.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}")
    return found


def test_no_method_is_typed_self_any() -> None:
    files = [*sorted((REPO / "tui").rglob("*.py")), *sorted((REPO / "widgets").rglob("*.py"))]
    assert [hit for path in files for hit in _self_typed_any(path)] == []


def _writes_attributes(cls: type) -> list[str]:
    """Assignments to `self.<name>` anywhere in the class's source."""
    tree = ast.parse(Path(inspect.getfile(cls)).read_text())
    body = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls.__name__)
    return [
        ast.unparse(target)
        for node in ast.walk(body)
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Attribute)
    ]


def test_the_app_mixes_in_only_its_stateless_key_actions() -> None:
    """Textual finds `action_*` on the App only: the keys' one-line delegations may be a
    base class, as long as it keeps no state (no `__init__`, no attribute written)."""
    ours = [cls for cls in ServedeckApp.__mro__ if cls.__module__.startswith("tui.")]
    assert [cls.__name__ for cls in ours] == ["ServedeckApp", "ConsoleActions"]
    actions = ours[1]
    assert "__init__" not in vars(actions) and _writes_attributes(actions) == []
    assert all(
        name.startswith("action_") for name in vars(actions) if callable(vars(actions)[name])
    )


def test_each_part_is_small() -> None:
    parts = sorted((REPO / "tui" / "app").glob("console_*.py"))
    assert len(parts) >= 9
    long = {p.name: n for p in parts if (n := len(p.read_text().splitlines())) > PART_LINES_MAX}
    assert long == {}
