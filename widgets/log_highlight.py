"""The log's highlighter: each level's words coloured, the search term marked.

One job apart from the pane (widgets/log_pane.py) and its view (widgets/textual_log_copy.py,
which draws a plain row straight from these spans).
"""

from __future__ import annotations

import re

from rich.highlighter import Highlighter
from rich.text import Text

_LEVEL_STYLES = (
    # `\b` before `\w+`: one try per word, so a 1 MB word is read once, not once per char
    (re.compile(r"\b(ERROR|CRITICAL|Traceback)\b|\b\w+Error\b"), "bold red"),
    (re.compile(r"\bWARN(?:ING)?\b|\b\w+Warning\b"), "yellow"),
    (re.compile(r"\bDEBUG\b"), "dim"),
)


# A match of each level pattern holds one of these words: a line without them is not
# searched with the pattern (its \w+ tries every word of a line; ~25 us a line for the three)
_LEVEL_WORDS = (("ERROR", "CRITICAL", "Traceback", "Error"), ("WARN", "Warning"), ("DEBUG",))
_SEARCH_STYLE = "black on yellow"
_Span = tuple[int, int, str]


class LogHighlighter(Highlighter):
    """Colours levels and marks the current search term."""

    def __init__(self) -> None:
        self.search: re.Pattern[str] | None = None

    def spans(self, plain: str) -> list[_Span]:
        """(start, end, style) of each level word and search match, in the order they are
        applied; an empty match is left out (Text.stylize ignores it)."""
        out: list[_Span] = []
        for (pattern, style), words in zip(_LEVEL_STYLES, _LEVEL_WORDS, strict=True):
            if any(word in plain for word in words):
                out.extend((m.start(), m.end(), style) for m in pattern.finditer(plain))
        if self.search is not None:
            out.extend((m.start(), m.end(), _SEARCH_STYLE) for m in self.search.finditer(plain))
        return [span for span in out if span[1] > span[0]]

    def highlight(self, text: Text) -> None:
        for start, end, style in self.spans(text.plain):
            text.stylize(style, start, end)
