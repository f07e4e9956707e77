"""A guard for the console's message handlers (no Textual needed, but it serves the UI)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


def while_open(handler: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    """Drop a worker's late message once the app is closing: its widgets may be gone."""

    @functools.wraps(handler)
    def guarded(self: Any, message: Any) -> None:
        if self._exit:
            return
        handler(self, message)

    return guarded
