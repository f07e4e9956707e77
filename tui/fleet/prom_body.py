"""A Prometheus answer's body, read with a cap on its decoded size.

The cap counts the bytes after gzip is undone, a chunk at a time with zlib's own output
limit, so neither an endless body nor a small gzip bomb grows memory past the cap: the
read stops with one line instead of a MemoryError.
"""

from __future__ import annotations

import zlib

from tui.core.errors import HostError
from tui.core.formatting import printable

MIB = 1024**2
MAX_ANSWER_BYTES = 32 * MIB


class PrometheusError(HostError):
    """The Prometheus server could not be asked, refused the query or answered nonsense."""

    exit_code = 3


class BoundedBody:
    """`feed(raw chunk)` then `finish()` -> the decoded body; past `limit_bytes` it raises."""

    def __init__(self, where: str, encoding: str, limit_bytes: int = MAX_ANSWER_BYTES) -> None:
        self.where = where
        self.limit_bytes = limit_bytes
        self._body = bytearray()
        coding = encoding.strip().lower()
        if coding in ("", "identity"):
            self._inflate = None
        elif coding in ("gzip", "x-gzip", "deflate"):
            self._inflate = zlib.decompressobj(wbits=47)  # a gzip or a zlib header
        else:
            raise PrometheusError(where, f"answer in an unread encoding {printable(coding)[:40]!r}")

    def over(self) -> PrometheusError:
        return PrometheusError(self.where, f"Prometheus answer over {self.limit_bytes // MIB} MiB")

    def declared(self, content_length: str) -> None:
        """A plain body whose Content-Length is over the cap is refused before it is read."""
        plain = self._inflate is None and content_length.isdigit()
        if plain and int(content_length) > self.limit_bytes:
            raise self.over()

    def _take(self, data: bytes) -> None:
        if len(self._body) + len(data) > self.limit_bytes:
            raise self.over()
        self._body += data

    def feed(self, chunk: bytes) -> None:
        if self._inflate is None:
            self._take(chunk)
            return
        pending = chunk
        try:
            while pending and not self._inflate.eof:
                room = self.limit_bytes - len(self._body) + 1  # one byte past: over the cap
                self._take(self._inflate.decompress(pending, room))
                pending = self._inflate.unconsumed_tail
        except zlib.error as error:
            raise PrometheusError(self.where, f"answer's gzip is corrupt: {error}") from error

    def finish(self) -> bytearray:
        """The whole decoded body (a truncated gzip stream is an error, not half an answer)."""
        if self._inflate is not None and not self._inflate.eof:
            raise PrometheusError(self.where, "answer's gzip stream ends early")
        return self._body
