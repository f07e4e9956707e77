"""What `servedeck serve` writes on stderr: one line per event, safe to show in a terminal.

Request paths and aiohttp's parse errors come from anyone who reaches the port, before
the token is checked. Written raw, they could clear the operator's screen, set its title,
fill its clipboard (OSC 52), forge a line of their own (a CR or LF in a path) or put the
token a request carried into the log. So every line is redacted (the access token and
any bearer or `token=` value), its control characters escaped and its length capped,
and aiohttp's own loggers write such one line per record instead of a traceback.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence

from aiohttp.http_exceptions import HttpProcessingError

from tui.core.redact import redact_text

PREFIX = "servedeck serve: "
MAX_LINE_CHARS = 300
# aiohttp's loggers; `aiohttp.server` logs a non-HTTP first line (BadHttpMethod) at debug.
_AIOHTTP_LEVELS = {"aiohttp": logging.INFO, "aiohttp.server": logging.DEBUG}


def escape_controls(text: str) -> str:
    """Every character a terminal would act on (C0, C1, DEL, separators, bidi) as `\\xNN`."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else _escaped(char) for char in text)


def _escaped(char: str) -> str:
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def safe_line(message: str, secrets: Sequence[str] = (), limit: int = MAX_LINE_CHARS) -> str:
    """Redacted first (no cut can leave part of a secret), then escaped, then capped."""
    text = escape_controls(redact_text(message, secrets)[: limit * 4])
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ServeLog:
    """serve's stderr: `line()` writes one safe line; the token it knows never appears."""

    def __init__(self, secrets: Sequence[str] = ()) -> None:
        self.secrets = tuple(secret for secret in secrets if secret)

    def line(self, message: str) -> None:
        print(PREFIX + safe_line(message, self.secrets), file=sys.stderr, flush=True)

    def route_aiohttp(self) -> Callable[[], None]:
        """aiohttp's records become one safe line each; returns what puts them back."""
        handler = _OneLineHandler(self)
        saved = []
        for name, level in _AIOHTTP_LEVELS.items():
            logger = logging.getLogger(name)
            saved.append((logger, logger.level, logger.propagate))
            logger.setLevel(level)
        root = logging.getLogger("aiohttp")
        root.addHandler(handler)
        root.propagate = False  # nothing reaches the last-resort handler's traceback

        def restore() -> None:
            root.removeHandler(handler)
            for logger, level, propagate in saved:
                logger.setLevel(level)
                logger.propagate = propagate

        return restore


class _OneLineHandler(logging.Handler):
    """A record and its exception's first line, never the traceback or the raw request."""

    def __init__(self, log: ServeLog) -> None:
        super().__init__(logging.DEBUG)
        self._log = log

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._log.line(one_line_record(record))
        except Exception:  # a log line must never raise into aiohttp (nor print a traceback)
            pass

    def handleError(self, record: logging.LogRecord) -> None:
        """Never the traceback logging prints by default."""


def one_line_record(record: logging.LogRecord) -> str:
    """'Error handling request from 1.2.3.4: 400 LineTooLong: Got more than 8190 bytes ...'."""
    message = record.getMessage()
    error = record.exc_info[1] if record.exc_info else None
    if error is None:
        return message
    if isinstance(error, HttpProcessingError):
        reason = error.message if isinstance(error.message, str) else str(error.message)
        what = f"{error.code} {type(error).__name__}"
    else:
        reason, what = str(error), type(error).__name__
    first = next((part.strip() for part in reason.splitlines() if part.strip()), "")
    return f"{message}: {what}: {first}" if first else f"{message}: {what}"
