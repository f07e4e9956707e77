"""The service log redacted where it enters servedeck: every pane, export, recording and
tool result reads the lines after this, so none holds a secret the log printed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import replace

from tui.core.redact import LineRedactor
from tui.logs.line import LineBatch, LogLine


def redact_batch(batch: Sequence[LogLine], redactor: LineRedactor) -> Sequence[LogLine]:
    """The batch with each line's text redacted; the same object when no line changed (a
    flood's common batch: one search of the whole read, no line rebuilt)."""
    if isinstance(batch, LineBatch):
        texts = redactor(batch.texts)
        if all(new is old for new, old in zip(texts, batch.texts, strict=True)):
            return batch
        return LineBatch(texts, batch.levels, batch.timestamp_s, batch.source)
    lines = list(batch)
    texts = redactor([line.text for line in lines])
    return [
        line if text is line.text else replace(line, text=text)
        for line, text in zip(lines, texts, strict=True)
    ]


async def redacted_batches(
    batches: AsyncIterator[Sequence[LogLine]],
) -> AsyncIterator[Sequence[LogLine]]:
    """A log source's batches, redacted in order by one LineRedactor (a private key
    printed over several reads is redacted to its END line)."""
    redactor = LineRedactor()
    try:
        async for batch in batches:
            yield redact_batch(batch, redactor)
    finally:  # closed early (the console quits): the follower ends its process now
        close = getattr(batches, "aclose", None)
        if close is not None:
            await close()
