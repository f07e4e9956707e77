"""A guard for the console's message handlers (no Textual needed, but it serves the UI)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

AppT = TypeVar("AppT")
MessageT = TypeVar("MessageT")


def console_closing(app: Any) -> bool:
    """True once the app exits or shuts down: its widgets may already be gone."""
    return bool(app._exit) or not app.is_running


def while_open(handler: Callable[[AppT, MessageT], None]) -> Callable[[AppT, MessageT], None]:
    """Drop a worker's late message once the app is closing: its widgets may be gone."""

    @functools.wraps(handler)
    def guarded(self: AppT, message: MessageT) -> None:
        if console_closing(self):
            return
        handler(self, message)

    return guarded
