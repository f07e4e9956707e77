"""The load's state machine: what one log line means for the load, in one place (`apply`).

A line's own time (its journal time or vLLM prefix) times phase and shard events; the
feed clock (the newest read time) times stats and silence. Pure: no I/O, no wall clock
but for a line that states no time at all. LoadTracker (tracker.py) feeds it batches
through its prefilter and reads it as a LoadProgress.
"""

from __future__ import annotations

import re
import time
from collections import deque
from dataclasses import replace

from tui.logs.classify import explicit_level, strip_ansi
from tui.logs.line import Level, LogLine
from tui.serving.load import patterns as p
from tui.serving.load.clock import own_time_s, vllm_line_time_s
from tui.serving.load.prefilter import MAX_LINE_CHARS
from tui.serving.load.progress import (
    LOADING_PHASES,
    PHASE_RANK,
    EngineStats,
    LoadFacts,
    Phase,
)

_MAX_SEGMENTS = 64  # tqdm `\r` updates kept from one line: the newest say the most
FACT_WORDS = p.words(*p.FACTS)  # a message with none of them cannot move the phase


def _with_rank(failure: str, text: str) -> str:
    """The failure line with the process that printed it (`Worker_TP3`, `rank3`), if known."""
    match = p.PROCESS_PREFIX.match(text)
    if not match:
        return failure
    name = match.group("proc") or f"rank{match.group('rank')}"
    return f"({name}) {failure}"


class LoadMachine:
    """The phase, shards, facts, failure and stats of the load a log describes."""

    def __init__(self, *, year: int | None = None) -> None:
        self._year = year
        self._last_t: float | None = None
        # (read time, own time) of the newest line with a time of its own (own_time_s): a
        # line without one, read with it, was logged then too
        self._own_last: tuple[float | None, float] | None = None
        self._epoch = -1  # 0 after the reset: a probe sent with no progress speaks of epoch 0
        self._reset(None)
        self.phase = Phase.STOPPED  # nothing seen yet
        self._spans: list[tuple[Phase, float]] = []

    def _reset(self, t: float | None) -> None:
        self._epoch += 1  # a new load: no answer from before it says it is ready
        self.phase = Phase.STARTING
        self._phase_started = t
        self._load_started = t
        self._spans = [(Phase.STARTING, t)] if t is not None else []
        self._shards: tuple[int, int, float] | None = None
        self._shard_events: list[tuple[float, int]] = []
        self._shard_clock: list[tuple[float, int]] = []  # (tqdm elapsed, done) per event
        self._tqdm_remaining: tuple[float, float] | None = None
        self._facts = LoadFacts()
        self._failure_line: str | None = None
        self._failure_is_exception = False
        self._failure_context: deque[str] = deque(maxlen=40)
        self._recent: deque[str] = deque(maxlen=20)
        self._in_traceback = False
        self._last_error: str | None = None
        self._http_starting = False
        self._ready = False
        self._stats: EngineStats | None = None
        self._weights_done = False

    @property
    def epoch(self) -> int:
        """LoadProgress.epoch now: it moves at every load start, stop and failure."""
        return self._epoch

    def _time(self, line: LogLine, at_s: float | None) -> float:
        """The line's time: given, from the journal, or from the vLLM prefix; else the last one."""
        t = at_s
        if t is None:
            t = line.timestamp_s
        if t is None:
            t = vllm_line_time_s(line.text, self._year)
        if t is None:  # a bare line (tqdm bar, traceback): no clock of its own
            return self._last_t if self._last_t is not None else time.time()
        if self._last_t is not None:
            t = max(t, self._last_t)
        self._last_t = t
        return t

    def _own_time(self, line: LogLine, t: float) -> float:
        """When the line was logged (own_time_s); a line that states no time takes the
        newest own time of its read, else the feed clock `t`.

        Phase and shard events take this time, not the read's: lines held back (an SSH
        outage, a backlog) and read together still span the minutes they were logged in.
        """
        own = own_time_s(line, self._year)
        if own is not None:
            self._own_last = (line.timestamp_s, own)
            return own
        last = self._own_last
        if last is not None and line.timestamp_s is not None and last[0] == line.timestamp_s:
            return last[1]
        return t

    def _enter(self, phase: Phase, t: float) -> None:
        if phase == self.phase:
            return
        if (
            self.phase in PHASE_RANK
            and phase in PHASE_RANK
            and PHASE_RANK[phase] < PHASE_RANK[self.phase]
        ):
            return  # phases only move forward within one load
        if self._phase_started is not None and t < self._phase_started:
            t = self._phase_started  # processes' stamps interleave: no span goes back
        self.phase = phase
        self._phase_started = t
        self._spans.append((phase, t))

    def _set(self, **changes: object) -> None:
        self._facts = replace(self._facts, **changes)  # type: ignore[arg-type]

    def apply(self, line: LogLine | str, at_s: float | None = None) -> None:
        """One log line, the one way a line changes the load (`at_s`: its time, else its
        own); a line holding tqdm `\\r` updates is read segment by segment."""
        if isinstance(line, str):
            line = LogLine(text=line)
        t = self._time(line, at_s)
        own = at_s if at_s is not None else self._own_time(line, t)
        text = line.text
        if len(text) > MAX_LINE_CHARS:  # only the tail of a huge tqdm line says anything new
            text = text[: p.SCAN_CHARS] + "\r" + text[-MAX_LINE_CHARS:]
        for segment in strip_ansi(text).split("\r")[-_MAX_SEGMENTS:]:
            if segment.strip():
                self._segment(segment[: p.SCAN_CHARS].rstrip(), t, own, line.level)

    def _segment(self, text: str, t: float, own: float, level: str) -> None:
        """One segment: `own` (the line's own time) times phase and shard events, `t`
        (the feed clock) the stats."""
        message = p.message_of(text)
        if any(needs.search(message) for needs in p.STARTS) and (
            self.phase not in LOADING_PHASES or self._load_started is None
        ):
            self._reset(own)
        elif self._load_started is None and any(needs.search(message) for needs in p.JOINS):
            self._reset(own)  # joined a load already under way
        if self._load_started is None:
            self._stats_line(message, t)
            return
        self._recent.append(text)
        self._facts_and_phase(message, own, t)
        self._failure(text, message, own, level)
        self._stats_line(message, t)

    def _facts_and_phase(self, message: str, t: float, read_t: float) -> None:
        """`t` is the line's own time, `read_t` the feed clock (no line is logged later)."""
        if not any(word in message for word in FACT_WORDS):
            return  # no pattern below can match: each needs one of these words
        if match := p.VLLM_VERSION.search(message):
            self._set(engine="vllm", version=match.group(1))
            if match.group(2):
                self._set(model=match.group(2))
        elif match := p.BANNER_MODEL.search(message):
            self._set(model=match.group(1))
        elif match := p.VLLM_ENGINE_INIT.search(message):
            self._set(engine="vllm", version=self._facts.version or match.group(1))
            self._set(model=self._facts.model or match.group(2))
        elif match := p.SGLANG_START.search(message):
            self._set(engine="sglang", model=match.group(1))
        if match := p.SHARD_BAR.search(message):
            self._enter(Phase.WEIGHTS, t)
            elapsed_s = p.hms_to_s(match.group("elapsed"))
            if elapsed_s is not None and self._phase_started is not None:
                # tqdm prints no time: its bar started about when the weights phase did,
                # and it was printed by the time it was read
                t = max(t, min(read_t, self._phase_started + elapsed_s))
            done, total = int(match.group(2)), int(match.group(3))
            if not self._shard_events or done < self._shard_events[-1][1]:
                self._shard_events = []
                self._shard_clock = []
            if not self._shard_events or self._shard_events[-1][1] != done:
                self._shard_events.append((t, done))
            self._bar_clock(done, elapsed_s, t)
            self._shards = (done, total, float(match.group(1)))
            remaining = p.hms_to_s(match.group("remaining"))
            self._tqdm_remaining = (t, remaining) if remaining is not None else None
            return
        if match := p.WEIGHTS_START.search(message):
            self._enter(Phase.WEIGHTS, t)
            if match.group(1) is None:  # SGLang's `Load weight begin`: no model named
                self._set(engine=self._facts.engine or "sglang")
        elif match := p.MODEL_LOADING_TOOK.search(message):
            self._set(weights_gib=p.number(match.group(1)), weights_load_s=p.number(match.group(2)))
            self._weights_done = True
        elif match := p.WEIGHTS_TOOK.search(message):
            if self._facts.weights_load_s is None:
                self._set(weights_load_s=p.number(match.group(1)))
            self._weights_done = True
        elif match := p.OLD_WEIGHTS_TOOK.search(message):
            self._set(weights_gib=p.number(match.group(1)))
            self._weights_done = True
            self._enter(Phase.KV_CACHE, t)
        elif match := p.SGLANG_WEIGHTS_END.search(message):
            self._set(weights_gib=p.number(match.group(1)))
            self._weights_done = True
        elif match := p.COMPILE_TOOK.search(message):
            self._enter(Phase.COMPILE, t)
            self._set(compile_s=p.number(match.group(1) or match.group(2)))
        elif p.COMPILE_START.search(message):
            self._enter(Phase.COMPILE, t)
        elif match := p.KV_AVAILABLE.search(message) or p.KV_EXPLICIT.search(message):
            self._enter(Phase.KV_CACHE, t)
            self._set(kv_cache_gib=p.number(match.group(1)))
        elif match := p.KV_TOKENS.search(message):
            self._enter(Phase.KV_CACHE, t)
            self._set(kv_cache_tokens=int(p.number(match.group(1)) or 0))
            if conc := p.MAX_CONCURRENCY.search(message):
                self._concurrency(conc)
        elif match := p.MAX_CONCURRENCY.search(message):
            self._enter(Phase.KV_CACHE, t)
            self._concurrency(match)
        elif match := p.SGLANG_KV.search(message):
            self._enter(Phase.KV_CACHE, t)
            if match.group(1):
                self._set(kv_cache_tokens=int(p.number(match.group(1)) or 0))
        elif match := p.SGLANG_MAX_TOKENS.search(message):
            self._set(kv_cache_tokens=int(p.number(match.group(1)) or 0))
        elif match := p.INIT_ENGINE_TOOK.search(message):
            self._set(init_engine_s=p.number(match.group(1)))
        elif match := p.GRAPHS_DONE.search(message):
            self._enter(Phase.CUDA_GRAPHS, t)
            secs = match.group(1) or match.group(3)
            gib = match.group(2) or match.group(4)
            self._set(graph_capture_s=p.number(secs), graph_capture_gib=p.number(gib))
        elif p.GRAPHS_START.search(message):
            self._enter(Phase.CUDA_GRAPHS, t)
        elif self.phase == Phase.STOPPED and (
            p.SERVER_STARTING.search(message) or p.SERVER_READY.search(message)
        ):
            return  # a stopped server's late line: only a new load's start serves again
        elif match := p.SERVER_STARTING.search(message):
            self._http_starting = True
            self._set(server_url=match.group(1) or match.group(2))
            self._enter(Phase.SERVING, t)
        elif p.SERVER_READY.search(message):
            self._http_starting = True
            self._ready = True
            self._enter(Phase.SERVING, t)
        elif p.SHUTDOWN.search(message) and self.phase == Phase.SERVING:
            self._stop(t)

    def _bar_clock(self, done: int, elapsed_s: float | None, t: float) -> None:
        """Time the shard events by tqdm's own elapsed clock, anchored at the newest bar.

        A tailed file stamps a backlog with the moment it was read, so 32 shards
        replayed in a millisecond looked finished (ETA 0:00); the bar's elapsed
        field says when each shard really completed, whatever the source.
        """
        if elapsed_s is None:
            self._shard_clock = []
            return
        if self._shard_clock and self._shard_clock[-1][1] == done:
            self._shard_clock[-1] = (elapsed_s, done)
        else:
            self._shard_clock.append((elapsed_s, done))
        if len(self._shard_clock) == len(self._shard_events):
            origin = t - elapsed_s
            self._shard_events = [(origin + e, d) for e, d in self._shard_clock]

    def _concurrency(self, match: re.Match[str]) -> None:
        groups = match.groups()
        self._set(
            max_concurrency_tokens=int(p.number(groups[0]) or 0),
            max_concurrency=p.number(groups[1]),
        )

    def _failure(self, text: str, message: str, t: float, level: str) -> None:
        stated = explicit_level(text)
        # A word such as `RuntimeError:` inside a WARNING or INFO line is not a failure:
        # it takes an error-level line, a fatal message on a line of no stated level,
        # or a traceback.
        is_error = (
            p.TRACEBACK in text
            or stated == Level.ERROR
            or (stated is None and level == Level.ERROR)
            or (
                stated in (None, Level.ERROR)
                and level != Level.WARNING  # a Python warning, or journald priority 4
                and bool(p.FATAL.search(message))
            )
        )
        if p.TRACEBACK in text:
            self._in_traceback = True
        elif self._in_traceback and stated != Level.ERROR:
            # frames are indented; the closing `XxxError: ...` line still belongs to it
            inside = message.startswith((" ", "\t")) or bool(p.EXCEPTION_LINE.search(message))
            self._in_traceback = inside
        if not (is_error or self._in_traceback):
            return
        self._last_error = message.strip()
        if self.phase in LOADING_PHASES:
            self._failure_context.extend(list(self._recent)[:-1])
            self._recent.clear()
            self._enter_failed(t)
        if self.phase == Phase.FAILED:
            self._failure_context.append(text)
            exception = p.EXCEPTION_LINE.search(message)
            # The root cause is the first exception in causal order: Python prints a
            # chain cause-first, and a rank's error precedes the engine's generic
            # "Engine core initialization failed" that follows it.
            if exception and not self._failure_is_exception:
                self._failure_line = _with_rank(exception.group(1).strip(), text)
                self._failure_is_exception = True
            elif self._failure_line is None:
                self._failure_line = _with_rank(message.strip(), text)

    def _enter_failed(self, t: float) -> None:
        if self._phase_started is not None and t < self._phase_started:
            t = self._phase_started
        self.phase = Phase.FAILED
        self._phase_started = t
        self._spans.append((Phase.FAILED, t))
        self._end_readiness()

    def _stop(self, t: float) -> None:
        """The one way a serving server stops (its log's shutdown, its process's exit)."""
        self._enter(Phase.STOPPED, t)
        self._end_readiness()

    def _end_readiness(self) -> None:
        """A stop or a failure ends readiness at once: nothing to poll until the next load
        says it starts its server, and an answer already on its way is of an older epoch."""
        self._ready = False
        self._http_starting = False
        self._epoch += 1

    def _stats_line(self, message: str, t: float) -> None:
        if match := p.VLLM_ENGINE_STATS.search(message) or p.VLLM_OLD_STATS.search(message):
            groups = match.groups()
            self._stats = EngineStats(
                prompt_tokens_per_s=p.number(groups[0]),
                generation_tokens_per_s=p.number(groups[1]),
                running_reqs=int(groups[2]),
                waiting_reqs=int(groups[3]),
                kv_cache_usage_pct=p.number(groups[4]),
                prefix_cache_hit_pct=p.number(groups[5]) if len(groups) > 5 else None,
                at_s=t,
            )
        elif match := p.SGLANG_DECODE.search(message):
            self._stats = EngineStats(
                prompt_tokens_per_s=None,
                generation_tokens_per_s=p.number(match.group(3)),
                running_reqs=int(match.group(1)),
                waiting_reqs=int(match.group(4)),
                kv_cache_usage_pct=(p.number(match.group(2)) or 0.0) * 100,
                prefix_cache_hit_pct=None,
                at_s=t,
            )

    def observe_exit(self, exit_status: int | None, at_s: float | None = None) -> None:
        """The server process (or unit) ended: a load that dies is a failed load."""
        t = at_s if at_s is not None else time.time()
        if self.phase in LOADING_PHASES and self._load_started is not None:
            self._enter_failed(t)
            if self._failure_line is None:
                self._failure_line = f"process exited with status {exit_status}"
        elif self.phase == Phase.SERVING:
            self._stop(t)
