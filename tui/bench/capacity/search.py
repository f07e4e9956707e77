"""Capacity under an SLO: the search over concurrency, its levels and its one-sentence answer.

The search brackets (x4 per level while the SLO holds, less when the measured
margins extrapolate to a crossing), then narrows the bracket: by geometric
bisection, or by interpolating the SLO margin when the highest passing level is
already close to a smoothly rising limit. It stops once every untested level
in the bracket is within `tolerance` (10 %) of the highest passing one. A level that
over-saturates (errors, preemptions, a waiting queue that keeps growing) fails
whatever its latencies. The search steers by each level's figures; the answer stands
only on levels its intervals decided (tui.bench.capacity.judge): once the bracket is
found, an undecided end is extended with more requests (up to `max_requests`; a p99
counts the busier levels' requests, tui.bench.capacity.pooled) and one still
undecided is said so. Pure logic: `tui.bench.capacity.runner` measures levels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace

from tui.bench.capacity.answer import FAILURE_LABELS
from tui.bench.uncertainty import MET, MISSED, UNDECIDED
from tui.core.errors import UsageError
from tui.core.formatting import milliseconds

DEFAULT_SLO_TEXT = "ttft_p99_ms=2000,itl_p99_ms=100,min_user_tok_s=20"
# The passing level's margin above which interpolation beats bisection.
INTERPOLATE_FROM = 0.7


@dataclass(frozen=True, slots=True)
class CapacitySlo:
    """The objectives; None switches one off. Names match `[benchmark.slo]` keys."""

    ttft_p99_ms: float | None = 2000.0
    itl_p99_ms: float | None = 100.0
    min_user_tok_s: float | None = 20.0

    def describe(self) -> str:
        parts = []
        if self.ttft_p99_ms is not None:
            parts.append(f"p99 TTFT <= {milliseconds(self.ttft_p99_ms)}")
        if self.itl_p99_ms is not None:
            parts.append(f"p99 ITL <= {milliseconds(self.itl_p99_ms)}")
        if self.min_user_tok_s is not None:
            parts.append(f">= {self.min_user_tok_s:g} tok/s each")
        return ", ".join(parts) or "no SLO"


def parse_slo(text: str, base: CapacitySlo | None = None) -> CapacitySlo:
    """`ttft_p99_ms=2000,itl_p99_ms=off,...` over `base`; a bad item is a one-line UsageError."""
    values: dict[str, float | None] = {
        f.name: getattr(base or CapacitySlo(), f.name) for f in fields(CapacitySlo)
    }
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep or name not in values:
            known = ", ".join(values)
            raise UsageError(f"--slo: unknown objective {item!r}; known: {known}")
        raw = raw.strip().lower()
        if raw in ("off", "none", ""):
            values[name] = None
            continue
        try:
            number = float(raw)
        except ValueError:
            raise UsageError(f"--slo: {name} must be a number or off, got {raw!r}") from None
        if not math.isfinite(number) or number <= 0:
            raise UsageError(f"--slo: {name} must be positive, got {raw!r}")
        values[name] = number
    return CapacitySlo(**values)


@dataclass(frozen=True, slots=True)
class ServerLevelStats:
    """The engine's account of one level, from /metrics polled while it ran."""

    samples: int = 0
    running_peak: float = 0.0
    running_mean: float = 0.0
    waiting_peak: float = 0.0
    waiting_mean: float = 0.0
    kv_usage_peak_pct: float = 0.0
    preemptions: float = 0.0
    prefix_hit_rate_pct: float | None = None  # None: no prefix-cache queries in the level
    server_ttft_mean_ms: float | None = None
    server_itl_mean_ms: float | None = None
    waiting_growing: bool = False


@dataclass(frozen=True, slots=True)
class GpuLevelStats:
    """The GPUs during one level (all GPUs of the box summed or averaged)."""

    samples: int = 0
    util_mean_pct: float = 0.0
    memory_used_peak_bytes: int = 0
    power_mean_w: float = 0.0
    tokens_per_joule: float | None = None


@dataclass(frozen=True, slots=True)
class CapacityLevel:
    """One measured level, in the server's time (simulated seconds on a fast clock)."""

    concurrency: int
    completed: int
    failed: int
    measured: int  # requests after the warm-up round
    duration_s: float
    ttft_p99_ms: float
    itl_p99_ms: float
    per_user_tok_s: float  # 1 / mean TPOT
    output_throughput: float  # tok/s over the measured window
    goodput: float  # requests/s meeting every per-request objective (vLLM's definition)
    failures: tuple[str, ...]  # objectives missed, keys of FAILURE_LABELS
    partial: bool = False
    server: ServerLevelStats | None = None
    gpu: GpuLevelStats | None = None
    # `--by rate`: the Poisson rate (req/s); `concurrency` is then the search step
    # (rate / rate step) and `peak_in_flight` the most requests the client had open.
    request_rate: float | None = None
    peak_in_flight: int = 0
    # chat, trace: the share of prompt tokens the workload meant to reuse (0-100);
    # server.prefix_hit_rate_pct is what the engine measured.
    intended_prefix_hit_rate_pct: float | None = None
    # why the client, not the server, set this level's figures (tui.bench.client_load);
    # "" when it kept up. Such a level neither meets nor misses: the search stops there.
    client_bound: str = ""
    # the 95 % interval of per_user_tok_s (tui.bench.uncertainty's mean_interval over the
    # requests' TPOT, inverted); None with fewer than two requests
    per_user_tok_s_interval: tuple[float, float] | None = None
    # objectives whose 95 % interval straddles the limit (tui.bench.capacity.judge), the
    # requests that could decide them, and how often the level was extended to try
    undecided: tuple[str, ...] = ()
    undecided_needs: tuple[int | None, ...] = ()  # per undecided objective (None: none could)
    extensions: int = 0

    def needed_requests(self, bound: int = 1 << 30) -> int | None:
        """The requests that could decide the undecided objectives that `bound` requests
        can decide, in one run; None when none can (more requests would be wasted). One
        decided here serves the levels below (`inferred`) even if this one stays open."""
        counts = [n for n in self.undecided_needs if n is not None and n <= bound]
        return max(counts) if counts else None

    @property
    def load(self) -> str:
        """The level's load in words: "24 users at once" or "4.5 requests/s"."""
        if self.request_rate is not None:
            return f"{self.request_rate:g} requests/s"
        return "1 user" if self.concurrency == 1 else f"{self.concurrency} users at once"

    @property
    def at(self) -> str:
        return (
            f"{self.request_rate:g} requests/s"
            if self.request_rate is not None
            else str(self.concurrency)
        )

    @property
    def likely_meets(self) -> bool:
        """Its figures meet the SLO (what the search steers by, not what it answers on)."""
        return (
            not self.failures and not self.partial and self.completed > 0 and not self.client_bound
        )

    @property
    def meets_slo(self) -> bool:
        """Shown to meet the SLO: its figures do and every interval lies within."""
        return self.likely_meets and not self.undecided

    @property
    def verdict(self) -> str:
        """MET, MISSED (a sign of over-saturation or an interval beyond its limit) or
        UNDECIDED (too few requests; a client-bound or cancelled level)."""
        if self.meets_slo:
            return MET
        decided = [kind for kind in self.failures if kind not in self.undecided]
        return MISSED if decided and not self.client_bound else UNDECIDED

    def margin(self, slo: CapacitySlo) -> float:
        """The binding objective's ratio to its limit (>1: missed); inf when over-saturated."""
        if any(kind in ("errors", "preemptions", "queue") for kind in self.failures):
            return math.inf
        ratios = [0.0]
        if slo.ttft_p99_ms is not None:
            ratios.append(self.ttft_p99_ms / slo.ttft_p99_ms)
        if slo.itl_p99_ms is not None:
            ratios.append(self.itl_p99_ms / slo.itl_p99_ms)
        if slo.min_user_tok_s is not None:
            ratios.append(slo.min_user_tok_s / max(self.per_user_tok_s, 1e-9))
        return max(ratios)


def level_failures(
    slo: CapacitySlo,
    *,
    ttft_p99_ms: float,
    itl_p99_ms: float,
    per_user_tok_s: float,
    failed: int,
    server: ServerLevelStats | None,
) -> tuple[str, ...]:
    """Which objectives a level misses, over-saturation signs first."""
    missed = []
    if failed:
        missed.append("errors")
    if server is not None and server.preemptions > 0:
        missed.append("preemptions")
    if server is not None and server.waiting_growing:
        missed.append("queue")
    if slo.ttft_p99_ms is not None and ttft_p99_ms > slo.ttft_p99_ms:
        missed.append("ttft")
    if slo.itl_p99_ms is not None and itl_p99_ms > slo.itl_p99_ms:
        missed.append("itl")
    if slo.min_user_tok_s is not None and per_user_tok_s < slo.min_user_tok_s:
        missed.append("user_tok_s")
    return tuple(missed)


def inferred(levels: list[CapacityLevel]) -> list[CapacityLevel]:
    """Levels whose undecided objectives a busier level's met: latencies rise with load
    (the premise of the search's bisection), so an objective shown met at 22 users is met
    at 20, and a p99 proved once near the limit need not be proved again below it."""
    met_at: dict[str, int] = {}
    for level in levels:
        if level.partial or level.client_bound or not level.measured:
            continue
        for kind in FAILURE_LABELS:
            if kind not in level.failures and kind not in level.undecided:
                met_at[kind] = max(met_at.get(kind, 0), level.concurrency)
    found = []
    for level in levels:
        pairs = [
            (kind, need)
            for kind, need in zip(level.undecided, level.undecided_needs, strict=True)
            if met_at.get(kind, 0) <= level.concurrency
        ]
        if len(pairs) == len(level.undecided):
            found.append(level)
            continue
        found.append(
            replace(
                level,
                undecided=tuple(kind for kind, _ in pairs),
                undecided_needs=tuple(need for _, need in pairs),
            )
        )
    return found


def limit_label(level: CapacityLevel) -> str:
    """What stopped a level, in words: TTFT split into queueing and prefill by the server."""
    if not level.failures:
        return ""
    first = level.failures[0]
    label = FAILURE_LABELS.get(first, first)
    if first == "ttft" and level.server is not None and level.server.samples:
        label += " (queueing)" if level.server.waiting_mean >= 0.5 else " (prefill)"
    return label


@dataclass(slots=True)
class CapacitySearch:
    """Chooses the next concurrency from the levels measured so far."""

    slo: CapacitySlo
    start: int = 1
    max_concurrency: int = 1024
    max_levels: int = 8
    tolerance: float = 0.1
    growth: int = 4
    levels: list[CapacityLevel] = field(default_factory=list)

    max_requests: int = 400  # an extended level's measured requests (a p99 needs 368)
    max_extensions: int = 2

    def record(self, level: CapacityLevel) -> None:
        """A new level, or an extended one in place of its earlier measure."""
        levels = [lv for lv in self.levels if lv.concurrency != level.concurrency]
        self.levels = inferred([*levels, level])

    def rejudged(self, levels: list[CapacityLevel]) -> None:
        """The levels judged again (their busier levels' values pooled in: runner)."""
        self.levels = inferred(levels)

    def _bounds(self, proven: bool = False) -> tuple[CapacityLevel | None, CapacityLevel | None]:
        """(highest passing level, lowest level above it that did not pass): by the
        figures, or by the verdicts (`proven`)."""
        passing = [
            lv
            for lv in self.levels
            if (lv.meets_slo if proven else lv.likely_meets and not self._settled_open(lv))
        ]
        low = max(passing, key=lambda lv: lv.concurrency, default=None)
        above = [
            lv
            for lv in self.levels
            if lv not in passing
            and not lv.client_bound
            and (not proven or not lv.partial)
            and (low is None or lv.concurrency > low.concurrency)
        ]
        high = min(above, key=lambda lv: lv.concurrency, default=None)
        return low, high

    def _extendable(self, level: CapacityLevel) -> bool:
        return (
            level.verdict == UNDECIDED
            and not level.client_bound
            and not level.partial
            and level.extensions < self.max_extensions
            and level.measured < self.max_requests
            and level.needed_requests(self.max_requests) is not None
        )

    def _settled_open(self, level: CapacityLevel) -> bool:
        """Undecided for good after the search could extend it: steered below, as below a
        miss. Where no level is run again (`max_requests` 0), the figures steer."""
        return self.max_requests > 0 and level.verdict == UNDECIDED and not self._extendable(level)

    def to_extend(self) -> CapacityLevel | None:
        """Once the figures bracket the limit: the level whose verdict the answer needs and
        more requests could give. The highest level whose figures pass, down to one shown
        to pass; then the lowest above that one, when it is undecided."""
        steering = sorted(
            (lv for lv in self.levels if lv.likely_meets), key=lambda lv: -lv.concurrency
        )
        for level in steering:
            if level.meets_slo:
                break
            if self._extendable(level):
                return level
        _best, above = self._bounds(proven=True)
        return above if above is not None and self._extendable(above) else None

    def _closed(self, low: int, high: int) -> bool:
        """Every untested level between the bounds is within `tolerance` of the passing one."""
        return high - low - 1 <= math.floor(self.tolerance * low)

    def next_concurrency(self) -> int | None:
        """The next level to measure, or None when the answer is known (or levels ran out)."""
        if not self.levels:
            return max(1, min(self.start, self.max_concurrency))
        if len(self.levels) >= self.max_levels or self.client_bound() is not None:
            return None  # a client-bound level says nothing of the server: no level beyond
        low, high = self._bounds()
        if low is None:
            smallest = min(lv.concurrency for lv in self.levels)
            return None if smallest <= 1 else max(1, smallest // self.growth)
        if high is None:
            if low.concurrency >= self.max_concurrency:
                return None
            guess = low.concurrency * self.growth
            crossing = self._extrapolate()
            if crossing is not None:
                guess = min(guess, max(round(crossing * 1.25), low.concurrency + 1))
            return min(guess, self.max_concurrency)
        lo, hi = low.concurrency, high.concurrency
        if self._closed(lo, hi):
            return None
        m_lo, m_hi = low.margin(self.slo), high.margin(self.slo)
        if m_lo >= INTERPOLATE_FROM and math.isfinite(m_hi) and m_hi > m_lo:
            # Near a smoothly rising limit: aim where the margin reaches 1, and when that is
            # next to the passing end, test the closing point (a miss ends the search).
            estimate = lo + (1.0 - m_lo) / (m_hi - m_lo) * (hi - lo)
            guess = max(round(estimate), lo + 1 + math.floor(self.tolerance * lo))
        else:
            # Far from the limit, or a knee (a flat margin, then a jump): bisect.
            guess = round(math.sqrt(lo * hi))
        return min(max(guess, lo + 1), hi - 1)

    def _extrapolate(self) -> float | None:
        """Where the two highest passing levels' margins reach 1, if they rise."""
        passing = sorted(
            (lv for lv in self.levels if lv.likely_meets), key=lambda lv: lv.concurrency
        )
        if len(passing) < 2:
            return None
        a, b = passing[-2], passing[-1]
        m_a, m_b = a.margin(self.slo), b.margin(self.slo)
        if m_b <= m_a:
            return None
        return b.concurrency + (1.0 - m_b) / (m_b - m_a) * (b.concurrency - a.concurrency)

    def answer(self) -> tuple[CapacityLevel | None, CapacityLevel | None]:
        """(highest level shown to meet the SLO, lowest level above it that did not: missed,
        or too few requests to decide)."""
        return self._bounds(proven=True)

    def client_bound(self) -> CapacityLevel | None:
        """The first level whose client could not keep up, if any."""
        return next((lv for lv in self.levels if lv.client_bound), None)
