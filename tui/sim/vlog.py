"""vLLM's log format, written to stdout and to the state dir's server.log.

Prefix: `(PROCESS pid=N) LEVEL MM-DD HH:MM:SS [file.py:line] message`, the way
vLLM 0.33 prints it; tqdm's shard bar is printed bare, as in real captures.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TextIO

SHARD_BAR_PREFIX = "Loading safetensors checkpoint shards:"


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes:02d}:{secs:02d}"


def shard_bar(done: int, total: int, elapsed_s: float) -> str:
    """tqdm's bar as vLLM prints it: `NN% Completed | k/N [mm:ss<mm:ss, x.xxs/it]`."""
    percent = 100.0 * done / total if total else 100.0
    if done == 0:
        timing = f"[{_clock(elapsed_s)}<?, ?it/s]"
    else:
        per_item = elapsed_s / done
        remaining = per_item * (total - done)
        rate = f"{per_item:.2f}s/it" if per_item >= 1.0 else f"{1.0 / max(per_item, 1e-9):.2f}it/s"
        timing = f"[{_clock(elapsed_s)}<{_clock(remaining)}, {rate}]"
    return f"{SHARD_BAR_PREFIX} {percent:3.0f}% Completed | {done}/{total} {timing}"


class VllmLog:
    """One writer for every simulated vLLM process, so lines keep their order."""

    def __init__(self, log_path: Path, stream: TextIO | None = None) -> None:
        self._file = log_path.open("a", encoding="utf-8", buffering=1)
        self._stream = stream if stream is not None else sys.stdout

    def raw(self, text: str) -> None:
        """A line with no vLLM prefix (tqdm bars, tracebacks from uvicorn)."""
        self._file.write(text + "\n")
        try:
            self._stream.write(text + "\n")
            self._stream.flush()
        except (BrokenPipeError, ValueError):
            pass  # nobody reads stdout any more; server.log still has it

    def line(
        self,
        process: str,
        pid: int,
        level: str,
        source: str,
        message: str,
        at_s: float | None = None,
    ) -> None:
        """A prefixed line stamped now, or at `at_s` (a load resumed mid-way, tui.sim.load)."""
        stamp = time.strftime("%m-%d %H:%M:%S", time.localtime(at_s))
        self.raw(f"({process} pid={pid}) {level} {stamp} [{source}] {message}")

    def close(self) -> None:
        self._file.close()
