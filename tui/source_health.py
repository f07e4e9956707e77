"""Source health: is a pane's data fresh, or stale since its source failed, and when is the retry.

Pure bookkeeping (no I/O, no Textual): the console records each poll's success or
failure here and draws `describe()` on the pane, so an outage reads as
"GPU source lost: <reason>, retrying in 4 s (last sample 37 s ago)" next to the last
good data instead of an empty pane or an exit.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace

from tui.core.formatting import duration_words

# Reasons are one line on a pane: the first line of an exception's message, clipped.
_REASON_MAX_CHARS = 160


# A countdown inside an error message ("; next attempt in 0.4 s") is stale at once:
# the note and the header show their own, live one.
_COUNTDOWN = re.compile(r";? {0,3}next attempt in [0-9.]{1,20} s")  # bounded: linear time


def one_line(reason: str) -> str:
    """The first non-empty line of a message, clipped for a one-line pane note."""
    lines = [line.strip() for line in reason.strip().splitlines() if line.strip()]
    text = _COUNTDOWN.sub("", lines[0][: 8 * _REASON_MAX_CHARS]).strip() if lines else ""
    text = text or "unknown error"
    return text if len(text) <= _REASON_MAX_CHARS else text[: _REASON_MAX_CHARS - 1] + "…"


@dataclass(frozen=True, slots=True)
class SourceHealth:
    """One source's state: fresh, or failing since a time, with the next retry's time."""

    source: str  # what the pane calls it: "GPU source", "service log", "host"
    noun: str = "sample"  # what it delivers: "last sample 37 s ago"
    last_ok_at_s: float | None = None  # wall clock of the last good delivery
    failed_since_s: float | None = None  # wall clock of the first failure of this outage
    reason: str = ""
    retry_at_s: float | None = None  # wall clock of the next attempt, when one is planned
    failures: int = 0

    @property
    def failing(self) -> bool:
        return self.failed_since_s is not None

    def succeeded(self, now_s: float | None = None) -> SourceHealth:
        """A good delivery ends any outage."""
        now_s = time.time() if now_s is None else now_s
        return replace(
            self, last_ok_at_s=now_s, failed_since_s=None, reason="", retry_at_s=None, failures=0
        )

    def failed(
        self, reason: str, retry_in_s: float | None, now_s: float | None = None
    ) -> SourceHealth:
        """A failed attempt: the outage starts now or continues; the reason is the latest."""
        now_s = time.time() if now_s is None else now_s
        return replace(
            self,
            failed_since_s=self.failed_since_s if self.failing else now_s,
            reason=one_line(reason),
            retry_at_s=None if retry_in_s is None else now_s + max(0.0, retry_in_s),
            failures=self.failures + 1,
        )

    def describe(self, now_s: float | None = None) -> str:
        """The pane's note: empty while fresh; what failed, when it retries, how old the data is."""
        if not self.failing:
            return ""
        now_s = time.time() if now_s is None else now_s
        text = f"{self.source} lost: {self.reason}"
        if self.retry_at_s is not None:
            left_s = self.retry_at_s - now_s
            text += f", retrying in {left_s:.0f} s" if left_s >= 0.5 else ", retrying now"
        if self.last_ok_at_s is not None:
            text += f" (last {self.noun} {duration_words(now_s - self.last_ok_at_s)} ago)"
        else:
            text += f" (no {self.noun} yet)"
        return text


@dataclass(frozen=True, slots=True)
class Outage:
    """One loss of the host: when the console saw it and when the host answered again.

    Times are the console's monotonic clock at the moment it saw each change, so how
    fast a cut was shown never depends on who looks at the screen when.
    """

    started_mono_s: float
    started_at_s: float  # wall clock, for the header's "at HH:MM:SS"
    reason: str
    ended_mono_s: float | None = None

    @property
    def lasted_s(self) -> float | None:
        return None if self.ended_mono_s is None else self.ended_mono_s - self.started_mono_s

    def ended(self, now_mono_s: float) -> Outage:
        return replace(self, ended_mono_s=now_mono_s)


def reconnected_text(outage: Outage) -> str:
    """The header's note for a while after an outage ended: a short cut is not invisible."""
    at = time.strftime("%H:%M:%S", time.localtime(outage.started_at_s))
    lasted_s = outage.lasted_s or 0.0
    return f"reconnected after a {lasted_s:.1f} s cut at {at}"


def unknown_since_text(since_s: float) -> str:
    """The service state while the host is unreachable: never a guessed "stopped"."""
    return (
        "unknown (host unreachable since "
        + time.strftime("%H:%M:%S", time.localtime(since_s))
        + ")"
    )


def cut_as_of_text(at_s: float) -> str:
    """What the load strip adds while its data predates the connection: it counts no more."""
    return f"as of {time.strftime('%H:%M:%S', time.localtime(at_s))}, before the connection was cut"


def rebooted(boot_id_before: str, boot_id_now: str) -> bool:
    """True when both boot ids are known and differ: the host restarted in between."""
    return bool(boot_id_before) and bool(boot_id_now) and boot_id_before != boot_id_now
