"""The engine's own words for a hang, searched once per read of the log."""

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


def stall_lines(texts: Sequence[str]) -> list[str]:
    """The lines of one read that name a hang (one search of the read when none does)."""
    if not texts or STALL_WORDS.search("\n".join(texts)) is None:
        return []
    return [text[:MAX_LINE_CHARS] for text in texts if STALL_WORDS.search(text)]
