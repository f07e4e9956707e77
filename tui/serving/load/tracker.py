"""How far a model load has got, read from the service log (and GPU memory).

vLLM gives no HTTP endpoint while loading, so the phase, shard k/N, ETA and
the line that killed a failed load all come from log lines fed to LoadTracker.
The tracker is pure: feed it lines and memory samples, ask for a snapshot.
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import cast

from tui.core.formatting import duration_compact
from tui.logs.line import Level, LineBatch, LogLine, explicit_level, strip_ansi
from tui.serving.load import patterns as p

_MAX_LINE_CHARS = 64 * 1024  # of a longer line, its head and tail are read
# What a line that takes `feed` after a load's start holds (_feed_started's tests): a `\r`,
# an escape, a traceback, a stated error level, a literal of every FATAL match; and a line
# starting as a glog error (`E1129 10:00:00`, `[F1129 ...`), looked for after a newline.
_FEED_WORDS = (
    "\r",
    "\x1b",
    p.TRACEBACK,
    "ERROR",
    "CRITICAL",
    "FATAL",
    *p.FATAL_LITERALS,
    "\nE",
    "\n[E",
    "\nF",
    "\n[F",
)
_INFINITIES = (float("inf"), float("-inf"))
# Every line that may start or join a load outside one holds one of these (see _feed_text).
_LOAD_WORDS = (
    "version",
    "LLM engine",
    "ServerArgs(",
    "Starting to load model",
    "Load weight begin",
    "Completed",
)
# Each pattern _facts_and_phase tries holds one of these words in every match (all are
# case-sensitive): a message with none of them cannot move the phase or add a fact.
_FACT_WORDS: tuple[str, ...] = (
    "version",  # VLLM_VERSION
    "\u2588",  # BANNER_MODEL
    "LLM engine",  # VLLM_ENGINE_INIT
    "ServerArgs(",  # SGLANG_START
    "Completed",  # SHARD_BAR
    "Starting to load model",  # WEIGHTS_START
    "Load weight begin",
    "Model loading took",  # MODEL_LOADING_TOOK
    "Loading weights took",  # WEIGHTS_TOOK
    "Loading model weights took",  # OLD_WEIGHTS_TOOK
    "Load weight end.",  # SGLANG_WEIGHTS_END
    "torch.compile t",  # COMPILE_TOOK
    "Warming up model for the compilation",  # COMPILE_START
    "Dynamo bytecode transform time",
    "Compiling a graph for dynamic shape",
    "Compiling model again",
    "Start compiling",
    "Available KV cache memory: ",  # KV_AVAILABLE
    "Explicitly set ",  # KV_EXPLICIT
    " KV cache size: ",  # KV_TOKENS
    "Maximum concurrency for ",  # MAX_CONCURRENCY
    "Memory pool end",  # SGLANG_KV
    "KV Cache is allocated. #tokens: ",
    "max_total_num_tokens=",  # SGLANG_MAX_TOKENS
    "init engine (profile, create kv cache, warmup model) took ",  # INIT_ENGINE_TOOK
    "Graph capturing finished in ",  # GRAPHS_DONE
    " graph end. Time elapsed: ",
    "Capturing CUDA graph",  # GRAPHS_START
    " graph begin",
    "Starting vLLM ",  # SERVER_STARTING
    "Uvicorn running on ",
    "Application startup complete.",  # SERVER_READY
    "The server is fired up and ready to roll!",
    "[shutdown]",  # SHUTDOWN
    "Shutting down",
    "shutdown triggered",
    "Received SIGTERM",
    "Gracefully stopping",
)
# A load step logs at least this often (tqdm each shard, vLLM each phase): a load whose log
# has been silent longer, with its unit not known to run, says nothing about now.
STALE_SILENCE_S = 3600.0
_MAX_SEGMENTS = 64


def silence_note(silent_for_s: float) -> str:
    """What a load whose log stopped long ago is (LoadProgress.silent_since_s): unknown."""
    return f"log silent for {duration_compact(silent_for_s)}; load state unknown"


# tqdm `\r` updates kept from one line: the newest say the most
# A batch's words are searched over its line shapes (_line_shapes): each word as its shape.
_DIGITS_AS_ZERO = str.maketrans("123456789", "000000000")
_FACT_SHAPES = tuple((word, word.translate(_DIGITS_AS_ZERO)) for word in _FACT_WORDS)
_FEED_SHAPES = tuple(word.translate(_DIGITS_AS_ZERO) for word in _FEED_WORDS)
_STAMP_SHAPE = "00-00 00:00:00"  # a vLLM prefix's `MM-DD HH:MM:SS` as its shape


def _line_shapes(joined: str) -> str:
    """The distinct lines of `joined` with every digit read as 0, each after a newline.

    A word `joined` holds (none spans a line; a leading newline is a line's start) is
    in it as its own shape, so a word not found here is not in `joined`. A flood's lines
    differ mostly in their numbers: 2,000 lines of a serving flood are a few dozen
    shapes, so the batch's ~55 word searches cost ~0.2 µs a line, not ~1.5.
    """
    return "\n" + "\n".join(set(joined.translate(_DIGITS_AS_ZERO).split("\n")))


class Phase(StrEnum):
    STARTING = "starting"
    WEIGHTS = "weights"
    COMPILE = "compile"
    KV_CACHE = "kv_cache"
    CUDA_GRAPHS = "cuda_graphs"
    SERVING = "serving"
    FAILED = "failed"
    STOPPED = "stopped"


LOADING_ORDER: tuple[Phase, ...] = (
    Phase.STARTING,
    Phase.WEIGHTS,
    Phase.COMPILE,
    Phase.KV_CACHE,
    Phase.CUDA_GRAPHS,
    Phase.SERVING,
)
_RANK = {phase: index for index, phase in enumerate(LOADING_ORDER)}
LOADING_PHASES = frozenset(LOADING_ORDER[:-1])


@dataclass(frozen=True, slots=True)
class PhaseSpan:
    phase: str
    started_at_s: float
    duration_s: float


@dataclass(frozen=True, slots=True)
class EngineStats:
    """The periodic `Engine 000: Avg prompt throughput ...` line (or SGLang's decode line)."""

    prompt_tokens_per_s: float | None
    generation_tokens_per_s: float | None
    running_reqs: int
    waiting_reqs: int
    kv_cache_usage_pct: float | None
    prefix_cache_hit_pct: float | None
    at_s: float


@dataclass(frozen=True, slots=True)
class LoadFacts:
    """Numbers the load reports about itself, for the summary."""

    engine: str | None = None
    version: str | None = None
    model: str | None = None
    weights_gib: float | None = None
    weights_load_s: float | None = None
    compile_s: float | None = None
    kv_cache_gib: float | None = None
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    max_concurrency_tokens: int | None = None
    graph_capture_s: float | None = None
    graph_capture_gib: float | None = None
    init_engine_s: float | None = None
    server_url: str | None = None


@dataclass(frozen=True, slots=True)
class LoadProgress:
    phase: str
    phase_elapsed_s: float
    load_elapsed_s: float | None
    shards_done: int | None
    shards_total: int | None
    shard_pct: float | None
    eta_s: float | None
    eta_source: str | None  # "shards", "tqdm", "memory"
    http_starting: bool  # "Starting vLLM server" seen: time to poll /health
    ready: bool  # the server said it is up
    failure_line: str | None
    failure_context: tuple[str, ...]
    last_error_line: str | None
    facts: LoadFacts
    timeline: tuple[PhaseSpan, ...]
    engine_stats: EngineStats | None
    mem_used_bytes: int | None
    mem_fill_bytes_per_s: float | None
    at_s: float
    # Moves at every load start, stop and failure: a readiness answer to a request sent
    # in an earlier epoch speaks of a server that is gone, and is dropped.
    epoch: int = 0
    # The time of the last line, when the log stopped mid-load longer ago than any step
    # takes (STALE_SILENCE_S) and the unit is not known to run: the load's state is unknown,
    # and phase, elapsed times and timeline stop at that line (no ETA).
    silent_since_s: float | None = None

    @property
    def is_loading(self) -> bool:
        return self.phase in LOADING_PHASES and self.silent_since_s is None


# A log flood repeats the same minute thousands of times: mktime (and localtime for the
# year) cost more than the rest of the parse, so the year is kept per wall-clock second and
# each minute's start per (year, `MM-DD HH:MM` as written); a second within the minute adds.
_YEAR_AT: list[int] = [-1, 0]  # [the wall-clock second, the local year then]
_MINUTE_START_S: dict[tuple[int, str], float | None] = {}
_MINUTE_CACHE_MAX = 4096
_MINUTE_ZONE: list[object] = [None]  # the time zone the cached minutes were computed in


def _local_year() -> int:
    now = int(time.time())
    if _YEAR_AT[0] != now:
        _YEAR_AT[0], _YEAR_AT[1] = now, time.localtime(now).tm_year
    return _YEAR_AT[1]


def _mktime(year: int, month: int, day: int, hour: int, minute: int, second: int) -> float | None:
    try:
        return time.mktime((year, month, day, hour, minute, second, 0, 0, -1))
    except (OverflowError, ValueError):
        return None


def vllm_line_time_s(text: str, year: int | None = None) -> float | None:
    """The `MM-DD HH:MM:SS` in a vLLM prefix as epoch seconds (local time, given year)."""
    match = p.VLLM_TIMESTAMP.search(text[:80])
    if not match:
        return None
    _check_zone()
    return _stamp_time_s(match, year or _local_year())


def vllm_line_times_s(texts: Sequence[str]) -> list[float | None]:
    """vllm_line_time_s of each text, at a flood's pace: the year and the time zone read
    once for the batch, and each text searched from two characters before its first `-`
    (every stamp's third character) within its first 80, so a prefix without one costs a
    find, not a regex search."""
    if not texts:
        return []
    year = _local_year()
    _check_zone()
    search = p.VLLM_TIMESTAMP.search
    out: list[float | None] = []
    add = out.append
    for text in texts:
        dash = text.find("-", 2, 80)
        match = search(text, dash - 2, 80) if dash >= 0 else None
        add(None if match is None else _stamp_time_s(match, year))
    return out


def _check_zone() -> None:
    zone = (time.timezone, time.altzone, time.tzname)  # after a tzset, minutes start anew
    if zone != _MINUTE_ZONE[0]:
        _MINUTE_ZONE[0] = zone
        _MINUTE_START_S.clear()


def _stamp_time_s(match: re.Match[str], year: int) -> float | None:
    stamp = match.group(0)  # `MM-DD HH:MM:SS ` (15 characters: one per digit)
    second = int(stamp[12:14])
    if second >= 60:  # mktime normalises a leap or bad second: leave that to it
        month, day, hour, minute = (int(g) for g in match.groups()[:4])
        return _mktime(year, month, day, hour, minute, second)
    key = (year, stamp[:11])  # the minute as written: no int() for a minute already seen
    try:
        start = _MINUTE_START_S[key]
    except KeyError:
        if len(_MINUTE_START_S) >= _MINUTE_CACHE_MAX:
            _MINUTE_START_S.clear()
        month, day, hour, minute = (int(g) for g in match.groups()[:4])
        start = _MINUTE_START_S[key] = _mktime(year, month, day, hour, minute, 0)
    return None if start is None else start + second


_HALF_YEAR_S = 183 * 86400.0


def prefix_time_near_s(text: str, read_s: float | None, year: int | None = None) -> float | None:
    """The vLLM prefix's `MM-DD HH:MM:SS` as epoch seconds (the console's local time zone),
    in the year nearest `read_s` (now for a line read from a file again: no read time),
    and never after it: a line is written before it is read, so a stamp that reads later
    comes from another zone and says less than the read time. `year` (a fixed year, for
    replays of old logs) overrides the nearest one."""
    if year is not None:
        stamp = vllm_line_time_s(text, year)
    else:
        stamp = vllm_line_time_s(text)
        near_s = time.time() if read_s is None else read_s
        if stamp is not None and near_s == near_s:
            if stamp - near_s > _HALF_YEAR_S:
                stamp = vllm_line_time_s(text, _local_year() - 1)
            elif near_s - stamp > _HALF_YEAR_S:
                stamp = vllm_line_time_s(text, _local_year() + 1)
    if stamp is not None and read_s is not None and stamp > read_s:
        return read_s
    return stamp


def own_time_s(line: LogLine, year: int | None = None) -> float | None:
    """When the line was logged, not read: the journal's time for an entry (it has a
    cursor), else its vLLM prefix's; None for a line that states no time of its own."""
    if line.cursor is not None and line.timestamp_s is not None:
        return line.timestamp_s
    return prefix_time_near_s(line.text, line.timestamp_s, year)


def _message(text: str) -> str:
    """The message after a vLLM `(Proc pid=N) LEVEL MM-DD HH:MM:SS [file:line] ` prefix."""
    if "] " in text[:120] and p.VLLM_TIMESTAMP.search(text[:80]):
        return text.split("] ", 1)[1]
    return text


def _with_rank(failure: str, text: str) -> str:
    """The failure line with the process that printed it (`Worker_TP3`, `rank3`), if known."""
    match = p.PROCESS_PREFIX.match(text)
    if not match:
        return failure
    name = match.group("proc") or f"rank{match.group('rank')}"
    return f"({name}) {failure}"


class LoadTracker:
    """Feed it log lines (and memory samples); `snapshot()` says where the load stands."""

    def __init__(
        self,
        *,
        expected_weights_bytes: int | None = None,
        post_weights_s: float | None = None,
        year: int | None = None,
    ) -> None:
        self.expected_weights_bytes = expected_weights_bytes
        self.post_weights_s = post_weights_s
        self._year = year
        self._last_t: float | None = None
        self._unit_running: bool | None = None
        # (read time, own time) of the newest line with a time of its own (own_time_s): a
        # line without one, read with it, was logged then too
        self._own_last: tuple[float | None, float] | None = None
        self._fact_words = _FACT_WORDS  # those a batch holds, while feed_many reads it
        self._memory: deque[tuple[float, int]] = deque(maxlen=600)
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

    # ---- feeding -------------------------------------------------------
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

    def _own_catch_up(
        self, lines: Sequence[LogLine | str], start: int, stop: int, shapes: str = ""
    ) -> None:
        """`_own_last` as `feed` of each of lines[start:stop] would leave it, for the lines a
        batch path read without `feed`: the newest with a time of its own, so they are read
        newest first up to it. `shapes` (_line_shapes of a LineBatch) without a stamp's
        shape: no line of it has one."""
        if stop <= start:
            return
        year = self._year
        if isinstance(lines, LineBatch):
            if shapes and _STAMP_SHAPE not in shapes:
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

    def _enter(self, phase: Phase, t: float) -> None:
        if phase == self.phase:
            return
        if self.phase in _RANK and phase in _RANK and _RANK[phase] < _RANK[self.phase]:
            return  # phases only move forward within one load
        if self._phase_started is not None and t < self._phase_started:
            t = self._phase_started  # processes' stamps interleave: no span goes back
        self.phase = phase
        self._phase_started = t
        self._spans.append((phase, t))

    def _set(self, **changes: object) -> None:
        self._facts = replace(self._facts, **changes)  # type: ignore[arg-type]

    def feed(self, line: LogLine | str, at_s: float | None = None) -> None:
        """One log line; a line holding tqdm `\\r` updates is read segment by segment."""
        if isinstance(line, str):
            line = LogLine(text=line)
        t = self._time(line, at_s)
        own = at_s if at_s is not None else self._own_time(line, t)
        text = line.text
        if len(text) > _MAX_LINE_CHARS:  # only the tail of a huge tqdm line says anything new
            text = text[: p.SCAN_CHARS] + "\r" + text[-_MAX_LINE_CHARS:]
        for segment in strip_ansi(text).split("\r")[-_MAX_SEGMENTS:]:
            if segment.strip():
                self._feed_text(segment[: p.SCAN_CHARS].rstrip(), t, own, line.level)

    def feed_many(self, lines: Sequence[LogLine | str]) -> None:
        """Lines in order, as `feed` would take them one by one, at a flood's pace.

        Outside a load only a line that may start or join one, or a stats line, changes
        anything but the clock; and of a run of stats lines only the newest that matches
        counts. So a line holding none of their literals only moves the clock, and the
        stats lines wait and are read newest first, before any line that takes `feed`.
        """
        stats: list[tuple[str, float]] = []  # stats lines not read yet, oldest first
        # The batch searched once: without an escape, a `\r` or a load's literal anywhere,
        # no line needs the per-line test for them.
        texts = (
            lines.texts
            if isinstance(lines, LineBatch)
            else [line if isinstance(line, str) else line.text for line in lines]
        )
        joined = "\n".join(texts)
        careful = "\r" in joined or "\x1b" in joined or any(word in joined for word in _LOAD_WORDS)
        if not careful and self._load_started is None and self._clock_only(lines, texts, joined):
            self._own_catch_up(lines, 0, len(texts))
            return
        if self._load_started is not None:  # the whole batch as lines after a load's start
            self._rest_started(lines, joined)
            return
        fed = 0  # the lines before it took `feed` or are caught up (_own_catch_up)
        for index, line in enumerate(lines):
            if self._load_started is not None or isinstance(line, str):
                self._settle_stats(stats)
                self._own_catch_up(lines, fed, index)
                self._rest_started(lines[index:], joined)
                return
            text, t = line.text, line.timestamp_s
            if (
                t is None
                or len(text) > _MAX_LINE_CHARS
                or (
                    careful
                    and (
                        "\r" in text or "\x1b" in text or any(word in text for word in _LOAD_WORDS)
                    )
                )
            ):
                self._settle_stats(stats)
                self._own_catch_up(lines, fed, index)
                self.feed(line)
                fed = index + 1
                continue
            last = self._last_t
            if last is not None and last > t:
                t = last
            self._last_t = t
            if "Avg prompt throughput: " in text or "Decode batch." in text:
                stats.append((text, t))
        self._settle_stats(stats)
        self._own_catch_up(lines, fed, len(texts))

    def _clock_only(self, lines: Sequence[LogLine | str], texts: list[str], joined: str) -> bool:
        """feed_many's loop, done per batch, where no line takes `feed` (outside a load,
        no load word, `\r` or escape in the batch, every line a LogLine with its own time
        and not too long): the clock moves to the newest time, and of the stats lines the
        newest that reads as stats counts, at the time the loop gave it (the newest time up
        to it). False, with nothing done, for any other batch."""
        if isinstance(lines, LineBatch):
            stamps = lines.timestamps_s()
        else:
            try:
                stamps = [line.timestamp_s for line in lines]  # type: ignore[union-attr]
            except AttributeError:  # a str line: the loop takes it
                return False
        if not stamps or None in stamps or max(map(len, texts)) > _MAX_LINE_CHARS:
            return False
        times = cast(list[float], stamps)
        total = sum(times)
        if total != total or total in (float("inf"), float("-inf")):  # NaN or inf: the loop
            return False
        last = self._last_t
        if last is not None and last != last:  # a NaN clock: the loop moves on from it
            return False
        newest = max(times)
        self._last_t = newest if last is None or newest > last else last
        if "Avg prompt throughput: " not in joined and "Decode batch." not in joined:
            return True
        before = self._stats
        for index in range(len(texts) - 1, -1, -1):  # as _settle_stats: newest first
            text = texts[index]
            if ("Avg prompt throughput: " in text or "Decode batch." in text) and text.strip():
                t = max(times[: index + 1])
                if last is not None and last > t:
                    t = last
                self._stats_line(_message(text[: p.SCAN_CHARS].rstrip()), t)
                if self._stats is not before:
                    break
        return True

    def _rest_started(self, lines: Sequence[LogLine | str], joined: str) -> None:
        """The rest of a batch once a load has started (or at a str line), `joined` the
        whole batch's text: read line by line where it holds an escape."""
        shapes = ""
        if "\x1b" not in joined:  # cutting an escape out could join a word's halves
            shapes = _line_shapes(joined)
            self._fact_words = tuple(word for word, shape in _FACT_SHAPES if shape in shapes)
        try:
            if "\x1b" in joined:
                for rest in lines:
                    self.feed(rest)
            else:
                self._feed_started(lines, shapes)
        finally:
            self._fact_words = _FACT_WORDS

    def _feed_started(self, lines: Sequence[LogLine | str], shapes: str) -> None:
        """Lines after a load has started, as `feed` would take them, none with an escape.

        A plain line (its own time, no `\r`, no fact word of the batch, no traceback
        going on or starting, not an error by _failure's reading) only moves the clock,
        joins the recent context and may be a stats line; the stats lines wait and are read
        newest first, before any other line takes `feed`. _failure's test is made here
        exactly as there, with the message read only where it decides.
        """
        if self._plain_started_batch(lines, shapes):
            self._own_catch_up(lines, 0, len(lines), shapes)
            return
        stats: list[tuple[str, float]] = []
        fed = 0  # the lines before it took `feed` or are caught up (_own_catch_up)
        fact_words = self._fact_words  # those the batch holds (feed_many narrowed them)
        error, warning = Level.ERROR, Level.WARNING
        # The lines read by column: a LineBatch's own (a LogLine is built only for a line
        # that takes `feed`); a str line has no level and takes `feed` as it is.
        if isinstance(lines, LineBatch):
            texts, stamps = lines.texts, lines.timestamps_s()
            levels: list[str | None] = list(lines.levels)
        else:
            texts = [line if isinstance(line, str) else line.text for line in lines]
            stamps = [None if isinstance(line, str) else line.timestamp_s for line in lines]
            levels = [None if isinstance(line, str) else line.level for line in lines]
        for index, text in enumerate(texts):
            level, t = levels[index], stamps[index]
            if level is None:
                self._settle_stats(stats)
                self._own_catch_up(lines, fed, index, shapes)
                self.feed(lines[index])
                fed = index + 1
                continue
            if (
                t is None
                or self._in_traceback
                or len(text) > _MAX_LINE_CHARS
                or "\r" in text
                or (fact_words and any(word in text for word in fact_words))
            ):
                self._settle_stats(stats)
                self._own_catch_up(lines, fed, index, shapes)
                self.feed(lines[index])
                fed = index + 1
                continue
            segment = text[: p.SCAN_CHARS].rstrip()  # what `feed` hands _feed_text
            blank = not text.strip()
            if not blank:
                stated = explicit_level(segment)
                if (
                    p.TRACEBACK in segment
                    or stated == error
                    or (stated is None and level == error)
                    or (
                        stated is None
                        and level != warning
                        and p.FATAL.search(_message(segment)) is not None
                    )
                ):
                    self._settle_stats(stats)
                    self._own_catch_up(lines, fed, index, shapes)
                    self.feed(lines[index])
                    fed = index + 1
                    continue
            last = self._last_t
            if last is not None and last > t:
                t = last
            self._last_t = t
            if blank:
                continue  # `feed` reads no segment of a blank line
            self._recent.append(segment)
            if "Avg prompt throughput: " in text or "Decode batch." in text:
                stats.append((text, t))
        self._settle_stats(stats)
        self._own_catch_up(lines, fed, len(texts), shapes)

    def _plain_started_batch(self, lines: Sequence[LogLine | str], shapes: str) -> bool:
        """_feed_started for a LineBatch in which no line can take `feed`, done per batch;
        False, with nothing done, for any other.

        A line takes `feed` for a fact word, a `\r`, a traceback, an error level (stated or
        read), a FATAL match, no time or great length. A batch whose text holds none of
        their literals (nor a line starting as glog's E or F does) has no such line; its
        lines then only move the clock (one time for all), join the recent context (only
        the last ones stay) and may be stats lines (the newest that reads as stats counts).
        `shapes` are the batch's line shapes (_line_shapes): a literal not there is not in it.
        """
        if not isinstance(lines, LineBatch) or self._fact_words or self._in_traceback:
            return False
        t = lines.timestamp_s
        last = self._last_t
        if t is None or t != t or t in _INFINITIES or (last is not None and last != last):
            return False
        texts = lines.texts
        if not texts or Level.ERROR in lines.levels or max(map(len, texts)) > _MAX_LINE_CHARS:
            return False
        if any(word in shapes for word in _FEED_SHAPES):  # `shapes`: a batch holding these
            return False
        if last is not None and last > t:
            t = last
        self._last_t = t
        recent: list[str] = []
        for text in reversed(texts):
            if text.strip():
                recent.append(text[: p.SCAN_CHARS].rstrip())
                if len(recent) == self._recent.maxlen:
                    break
        self._recent.extend(reversed(recent))
        before = self._stats
        for text in reversed(texts):
            if ("Avg prompt throughput: " in text or "Decode batch." in text) and text.strip():
                self._stats_line(_message(text[: p.SCAN_CHARS].rstrip()), t)
                if self._stats is not before:
                    break
        return True

    def _settle_stats(self, stats: list[tuple[str, float]]) -> None:
        """The newest of the waiting stats lines that reads as stats; the older ones are moot."""
        before = self._stats
        for text, t in reversed(stats):
            if text.strip():
                self._stats_line(_message(text[: p.SCAN_CHARS].rstrip()), t)
                if self._stats is not before:
                    break
        stats.clear()

    def _starts_new_load(self, message: str) -> bool:
        # Each search only where its literal is (every match holds it): a flood of request
        # and stats lines then costs three substring checks, not three regex scans.
        return bool(
            ("version" in message and p.VLLM_VERSION.search(message))
            or ("LLM engine" in message and p.VLLM_ENGINE_INIT.search(message))
            or ("ServerArgs(" in message and p.SGLANG_START.search(message))
        )

    def _feed_text(self, text: str, t: float, own: float, level: str) -> None:
        """One segment: `own` (the line's own time) times phase and shard events, `t`
        (the feed clock) the stats."""
        message = _message(text)
        if self._starts_new_load(message) and (
            self.phase not in LOADING_PHASES or self._load_started is None
        ):
            self._reset(own)
        elif self._load_started is None and (
            (
                ("Starting to load model" in message or "Load weight begin" in message)
                and p.WEIGHTS_START.search(message)
            )
            or ("Completed" in message and p.SHARD_BAR.search(message))
        ):
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
        if not any(word in message for word in self._fact_words):
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
        if p.WEIGHTS_START.search(message):
            self._enter(Phase.WEIGHTS, t)
            if "Load weight begin" in message:
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

    def _concurrency(self, match: object) -> None:
        groups = match.groups()  # type: ignore[attr-defined]
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
        stats = "Avg prompt throughput: " in message  # in every match of both patterns
        if stats and (
            match := p.VLLM_ENGINE_STATS.search(message) or p.VLLM_OLD_STATS.search(message)
        ):
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
        elif "Decode batch." in message and (match := p.SGLANG_DECODE.search(message)):
            self._stats = EngineStats(
                prompt_tokens_per_s=None,
                generation_tokens_per_s=p.number(match.group(3)),
                running_reqs=int(match.group(1)),
                waiting_reqs=int(match.group(4)),
                kv_cache_usage_pct=(p.number(match.group(2)) or 0.0) * 100,
                prefix_cache_hit_pct=None,
                at_s=t,
            )

    def observe_memory(self, used_bytes: int, at_s: float | None = None) -> None:
        """Total GPU memory in use (all GPUs of the service), for the fill-rate ETA."""
        self._memory.append((at_s if at_s is not None else time.time(), used_bytes))

    def observe_exit(self, exit_status: int | None, at_s: float | None = None) -> None:
        """The server process (or unit) ended: a load that dies is a failed load."""
        t = at_s if at_s is not None else time.time()
        if self.phase in LOADING_PHASES and self._load_started is not None:
            self._enter_failed(t)
            if self._failure_line is None:
                self._failure_line = f"process exited with status {exit_status}"
        elif self.phase == Phase.SERVING:
            self._stop(t)

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
