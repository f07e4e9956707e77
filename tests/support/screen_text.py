"""The plain text a running Textual app shows now, line by line (for layout assertions)."""

from __future__ import annotations

from textual.app import App


def screen_lines(app: App[object]) -> list[str]:
    """What the terminal shows: the current screen composited, as plain text rows."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def screen_text(app: App[object]) -> str:
    return "\n".join(screen_lines(app))
