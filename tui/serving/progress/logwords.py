"""The engine's own words for a hang, and its requests' access lines, from each read of the log."""

from __future__ import annotations

import re
from collections.abc import Sequence

# vLLM's and NCCL's lines that say the engine cannot make progress.
STALL_WORDS = re.compile(
    r"collective operation timeout|Watchdog caught collective operation timeout"
    r"|RPC call to execute_model timed out|EngineCore encountered a fatal error"
    r"|No available shared memory broadcast block found in \d+ seconds"
    r"|EngineDeadError|NCCL (?:error|timeout)",
    re.IGNORECASE,
)
MAX_LINE_CHARS = 240
# uvicorn's access line for a generation request answered 200. A stream's is written when its
# headers go out, before its first token; a whole answer's when it is complete. So one written
# while a rank is stopped is a request in flight that the stopped engine cannot answer.
REQUEST_LINE = re.compile(
    r'"POST /v1/(?:chat/completions|completions|responses)(?:\?\S*)? HTTP/[\d.]+" 200\b'
)


def stall_lines(texts: Sequence[str]) -> list[str]:
    """The lines of one read that name a hang (one search of the read when none does)."""
    if not texts or STALL_WORDS.search("\n".join(texts)) is None:
        return []
    return [text[:MAX_LINE_CHARS] for text in texts if STALL_WORDS.search(text)]


def request_lines(texts: Sequence[str]) -> int:
    """How many generation requests this read of the log shows answered 200."""
    return sum(1 for text in texts if REQUEST_LINE.search(text))
