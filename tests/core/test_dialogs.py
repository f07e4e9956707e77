"""Every dialog shares one frame: ModalScreen is subclassed once, by the Dialog base."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_every_dialog_is_a_dialog() -> None:
    direct = []
    for path in sorted([*(REPO / "tui").rglob("*.py"), *(REPO / "widgets").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            for base in node.bases:
                name = ast.unparse(base)
                if name.startswith(("ModalScreen", "textual.screen.ModalScreen")):
                    direct.append(f"{path.relative_to(REPO)}:{node.name}")
    assert direct == ["tui/screens/dialog.py:Dialog"]
