"""The fast tier's lists name tests that exist (a renamed module would silently drop out)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.tiers import FAST_MODULES, SLOW

TESTS = Path(__file__).resolve().parent


def test_every_fast_module_exists() -> None:
    missing = sorted(name for name in FAST_MODULES if not (TESTS / f"{name}.py").exists())
    assert missing == []


def test_every_slow_test_exists() -> None:
    for test_id in SLOW:
        file_name, function = test_id.split("::")
        tree = ast.parse((TESTS / file_name).read_text())
        names = {
            node.name
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        assert function in names, test_id
