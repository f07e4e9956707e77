"""How far a model load has got, read from the service log (and GPU memory).

vLLM gives no HTTP endpoint while loading, so the phase, shard k/N, ETA and the line that
killed a failed load all come from log lines fed to LoadTracker. The tracker is pure:
feed it lines and memory samples, ask for a snapshot. A line changes the load only
through `apply` (machine.py); `feed_many` takes a batch at a flood's pace, asking the
prefilter (prefilter.py) which lines need `apply` and ticking the clock for the rest.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from typing import cast

from tui.logs.line import LineBatch, LogLine
from tui.serving.load import patterns as p
from tui.serving.load.clock import (
    own_time_s,
    prefix_time_near_s,
    vllm_line_time_s,
    vllm_line_times_s,
)
from tui.serving.load.machine import LoadMachine
from tui.serving.load.prefilter import Prefilter
from tui.serving.load.progress import (
    LOADING_ORDER,
    LOADING_PHASES,
    STALE_SILENCE_S,
    EngineStats,
    LoadFacts,
    LoadProgress,
    Phase,
    PhaseSpan,
    silence_note,
)

# The load's face for its callers: the tracker with the types and clock it answers in.
__all__ = [
    "LOADING_ORDER",
    "LOADING_PHASES",
    "STALE_SILENCE_S",
    "EngineStats",
    "LoadFacts",
    "LoadProgress",
    "LoadTracker",
    "Phase",
    "PhaseSpan",
    "own_time_s",
    "prefix_time_near_s",
    "silence_note",
    "vllm_line_time_s",
    "vllm_line_times_s",
]
_INFINITIES = (float("inf"), float("-inf"))


class LoadTracker(LoadMachine):
    """Feed it log lines (and memory samples); `snapshot()` says where the load stands."""

    def __init__(
        self,
        *,
        expected_weights_bytes: int | None = None,
        post_weights_s: float | None = None,
        year: int | None = None,
    ) -> None:
        super().__init__(year=year)
        self.expected_weights_bytes = expected_weights_bytes
        self.post_weights_s = post_weights_s
        self._unit_running: bool | None = None
        self._memory: deque[tuple[float, int]] = deque(maxlen=600)

    def feed_many(self, lines: Sequence[LogLine | str]) -> None:
        """Lines in order, ending where `apply` of each one by one ends, at a flood's pace:
        the prefilter names the lines that need `apply`; the others only tick (_quiet)."""
        if not lines:
            return
        if isinstance(lines, LineBatch):
            texts, stamps = lines.texts, lines.timestamps_s()
            levels: Sequence[str | None] = lines.levels
        else:
            texts = [line if isinstance(line, str) else line.text for line in lines]
            stamps = [None if isinstance(line, str) else line.timestamp_s for line in lines]
            levels = [None if isinstance(line, str) else line.level for line in lines]
        gate = Prefilter(texts, stamps, levels)
        start, count = 0, len(texts)
        while start < count:
            stats, stop = gate.next_line(start, self._load_started is not None, self._in_traceback)
            if stats >= 0:  # a quiet line but for its stats: between the quiet ones
                self._quiet(lines, gate, start, stats)
                self.apply(lines[stats])
                start = stats + 1
            self._quiet(lines, gate, start, stop)
            if stop < count:
                self.apply(lines[stop])
            start = stop + 1

    def _quiet(
        self, lines: Sequence[LogLine | str], gate: Prefilter, start: int, stop: int
    ) -> None:
        """What `apply` of each of lines[start:stop] leaves, for lines the prefilter passed
        (each with its read time): the clock at the newest read time, the recent context
        during a load, the newest own time."""
        if stop <= start:
            return
        self._tick(gate.stamps, start, stop, isinstance(lines, LineBatch))
        if self._load_started is not None:
            recent: list[str] = []
            maxlen = self._recent.maxlen
            for index in range(stop - 1, start - 1, -1):
                text = gate.texts[index]
                if text.strip():
                    recent.append(text[: p.SCAN_CHARS].rstrip())
                    if len(recent) == maxlen:
                        break
            self._recent.extend(reversed(recent))
        self._own_catch_up(lines, gate, start, stop)

    def _tick(self, stamps: Sequence[float | None], start: int, stop: int, one: bool) -> None:
        """The clock after reads at stamps[start:stop] (none None), as `_time` of each
        leaves it: the newest, or the clock where it is newer (NaN read as `_time` does)."""
        last = self._last_t
        if one:  # a LineBatch: one read time for all its lines
            t = cast(float, stamps[start])
            self._last_t = last if last is not None and last > t else t
            return
        times = [t for t in stamps[start:stop] if t is not None]
        total = sum(times)
        if total == total and total not in _INFINITIES and (last is None or last == last):
            newest = max(times)
            self._last_t = newest if last is None or newest > last else last
            return
        for t in times:  # a NaN or an infinity: step by step
            last = last if last is not None and last > t else t
        self._last_t = last

    def _own_catch_up(
        self, lines: Sequence[LogLine | str], gate: Prefilter, start: int, stop: int
    ) -> None:
        """`_own_last` as `apply` of each of lines[start:stop] would leave it: the newest
        with a time of its own, so they are read newest first up to it."""
        if stop <= start:
            return
        year = self._year
        if isinstance(lines, LineBatch):
            if not gate.may_hold_stamps():
                return
            read_s, texts = lines.timestamp_s, lines.texts
            for index in range(stop - 1, start - 1, -1):
                text = texts[index]
                if text.find("-", 2, 80) < 0:  # every stamp has its `-` there
                    continue
                own = prefix_time_near_s(text, read_s, year)
                if own is not None:
                    self._own_last = (read_s, own)
                    return
            return
        for index in range(stop - 1, start - 1, -1):
            line = lines[index]
            if isinstance(line, str):
                line = LogLine(text=line)
            own = own_time_s(line, year)
            if own is not None:
                self._own_last = (line.timestamp_s, own)
                return

    def observe_memory(self, used_bytes: int, at_s: float | None = None) -> None:
        """Total GPU memory in use (all GPUs of the service), for the fill-rate ETA."""
        self._memory.append((at_s if at_s is not None else time.time(), used_bytes))

    def observe_unit(self, running: bool | None) -> None:
        """Whether the service's unit runs (None: unknown, or no unit): a silent log of a
        running unit is a load that hangs; of any other, a load whose state is unknown."""
        self._unit_running = running

    # ---- reading ---------------------------------------------------------
    def _eta(self, now: float) -> tuple[float | None, str | None]:
        tail_s = self.post_weights_s or 0.0
        if self._shards and not self._weights_done:
            done, total, _ = self._shards
            events = self._shard_events
            if len(events) >= 2 and events[-1][0] > events[0][0] and done < total:
                rate = (events[-1][1] - events[0][1]) / (events[-1][0] - events[0][0])
                if rate > 0:
                    left = (total - done) / rate - (now - events[-1][0])
                    return max(0.0, left) + tail_s, "shards"
            if self._tqdm_remaining is not None:
                seen_at, remaining = self._tqdm_remaining
                return max(0.0, remaining - (now - seen_at)) + tail_s, "tqdm"
        if self.expected_weights_bytes and len(self._memory) >= 2 and not self._weights_done:
            (t0, m0), (t1, m1) = self._memory[0], self._memory[-1]
            if t1 > t0 and m1 > m0:
                rate = (m1 - m0) / (t1 - t0)
                left = max(0, self.expected_weights_bytes - m1) / rate
                return left + tail_s, "memory"
        return None, None

    def _fill_rate(self) -> float | None:
        if len(self._memory) < 2:
            return None
        (t0, m0), (t1, m1) = self._memory[0], self._memory[-1]
        return (m1 - m0) / (t1 - t0) if t1 > t0 else None

    def snapshot(self, now_s: float | None = None) -> LoadProgress:
        now = now_s if now_s is not None else max(time.time(), self._last_t or 0.0)
        silent_since = self._silent_since(now)
        # Durations end now; for a silent log at its last line: nothing is known after it.
        end = now if silent_since is None else silent_since
        spans = []
        for index, (phase, started) in enumerate(self._spans):
            ends = self._spans[index + 1][1] if index + 1 < len(self._spans) else end
            spans.append(PhaseSpan(str(phase), started, max(0.0, ends - started)))
        done, total, pct = self._shards if self._shards else (None, None, None)
        loading = self.phase in LOADING_PHASES and silent_since is None
        eta, eta_source = self._eta(now) if loading else (None, None)
        phase_started = self._phase_started
        return LoadProgress(
            phase=str(self.phase),
            phase_elapsed_s=max(0.0, end - phase_started) if phase_started is not None else 0.0,
            load_elapsed_s=(end - self._load_started) if self._load_started else None,
            shards_done=done,
            shards_total=total,
            shard_pct=pct,
            eta_s=eta,
            eta_source=eta_source,
            http_starting=self._http_starting,
            ready=self._ready,
            failure_line=self._failure_line,
            failure_context=tuple(self._failure_context),
            last_error_line=self._last_error,
            facts=self._facts,
            timeline=tuple(spans),
            engine_stats=self._stats,
            mem_used_bytes=self._memory[-1][1] if self._memory else None,
            mem_fill_bytes_per_s=self._fill_rate(),
            at_s=now,
            epoch=self._epoch,
            silent_since_s=silent_since,
        )

    def _silent_since(self, now: float) -> float | None:
        """The last line's time when the log stopped mid-load STALE_SILENCE_S before `now`
        and the unit is not known to run; else None."""
        last = self._last_t
        if self.phase not in LOADING_PHASES or last is None or self._unit_running:
            return None
        return last if now - last > STALE_SILENCE_S else None
