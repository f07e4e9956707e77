"""Is the client the bottleneck: send lag, event-loop lag and CPU share of one level.

A load generator that falls behind measures itself, not the server: requests leave
late (the rate asked is not the rate sent), and token times are stamped when the
loop gets round to them (ITL and TTFT grow with the client's backlog). Three signs,
each cheap enough to take during every level:
- send lag: a request's actual send minus when it was due (its arrival time in an
  open loop, the moment its slot freed in a closed one);
- loop lag: a probe task sleeps PROBE_S and records how late it wakes;
- CPU share: the process's CPU time over the level's wall time (one event loop
  cannot use more than one core).
The lags are reported as p99 (and the loop's max). The verdict asks for a sustained
lag, p90 past the limit: on a shared machine one scheduler hiccup puts the p99 of a
short level at 30-60 ms while its p90 stays under 5 ms; a starved client (nice 12 next
to a busy loop on its core) lags 100 ms at the median. A level past any limit is
client-bound: the report marks it and the capacity search never takes it for the
server's limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

PROBE_S = 0.01
SEND_LAG_LIMIT_MS = 25.0
LOOP_LAG_LIMIT_MS = 25.0
CPU_SHARE_LIMIT = 0.9


def _quantiles(values: Sequence[float]) -> tuple[float, float]:
    """Nearest-rank p90 and p99 (cheap: one sort of the level's lags)."""
    ordered = sorted(values)
    last = len(ordered) - 1
    return ordered[round(0.9 * last)], ordered[round(0.99 * last)]


@dataclass(frozen=True, slots=True)
class ClientSample:
    """One process's account of a level: its loop lag and CPU share."""

    wall_s: float
    cpu_s: float
    loop_lag_p99_ms: float | None
    loop_lag_max_ms: float | None
    loop_lag_p90_ms: float | None = None

    @property
    def cpu_share(self) -> float | None:
        return self.cpu_s / self.wall_s if self.wall_s > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "wall_s": self.wall_s,
            "cpu_s": self.cpu_s,
            "loop_lag_p99_ms": self.loop_lag_p99_ms,
            "loop_lag_max_ms": self.loop_lag_max_ms,
            "loop_lag_p90_ms": self.loop_lag_p90_ms,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClientSample:
        return cls(
            float(data["wall_s"]),
            float(data["cpu_s"]),
            data.get("loop_lag_p99_ms"),
            data.get("loop_lag_max_ms"),
            data.get("loop_lag_p90_ms"),
        )


class ClientMeter:
    """Measures this process over one level: `start()`, run the level, `stop()`."""

    def __init__(self, probe_s: float = PROBE_S) -> None:
        self.probe_s = probe_s
        self._lags_s: list[float] = []
        self._task: asyncio.Task[None] | None = None
        self._wall0 = self._cpu0 = 0.0

    def start(self) -> None:
        self._wall0, self._cpu0 = time.perf_counter(), time.process_time()
        self._task = asyncio.create_task(self._probe())

    async def _probe(self) -> None:
        clock, lags, interval = time.perf_counter, self._lags_s, self.probe_s
        while True:
            due = clock() + interval
            await asyncio.sleep(interval)
            lags.append(max(0.0, clock() - due))

    async def stop(self) -> ClientSample:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        lags = self._lags_s
        p90, p99 = _quantiles(lags) if lags else (None, None)
        return ClientSample(
            wall_s=time.perf_counter() - self._wall0,
            cpu_s=time.process_time() - self._cpu0,
            loop_lag_p99_ms=None if p99 is None else p99 * 1000,
            loop_lag_max_ms=max(lags) * 1000 if lags else None,
            loop_lag_p90_ms=None if p90 is None else p90 * 1000,
        )


@dataclass(frozen=True, slots=True)
class ClientLoad:
    """The client's side of a level; None where a sign could not be measured."""

    send_lag_p99_ms: float | None
    loop_lag_p99_ms: float | None
    loop_lag_max_ms: float | None
    cpu_share: float | None  # the busiest process's CPU time / wall time
    processes: int
    reasons: tuple[str, ...]  # the limits passed: empty when the client kept up
    send_lag_p90_ms: float | None = None
    loop_lag_p90_ms: float | None = None

    @property
    def bound(self) -> bool:
        return bool(self.reasons)

    def describe(self) -> str:
        """ "client-bound: send lag p99 140 ms > 25 ms", or "" when the client kept up."""
        return "client-bound: " + "; ".join(self.reasons) if self.reasons else ""


def client_load(send_lags_s: Iterable[float], samples: Sequence[ClientSample]) -> ClientLoad:
    """The level's client load from its requests' send lags and each process's sample."""
    lags = list(send_lags_s)
    send_p90, send_p99 = (q * 1000 for q in _quantiles(lags)) if lags else (None, None)
    loop_p90 = _worst(s.loop_lag_p90_ms for s in samples)
    loop_p99 = _worst(s.loop_lag_p99_ms for s in samples)
    cpu = _worst(s.cpu_share for s in samples)
    reasons = []
    if send_p90 is not None and send_p90 > SEND_LAG_LIMIT_MS:
        reasons.append(f"send lag p90 {send_p90:,.0f} ms > {SEND_LAG_LIMIT_MS:g} ms")
    if loop_p90 is not None and loop_p90 > LOOP_LAG_LIMIT_MS:
        reasons.append(f"event-loop lag p90 {loop_p90:,.0f} ms > {LOOP_LAG_LIMIT_MS:g} ms")
    if cpu is not None and cpu > CPU_SHARE_LIMIT:
        reasons.append(f"client CPU {100 * cpu:.0f}% of a core > {100 * CPU_SHARE_LIMIT:g}%")
    return ClientLoad(
        send_p99, loop_p99, _worst(s.loop_lag_max_ms for s in samples), cpu, len(samples),
        tuple(reasons), send_p90, loop_p90,
    )  # fmt: skip


def _worst(values: Iterable[float | None]) -> float | None:
    """The highest of the processes' figures that were measured."""
    return max((v for v in values if v is not None), default=None)


def client_load_from_dict(data: dict[str, Any] | None) -> ClientLoad | None:
    if not data:
        return None
    values = dict(data)
    values["reasons"] = tuple(values.get("reasons") or ())
    return ClientLoad(**values)


def send_lags_s(outcomes: Iterable[Any]) -> list[float]:
    """Actual send minus due time of each request that knew when it was due."""
    return [o.start_s - o.scheduled_s for o in outcomes if o.scheduled_s > 0 and o.start_s > 0]
