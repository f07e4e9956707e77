"""Live SLO figures from /metrics: cumulative counters kept over sliding windows (pure).

A window's figure is the delta between the newest scrape and the newest one at least the
window old, so a p99 describes the requests that finished inside the window. A p99 is
interpolated inside the histogram bucket that holds it (Prometheus' histogram_quantile)
and carries that bucket's bounds: the figure is never finer than the server's buckets
(vLLM's request-phase histograms start at 0.3 s). A window not yet covered by scrapes,
or with no request in it, is unknown (None), never zero.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from tui.core.alert_rules import LiveSlo

E2E = ("vllm:e2e_request_latency_seconds", "sglang:e2e_request_latency_seconds")
FINISHED = ("vllm:request_success",)  # labelled by finished_reason
FAILED_REASONS = ("abort", "error")
LATENCIES = ("ttft", "itl", "e2e")
LATENCY_WORDS = {"ttft": "TTFT", "itl": "ITL", "e2e": "E2E"}
Buckets = tuple[tuple[float, float], ...]  # (upper bound, cumulative count), +Inf last


class Scrape(Protocol):
    """What a parsed /metrics page offers (`tui.serving.metrics.MetricsScrape`)."""

    @property
    def at_s(self) -> float: ...

    def histogram(self, names: tuple[str, ...]) -> Buckets | None: ...

    def labelled(self, name: str) -> tuple[tuple[dict[str, str], float], ...]: ...

    def first(self, names: tuple[str, ...]) -> float | None: ...


@dataclass(frozen=True, slots=True)
class SloCounters:
    """One scrape's cumulative figures the windows take deltas of; None: not exposed."""

    at_s: float
    histograms: Mapping[str, Buckets]  # "ttft" | "itl" | "e2e" -> cumulative buckets
    finished: Mapping[str, float]  # finished_reason -> requests finished so far
    preemptions: float | None
    waiting: float | None


def slo_counters(
    scrape: Scrape, families: Mapping[str, tuple[str, ...]], preemptions: tuple[str, ...]
) -> SloCounters:
    """The page's cumulative latency histograms (by `families`), finish reasons, preemptions."""
    histograms = {
        key: found for key, names in families.items() if (found := scrape.histogram(names))
    }
    finished: dict[str, float] = {}
    for name in FINISHED:
        for labels, value in scrape.labelled(name):
            reason = labels.get("finished_reason", "")
            finished[reason] = finished.get(reason, 0.0) + value
    waiting = scrape.first(("vllm:num_requests_waiting", "sglang:num_queue_reqs"))
    return SloCounters(scrape.at_s, histograms, finished, scrape.first(preemptions), waiting)


@dataclass(frozen=True, slots=True)
class Quantile:
    """A quantile interpolated inside its bucket: the value and the bucket's bounds."""

    value_s: float
    lower_s: float
    upper_s: float  # inf: above the highest finite bucket (value_s is that bound)
    count: float  # requests in the window

    def text(self, what: str) -> str:
        """ "p99 TTFT 2.3 s (bucket 2.0-2.5 s)"."""
        upper = "+Inf" if math.isinf(self.upper_s) else f"{self.upper_s:g}"
        return f"p99 {what} {self.value_s:.3g} s (bucket {self.lower_s:g}-{upper} s)"


def quantile_in_bucket(q: float, cumulative: Buckets) -> Quantile | None:
    """Prometheus' histogram_quantile with the bucket it fell in; None with no request."""
    if not cumulative or cumulative[-1][1] <= 0:
        return None
    total = cumulative[-1][1]
    rank = q * total
    lower, lower_count = 0.0, 0.0
    for upper, count in cumulative:
        if count >= rank and count > lower_count:
            if math.isinf(upper):
                return Quantile(lower, lower, upper, total)
            share = (rank - lower_count) / (count - lower_count)
            return Quantile(lower + (upper - lower) * share, lower, upper, total)
        lower, lower_count = upper, count
    return Quantile(lower, lower, lower, total)


def bucket_delta(now: Buckets, before: Buckets | None) -> Buckets:
    """Counts between two scrapes; a counter that went back (a restart) gives `now` alone."""
    if before is None:
        return now
    earlier = dict(before)
    delta = tuple((upper, count - earlier.get(upper, 0.0)) for upper, count in now)
    return now if any(count < 0 for _, count in delta) else delta


@dataclass(frozen=True, slots=True)
class WindowFigures:
    """One window's figures; None where the window knows nothing."""

    span_s: float  # what the window covers (the scrapes' actual span)
    p99: Mapping[str, Quantile | None]
    finished: float | None  # requests finished in the window
    failed: float | None  # of those, aborted or errored
    preemptions: float | None
    queue_growth: float | None  # waiting requests now minus at the window's start

    @property
    def failed_ratio(self) -> float | None:
        if self.finished is None or self.failed is None or self.finished <= 0:
            return None
        return self.failed / self.finished


def _change(now: float | None, before: float | None) -> float | None:
    if now is None or before is None:
        return None
    return now - before if now >= before else now


def window_figures(now: SloCounters, start: SloCounters) -> WindowFigures:
    p99 = {
        key: quantile_in_bucket(0.99, bucket_delta(buckets, start.histograms.get(key)))
        for key, buckets in now.histograms.items()
    }
    finished = failed = None
    if now.finished:
        finished = sum(
            _change(v, start.finished.get(r, 0.0)) or 0.0 for r, v in now.finished.items()
        )
        failed = sum(
            _change(now.finished.get(r, 0.0), start.finished.get(r, 0.0)) or 0.0
            for r in FAILED_REASONS
        )
    return WindowFigures(
        span_s=now.at_s - start.at_s,
        p99=p99,
        finished=finished,
        failed=failed,
        preemptions=_change(now.preemptions, start.preemptions),
        queue_growth=None
        if now.waiting is None or start.waiting is None
        else now.waiting - start.waiting,
    )


class SlidingWindows:
    """The scrapes of the longest window; `figures(span_s)` for any window up to it."""

    def __init__(self, longest_s: float) -> None:
        self.longest_s = longest_s
        self._kept: deque[SloCounters] = deque()

    def add(self, counters: SloCounters) -> None:
        if self._kept and counters.at_s <= self._kept[-1].at_s:
            return  # the same scrape twice, or the clock went back
        self._kept.append(counters)
        # Keep one scrape at least `longest_s` old: the longest window's start.
        while len(self._kept) > 1 and counters.at_s - self._kept[1].at_s >= self.longest_s:
            self._kept.popleft()

    def figures(self, span_s: float) -> WindowFigures | None:
        """The window of `span_s` ending at the newest scrape; None until scrapes cover it."""
        if len(self._kept) < 2:
            return None
        now = self._kept[-1]
        start = None
        for counters in reversed(self._kept):
            if now.at_s - counters.at_s >= span_s:
                start = counters
                break
        return None if start is None else window_figures(now, start)


# signal -> (value, the evidence in words)
Burns = dict[str, tuple[float, str]]


def _p99_ratio(figures: WindowFigures, key: str, target_s: float) -> tuple[float, str]:
    """A window's p99 over the target (0 when no request finished in it), and its words."""
    found = figures.p99.get(key)
    if found is None:
        return 0.0, f"no request in {figures.span_s:.0f} s"
    return found.value_s / target_s, f"{found.text(LATENCY_WORDS[key])} over {figures.span_s:.0f} s"


def burn_signals(short: WindowFigures, long: WindowFigures, slo: LiveSlo) -> Burns:
    """Each SLO signal as the lower of its two windows' values, so it holds only while both
    windows are over: a spike shorter than the short window never pages, and the alert
    ends once the short window is back under. A target of 0 is off (no signal)."""
    out: Burns = {}
    for key, target_ms in (
        ("ttft", slo.ttft_p99_ms),
        ("itl", slo.itl_p99_ms),
        ("e2e", slo.e2e_p99_ms),
    ):
        if target_ms <= 0 or key not in short.p99 or key not in long.p99:
            continue
        (a, a_text), (b, b_text) = (_p99_ratio(w, key, target_ms / 1000) for w in (short, long))
        out[f"slo.{key}_p99_burn"] = (
            min(a, b),
            f"{a_text}; {b_text}; SLO p99 {LATENCY_WORDS[key]} {target_ms / 1000:g} s",
        )
    if slo.failed_pct > 0 and short.finished is not None and long.finished is not None:
        ratios = [(w.failed_ratio or 0.0, w) for w in (short, long)]
        words = "; ".join(
            f"{w.failed or 0:g} of {w.finished or 0:g} aborted or errored over {w.span_s:.0f} s"
            for _, w in ratios
        )
        out["slo.failed_burn"] = (
            min(r for r, _ in ratios) * 100 / slo.failed_pct,
            f"{words}; SLO {slo.failed_pct:g} %",
        )
    if short.preemptions is not None and long.preemptions is not None:
        out["slo.preemptions"] = (
            min(short.preemptions, long.preemptions),
            f"{short.preemptions:g} preemptions over {short.span_s:.0f} s, "
            f"{long.preemptions:g} over {long.span_s:.0f} s",
        )
    if short.queue_growth is not None and long.queue_growth is not None:
        out["slo.queue_growth"] = (
            min(short.queue_growth, long.queue_growth),
            f"waiting {short.queue_growth:+g} over {short.span_s:.0f} s, "
            f"{long.queue_growth:+g} over {long.span_s:.0f} s",
        )
    return out


class LiveSloWatch:
    """The windows of one server's scrapes and the burn signals after each."""

    def __init__(self, slo: LiveSlo) -> None:
        self.slo = slo
        self.windows = SlidingWindows(slo.long_window_s)

    def observe(self, counters: SloCounters) -> Burns:
        """Nothing until the scrapes cover the long window (unknown, never zero)."""
        self.windows.add(counters)
        short = self.windows.figures(self.slo.short_window_s)
        long = self.windows.figures(self.slo.long_window_s)
        if short is None or long is None:
            return {}
        return burn_signals(short, long, self.slo)
