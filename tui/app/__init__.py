"""The console app: ServedeckApp, its parts (console_*.py), its messages and terminal driver.

Textual lives here, in tui/screens/ and in widgets/ only (pyproject.toml's import-linter
contracts); everything the app shows comes from the UI-free core under tui/.

`tui.app.ServedeckApp` is imported on first use: the screens import the app's helpers
(tui.app.console_workers), and the app imports the screens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tui.app.console import ServedeckApp

__all__ = ["ServedeckApp"]


def __getattr__(name: str) -> Any:
    if name == "ServedeckApp":
        from tui.app.console import ServedeckApp

        return ServedeckApp
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
