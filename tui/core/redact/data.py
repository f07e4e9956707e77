"""Structured data redacted before it is serialised: JSON text is never rewritten by a regex.

A value under a secret-looking key is replaced whole; every other string is redacted as text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tui.core.redact.names import REDACTED, is_secret_name
from tui.core.redact.text import _known, redact_text


def redact_data(data: Any, extra_secrets: Iterable[str] = ()) -> Any:
    """A copy of JSON-like data with secrets replaced, ready to serialise.

    A value under a secret-looking key is replaced whole (lists and tables too);
    every other string goes through redact_text; keys themselves are redacted as text.
    """
    known = tuple(_known(extra_secrets))
    return _redact_value(data, known, 0)


def _redact_value(value: Any, known: tuple[str, ...], depth: int) -> Any:
    if depth > 200:
        return REDACTED  # deeper than any fact servedeck collects: not worth the risk
    if isinstance(value, str):
        return redact_text(value, known)
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            name = key if isinstance(key, str) else str(key)
            safe_key = redact_text(name, known) if isinstance(key, str) else key
            if is_secret_name(name) and item not in (None, "", [], {}):
                out[safe_key] = REDACTED
            else:
                out[safe_key] = _redact_value(item, known, depth + 1)
        return out
    if isinstance(value, list | tuple):
        items = [_redact_value(item, known, depth + 1) for item in value]
        return _redact_argv(items) if all(isinstance(item, str) for item in items) else items
    return value


def _redact_argv(words: list[str]) -> list[str]:
    """A list of strings read as an argv: the words after a secret dashed flag
    (`["--api-key", "K1", "K2"]`), up to the next flag, each replaced."""
    secret_flag = False
    out = []
    for word in words:
        if word.startswith("-"):
            name = word.lstrip("-")
            secret_flag = bool(name) and "=" not in name and is_secret_name(name)
        elif secret_flag:
            word = REDACTED
        out.append(word)
    return out
