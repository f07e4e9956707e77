"""The restart-loop detector: systemd restarting a unit that fails the same way each time.

Leftovers of a crashed run make every restart fail: the new engine OOMs, fails its
KV-cache check, or finds its port taken. NRestarts rising while the log shows one
of those causes becomes one incident (in the audit log, so the state summary lists
it) and one alert, not one per restart.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tui.core.audit import append_audit

# (cause, pattern) in the order they are checked; the texts are vLLM's and torch's own
# (the free-memory check is vLLM's gpu_worker startup check, which leftovers fail).
CAUSES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("address already in use", re.compile(r"address already in use", re.IGNORECASE)),
    (
        "KV-cache check",
        re.compile(
            r"No available memory for the cache blocks|"
            r"larger than the maximum number of tokens that can be stored in KV cache|"
            r"KV cache is needed, which is larger than the available KV cache memory|"
            r"insufficient .*KV cache",
            re.IGNORECASE,
        ),
    ),
    (
        "free-memory check",
        re.compile(r"Free memory on device .* is less than desired GPU memory utilization"),
    ),
    (
        "out of memory",
        re.compile(r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory", re.I),
    ),
)
DEFAULT_WINDOW_S = 900.0
DEFAULT_MIN_RESTARTS = 2
# The recent log a loop's cause is looked for in. A failing start prints its cause among its
# last lines, so a loop's evidence is always recent; an older cause would not explain it.
EVIDENCE_LINES = 20_000
AUDIT_EVENT = "service.restart-loop"


# Words every match of CAUSES contains (lowercased; the free-memory check's "Free memory
# on device" too). For ASCII text, lowercasing is exact case-insensitive matching, so a
# line with none of them cannot match and skips the four searches; other text takes them.
_NEEDLES: tuple[str, ...] = (
    "address already in use",
    "cache blocks",
    "stored in kv cache",
    "kv cache is needed",
    "insufficient ",
    "free memory on device",
    "out of memory",
    "outofmemoryerror",
)


def cause_of(text: str) -> str | None:
    if text.isascii():
        lower = text.lower()
        for needle in _NEEDLES:
            if needle in lower:
                break
        else:
            return None
    for cause, pattern in CAUSES:
        if pattern.search(text):
            return cause
    return None


def _newest_cause(texts: list[str]) -> tuple[str, str] | None:
    """(cause, line) of the last text with a known cause; a chunk without any needle (the
    usual case) is ruled out with one search per needle instead of one per line."""
    joined = "\n".join(texts)
    if joined.isascii():
        lower = joined.lower()
        if not any(needle in lower for needle in _NEEDLES):
            return None
    for text in reversed(texts):
        cause = cause_of(text)
        if cause:
            return cause, text.strip()
    return None


@dataclass(frozen=True, slots=True)
class RestartLoop:
    """One detected loop: how many restarts in how long, and the log line that says why."""

    unit: str
    cause: str
    restarts: int
    window_s: float
    evidence: str

    def message(self) -> str:
        return (
            f"{self.unit} is in a restart loop: {self.restarts} restarts in "
            f"{self.window_s / 60:.0f} min, each failing on {self.cause} "
            f"({self.evidence[:120]}); leftovers of an earlier run are the usual reason: "
            "check Processes (3) and end them (K)"
        )


class RestartLoopDetector:
    """Feed it NRestarts readings and log lines; `check` reports each loop once."""

    def __init__(
        self,
        unit: str,
        window_s: float = DEFAULT_WINDOW_S,
        min_restarts: int = DEFAULT_MIN_RESTARTS,
    ) -> None:
        self.unit = unit
        self.window_s = window_s
        self.min_restarts = min_restarts
        self._readings: list[tuple[float, int]] = []
        self._evidence: tuple[str, str] | None = None
        # Batches fed but not yet searched, oldest first: they are searched only when the
        # restarts rise (a flood without restarts costs a list append per batch, not a
        # search of every line for every cause), and only the last EVIDENCE_LINES kept.
        self._unread: deque[list[str]] = deque()
        self._unread_lines = 0
        self._reported_at: int | None = None

    def observe(self, n_restarts: int, now_s: float) -> None:
        self._readings.append((now_s, n_restarts))
        self._readings = [(t, n) for t, n in self._readings if now_s - t <= self.window_s]

    def feed(self, lines: Iterable[str]) -> None:
        texts = list(lines)
        if not texts:
            return
        self._unread.append(texts)
        self._unread_lines += len(texts)
        while self._unread_lines - len(self._unread[0]) >= EVIDENCE_LINES:
            self._unread_lines -= len(self._unread.popleft())

    def evidence(self) -> tuple[str, str] | None:
        """(cause, line) of the newest line with a known cause among the recent lines fed
        (or found before), searched newest first."""
        while self._unread:
            found = _newest_cause(self._unread.pop())
            if found is not None:
                self._evidence = found
                break
        self._unread.clear()
        self._unread_lines = 0
        return self._evidence

    def check(self) -> RestartLoop | None:
        """A loop seen for the first time since the last report, or None."""
        if len(self._readings) < 2:
            return None
        (first_s, first_n), (last_s, last_n) = self._readings[0], self._readings[-1]
        rose = last_n - first_n
        if rose < self.min_restarts or self._reported_at == last_n:
            return None
        if self._reported_at is not None and last_n - self._reported_at < self.min_restarts:
            return None
        found = self.evidence()
        if found is None:
            return None
        self._reported_at = last_n
        cause, evidence = found
        return RestartLoop(self.unit, cause, rose, max(last_s - first_s, 1.0), evidence)


def record(loop: RestartLoop, host_label: str, audit_path: Path | None = None) -> None:
    """The incident: one audit record, which the state summary lists."""
    append_audit(
        AUDIT_EVENT,
        host_label,
        {
            "unit": loop.unit,
            "action": "restart-loop",
            "cause": loop.cause,
            "restarts": loop.restarts,
            "window_s": round(loop.window_s, 1),
            "evidence": loop.evidence[:300],
        },
        audit_path,
    )
