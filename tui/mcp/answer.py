"""How every MCP tool answers: a typed result, redacted, or one line saying what failed.

A tool's work may fail anywhere (the host is unreachable, the server is dead, a file is
damaged): the agent gets an error result of one line naming what failed, and the server
goes on answering the next call. Results pass through the same redaction as every other
output of servedeck, with the profile's API key as a known secret.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError

from tui.core.errors import ServedeckError
from tui.core.redact import redact_data, redact_text
from tui.deck import Deck

T = TypeVar("T")

_PYDANTIC_TAIL = " For further information visit"


def one_line(text: str, secrets: tuple[str, ...] = ()) -> str:
    """A message on one line, redacted (a validation error spans several; a path may not)."""
    flat = " ".join(redact_text(text, secrets).split())
    return flat.split(_PYDANTIC_TAIL, 1)[0]


class Answerer:
    """Runs a tool's work for the deck: its result redacted, its failure one line."""

    def __init__(self, deck: Deck) -> None:
        self.secrets: tuple[str, ...] = (deck.api_key,) if deck.api_key else ()

    async def __call__(self, tool: str, work: Awaitable[T]) -> T:
        try:
            result = await work
        except ServedeckError as error:
            raise ToolError(one_line(str(error), self.secrets)) from None
        except ToolError:
            raise
        except Exception as error:  # a bug must not end the server: one line, here and there
            line = one_line(f"{type(error).__name__}: {error}", self.secrets)
            print(f"servedeck mcp: {tool}: {line}", file=sys.stderr, flush=True)
            raise ToolError(line) from None
        redacted: T = redact_data(result, self.secrets)
        return redacted


class OneLineServer(FastMCP[Any]):
    """FastMCP whose tool errors are one line (its own argument checks included), and which
    answers a tool it does not offer (an action without --allow-actions) with the reason."""

    def __init__(
        self,
        *args: Any,
        refused: dict[str, str] | None = None,
        on_refused: Callable[[str, str], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.refused = refused or {}  # tool name -> why it is not offered
        self.on_refused = on_refused

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        if name in self.refused:
            if self.on_refused is not None:
                self.on_refused(name, self.refused[name])
            raise ToolError(f"{name} refused: {self.refused[name]}")
        try:
            return await super().call_tool(name, arguments)
        except ToolError as error:
            raise ToolError(one_line(str(error))) from None
