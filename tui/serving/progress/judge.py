"""ProgressJudge: each refresh's inputs -> the progress verdict (pure, no I/O, no clock).

The clock of a stall is the last moment tokens advanced or nothing was pending; prompt
tokens advancing count too (a long prefill makes no output token and is no stall). While
the log says a load runs, or a benchmark warms up, there is no stall verdict at all.

vLLM's running and waiting gauges are the EngineCore's last published stats: while a rank
is stopped (state T) they are frozen, and a core stopped between two steps leaves them at 0
with requests in flight in the API server. So while a rank is stopped, "0 running, 0
waiting" is no evidence of idle (unless the counts moved during the stop: then they are
live, and 0 is 0). Work was under way at the stop when the reading before it
was serving, or when the log shows a generation request after that reading (a stream's
access line is written as it begins); then the stall clock runs from the
last token. Token deltas alone are no such evidence: the last requests' tail advances them
as the engine goes idle. Otherwise the verdict is `unknown` (nothing is known to wait, yet
a request sent now would), never `idle`.

The gauges are an instant, the token counters an interval: tokens generated (or prompts
computed) since the last scrape are `serving`, whatever the gauges read at the scrape. On a
loaded box the scrape is answered between the engine's steps: with four streams always in
flight, 11 of 12 scrapes of vLLM 0.32 on two busy cores read 0 running while 270-600 tok/s
were generated.
`slow` is not judged: no clean record of this box's rate at each load exists to compare
with (the bench history measures levels, not live traffic), so the state stays reserved.
"""

from __future__ import annotations

from collections import deque
from statistics import fmean

from tui.serving.progress.model import (
    ProgressInputs,
    ProgressState,
    ProgressVerdict,
    RankReading,
    RankSample,
)

GPU_BUSY_PCT = 80.0  # mean utilization at or above: the GPUs spin
GPU_IDLE_PCT = 15.0  # at or below: the GPUs wait for the CPU side
MAX_LOG_LINES = 5
STOPPED_STATES = ("T", "t")
DEAD_STATES = ("Z", "X", "x")


class ProgressJudge:
    """Keeps the last progress time, the ranks seen and the log's hang lines between refreshes."""

    def __init__(self, stall_after_s: float = 30.0) -> None:
        self.stall_after_s = stall_after_s
        self._last_progress_s: float | None = None
        self._state: ProgressState = "unknown"
        self._since_s: float | None = None
        self._kind: str | None = None
        self._root_pid: int | None = None
        self._seen: dict[int, str] = {}  # pid -> name of every rank of this engine
        self._cpu_at_progress: dict[int, int] = {}  # pid -> CPU ticks when tokens last moved
        self._log: deque[str] = deque(maxlen=MAX_LOG_LINES)
        self._stop_seen_s: float | None = None  # a rank first read stopped at
        self._pending_at_stop: int | None = None  # the counts the first stopped reading saw
        self._counts_live = False  # they moved since: not the stopped process's last word
        self._busy_at_stop = False  # work was under way when it stopped
        self._requests_logged = 0  # generation requests in the log since the last reading
        self._work_seen = False  # the last reading served with work known pending, not a tail
        self._requests_while_stopped = 0  # ... since a rank was first read stopped

    def feed_log(self, lines: list[str]) -> None:
        """Hang lines from the log (`logwords.stall_lines`): kept until tokens advance."""
        self._log.extend(lines)

    def feed_requests(self, count: int) -> None:
        """Generation requests the log showed (`logwords.request_lines`): work, for the next
        reading, whatever the gauges say."""
        self._requests_logged += count

    def update(self, inputs: ProgressInputs) -> ProgressVerdict:
        now = inputs.at_s
        self._note_ranks(inputs.ranks)
        stopped = _stopped(inputs.ranks)
        pending = _pending(inputs)
        self._note_stop(now, stopped, self._work_seen, pending, self._requests_logged)
        self._requests_logged = 0
        # The counts froze with the stopped rank, unless they moved since (published live).
        frozen_idle = bool(stopped) and pending == 0 and not self._counts_live
        advancing = _advancing(inputs)
        # Tokens moved though the gauges read 0: the engine served in the interval (a loaded
        # box answers the scrape between steps), or those were the last requests' tail. It
        # serves either way, but is no evidence of work for a stop that follows.
        tail_or_between_steps = pending == 0 and not frozen_idle and advancing
        state: ProgressState
        kind: str | None = None
        evidence: list[str] = []
        if inputs.loading:
            state, evidence = "unknown", ["the server is loading"]
            self._progress(now, inputs.ranks)
        elif frozen_idle and not self._busy_at_stop:
            state = "unknown"
            evidence = [_rank_line(r, "stopped") for r in stopped] + [
                "the request counts froze at the stop (0 running, 0 waiting then): "
                "nothing is known to wait, and a request sent now would wait"
            ]
            self._last_progress_s = now  # nothing known pending: a stall's clock starts later
        elif pending == 0 and not frozen_idle and not advancing:
            state, evidence = "idle", ["nothing running or waiting"]
            self._progress(now, inputs.ranks)
        elif pending is None or inputs.generation_tokens_per_s is None:
            state, evidence = "unknown", ["no /metrics figures yet"]
        elif advancing:
            state = "serving"
            evidence = [f"{inputs.generation_tokens_per_s:.0f} tok/s generated"]
            if tail_or_between_steps:
                evidence.append("0 running, 0 waiting at the scrape: tokens moved since the last")
            self._progress(now, inputs.ranks)
        else:
            if self._last_progress_s is None:
                self._last_progress_s = now  # first seen pending: no earlier evidence
            flat_s = now - self._last_progress_s
            if inputs.warmup:
                state, evidence = "unknown", ["a benchmark's warm-up runs"]
            elif flat_s < self.stall_after_s:
                state = "serving"  # in flight, not yet overdue (a prefill, a slow step)
                evidence = [f"no token for {flat_s:.0f} s (stall after {self.stall_after_s:g} s)"]
            else:
                state = "stalled"
                counts = f"{inputs.running_reqs} running, {inputs.waiting_reqs} waiting"
                if frozen_idle:
                    counts = f"work under way when a rank stopped (its last counts: {counts})"
                    if self._requests_while_stopped:
                        n = self._requests_while_stopped
                        counts += f"; the log shows {n} request{'s' if n != 1 else ''} since"
                evidence = [
                    f"{counts}, no generated token for {flat_s:.0f} s "
                    f"(stall after {self.stall_after_s:g} s)"
                ]
                kind, why = self._classify(inputs)
                evidence += why
        if state != self._state:
            stalled_since = self._last_progress_s if state == "stalled" else None
            self._since_s = stalled_since if stalled_since is not None else now
            self._state = state
        self._kind = kind
        self._work_seen = state in ("serving", "slow", "stalled") and not tail_or_between_steps
        return ProgressVerdict(
            state=state,
            kind=kind,
            evidence=tuple(evidence),
            since_s=self._since_s,
            at_s=now,
            stall_after_s=self.stall_after_s,
        )

    # -- bookkeeping ------------------------------------------------------------------
    def _progress(self, now: float, ranks: RankReading | None) -> None:
        self._last_progress_s = now
        self._log.clear()
        if ranks is not None:
            self._cpu_at_progress = {
                rank.pid: rank.cpu_ticks for rank in ranks.ranks if rank.cpu_ticks is not None
            }

    def _note_stop(
        self,
        now: float,
        stopped: list[RankSample],
        work_before: bool,
        pending: int | None,
        requests: int,
    ) -> None:
        """Whether work was under way when a rank stopped: the reading before it served with
        work pending (tokens alone may be the last requests' tail), or a reading from the stop
        on shows requests (frozen counts above 0, the log's request lines). Counts that move
        during the stop come from a process still running (the simulator's server, an engine
        whose stats outlive a rank): they are trusted."""
        busy = (pending or 0) > 0 or requests > 0
        if not stopped:
            self._stop_seen_s, self._busy_at_stop, self._requests_while_stopped = None, False, 0
            self._pending_at_stop, self._counts_live = None, False
        elif self._stop_seen_s is None:
            self._stop_seen_s, self._busy_at_stop = now, work_before or busy
            self._pending_at_stop = pending
        else:
            self._busy_at_stop = self._busy_at_stop or busy
            self._requests_while_stopped += requests
            self._counts_live = self._counts_live or pending != self._pending_at_stop

    def _note_ranks(self, ranks: RankReading | None) -> None:
        if ranks is None:
            return
        if ranks.root_pid != self._root_pid:  # a new engine: forget the old one's ranks
            self._root_pid = ranks.root_pid
            self._seen = {}
            self._cpu_at_progress = {}
        if ranks.root_alive:
            self._seen.update({rank.pid: rank.name for rank in ranks.ranks})

    # -- the kind ---------------------------------------------------------------------
    def _classify(self, inputs: ProgressInputs) -> tuple[str, list[str]]:
        ranks = inputs.ranks
        if ranks is not None and ranks.root_alive:
            by_pid = {rank.pid: rank for rank in ranks.ranks}
            stopped = [r for r in ranks.ranks if r.state in STOPPED_STATES]
            if stopped:
                return "rank_stopped", [_rank_line(r, "stopped") for r in stopped] + self._cpu(
                    ranks
                )
            dead = [r for r in ranks.ranks if r.state in DEAD_STATES]
            gone = [
                f"{_short(name)} (pid {pid}) gone"
                for pid, name in self._seen.items()
                if pid not in by_pid
            ]
            if dead or gone:
                return "rank_dead", [_rank_line(r, "dead") for r in dead] + gone
            blocked = [r for r in ranks.ranks if r.state == "D"]
            if blocked:
                return "rank_blocked", [_rank_line(r, "in the kernel") for r in blocked]
        if self._log or inputs.engine_healthy == 0:
            lines = [f"log: {line}" for line in self._log]
            if inputs.engine_healthy == 0:
                lines.append("vllm:engine_healthy is 0")
            return "log", lines + self._cpu(ranks)
        gpu = _gpu_line(inputs)
        if inputs.gpu_utilization_pct:
            mean = fmean(inputs.gpu_utilization_pct)
            if mean >= GPU_BUSY_PCT:
                return "gpu_spin", [gpu, *self._cpu(ranks)]
            if mean <= GPU_IDLE_PCT:
                return "cpu_block", [gpu, *self._cpu(ranks)]
        return "unknown", ([gpu] if inputs.gpu_utilization_pct else ["GPU utilization unknown"]) + (
            self._cpu(ranks) or ["ranks unknown"]
        )

    def _cpu(self, ranks: RankReading | None) -> list[str]:
        """Each rank's CPU seconds since tokens last moved: a spin burns them, a wait does not."""
        if ranks is None or not ranks.ranks:
            return []
        parts = []
        for rank in ranks.ranks[:9]:
            before = self._cpu_at_progress.get(rank.pid)
            if rank.cpu_ticks is None or before is None:
                parts.append(f"{_short(rank.name)} ?")
            else:
                parts.append(
                    f"{_short(rank.name)} {(rank.cpu_ticks - before) / ranks.clock_ticks:.1f}"
                )
        return ["CPU s since the last token: " + ", ".join(parts)]


def _stopped(ranks: RankReading | None) -> list[RankSample]:
    """The engine's stopped ranks while the engine lives (a gone root is `rank_dead`'s)."""
    if ranks is None or not ranks.root_alive:
        return []
    return [rank for rank in ranks.ranks if rank.state in STOPPED_STATES]


def _pending(inputs: ProgressInputs) -> int | None:
    if inputs.running_reqs is None and inputs.waiting_reqs is None:
        return None
    return (inputs.running_reqs or 0) + (inputs.waiting_reqs or 0)


def _advancing(inputs: ProgressInputs) -> bool:
    """Tokens generated or prompts computed since the last scrape."""
    return (inputs.generation_tokens_per_s or 0) > 0 or (inputs.prompt_tokens_per_s or 0) > 0


def _short(name: str) -> str:
    return name.removeprefix("VLLM::")


def _rank_line(rank: RankSample, what: str) -> str:
    wchan = f", wchan {rank.wchan}" if rank.wchan and rank.wchan != "0" else ""
    return f"{_short(rank.name)} (pid {rank.pid}) {what}: state {rank.state}{wchan}"


def _gpu_line(inputs: ProgressInputs) -> str:
    if not inputs.gpu_utilization_pct:
        return "GPU utilization unknown"
    util = fmean(inputs.gpu_utilization_pct)
    power = f", {sum(inputs.gpu_power_w):.0f} W" if inputs.gpu_power_w else ""
    return (
        f"GPU utilization {util:.0f} % over {len(inputs.gpu_utilization_pct)} GPUs{power}, "
        f"{inputs.running_reqs} running, {inputs.waiting_reqs} waiting"
    )
