"""Reading a recording: the merged timeline, and the recorded state at any instant.

Every lookup is a primary-key or index seek (ts_ms), so a seek in a week of
1 s ticks costs the same as in a minute of them.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tui.gpu.model import GpuBoxSnapshot, GpuStatic
from tui.record.model import KINDS, METRICS_COLUMNS, Event, MetricsRow, recorded_snapshot
from tui.record.schema import RecordingError, connect

# A seek looks this far past rows it must skip (bad ones) for the next good one.
_SEEK_ROWS = 50
# A GPU tick older than this before the asked instant is not "the state then".
MAX_TICK_AGE_S = 30.0


@dataclass(frozen=True, slots=True)
class RecordedState:
    """What the console showed (or would have) at `at_s`, rebuilt from the recording."""

    at_s: float
    gpu: GpuBoxSnapshot
    metrics: MetricsRow | None
    unit: dict[str, Any] | None  # UnitState as recorded
    unit_text: str | None
    phase: str | None
    ready: bool | None
    recent: tuple[Event, ...]  # the last events up to at_s, oldest first


def _ms(ts_s: float) -> int:
    """Milliseconds as the writer stores them (rounded), so an instant finds its own row."""
    return round(ts_s * 1000)


# The instants a row may carry: the epoch to the end of year 9999 (what localtime can show).
_MAX_TS_MS = 253_402_300_799_999


def _event(row: tuple[Any, ...]) -> Event | None:
    """The Event of a row, or None for a row no servedeck wrote (another tool or a damaged
    file): every reader skips it and counts it rather than failing the whole read."""
    ts_ms, kind, source, text, gpu, key, data = row
    if isinstance(ts_ms, bool) or not isinstance(ts_ms, int | float):
        return None
    if not 0 <= ts_ms <= _MAX_TS_MS:  # also NaN
        return None
    if not all(isinstance(value, str) for value in (kind, source, text)):
        return None
    if not (gpu is None or (isinstance(gpu, int) and 0 <= gpu < 1 << 16)):
        return None
    if not (key is None or isinstance(key, str)):
        return None
    if data is None or data == "":
        loaded: Any = {}
    elif not isinstance(data, str):
        return None
    else:
        try:
            loaded = json.loads(data)
        except ValueError:  # also RecursionError's kin: a nesting too deep is ValueError here
            return None
        if not isinstance(loaded, dict):
            return None
    return Event(ts_ms / 1000, kind, source, text, gpu, key, loaded)


def _number(value: object) -> float | int | None:
    """A metrics value as stored by the writer; anything else (text, a blob) is unknown."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) else None


class RecordingReader:
    """A read-only view of one recording; safe while a recorder writes (WAL)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = connect(path, writer=False)
        self._statics: tuple[GpuStatic, ...] | None = None
        self.bad_rows = 0  # rows skipped because no servedeck wrote them so (see `_event`)

    def _events(self, rows: list[tuple[Any, ...]]) -> list[Event]:
        """The good events of `rows`; the others are counted in `bad_rows`."""
        events = []
        for row in rows:
            event = _event(row)
            if event is None:
                self.bad_rows += 1
            else:
                events.append(event)
        return events

    @property
    def bad_rows_note(self) -> str:
        """`2 bad row(s) skipped in FILE`, or "" when every row read was good."""
        if not self.bad_rows:
            return ""
        return f"{self.bad_rows} bad row(s) skipped in {self.path}"

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RecordingReader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.Error as error:
            raise RecordingError(f"{self.path}: cannot read recording: {error}") from None

    def meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def alert_states(self) -> dict[str, tuple[float | None, float | None]]:
        """alert id -> (muted until, acknowledged at); empty for a file from before schema 2."""
        try:
            rows = self._db.execute(
                "SELECT alert_id, muted_until_s, acked_at_s FROM alert_state"
            ).fetchall()
        except sqlite3.Error:
            return {}
        return {alert_id: (muted, acked) for alert_id, muted, acked in rows}

    def span(self) -> tuple[float, float] | None:
        """First and last recorded instant (any table), or None for an empty recording."""
        rows = self._query(
            "SELECT MIN(lo), MAX(hi) FROM ("
            " SELECT MIN(ts_ms) lo, MAX(ts_ms) hi FROM gpu_ticks UNION ALL"
            " SELECT MIN(ts_ms), MAX(ts_ms) FROM events"
            f" WHERE typeof(ts_ms) IN ('integer', 'real') AND ts_ms BETWEEN 0 AND {_MAX_TS_MS}"
            " UNION ALL SELECT MIN(ts_ms), MAX(ts_ms) FROM metrics)"
        )
        lo, hi = rows[0]
        return None if lo is None else (lo / 1000, hi / 1000)

    def events(
        self,
        since_s: float | None = None,
        until_s: float | None = None,
        kinds: tuple[str, ...] = (),
        gpu: int | None = None,
        search: str = "",
        limit: int | None = None,
    ) -> list[Event]:
        """Events in time order (oldest first), filtered; kinds outside KINDS are an error."""
        unknown = [kind for kind in kinds if kind not in KINDS]
        if unknown:
            raise RecordingError(
                f"unknown event kind {unknown[0]!r}; expected one of {', '.join(KINDS)}"
            )
        where: list[str] = ["1"]
        params: list[object] = []
        if since_s is not None:
            where.append("ts_ms >= ?")
            params.append(_ms(since_s))
        if until_s is not None:
            where.append("ts_ms <= ?")
            params.append(_ms(until_s))
        if kinds:
            where.append(f"kind IN ({', '.join('?' * len(kinds))})")
            params.extend(kinds)
        if gpu is not None:
            where.append("gpu = ?")
            params.append(gpu)
        if search:
            where.append("instr(lower(text), ?) > 0")
            params.append(search.lower())
        sql = (
            "SELECT ts_ms, kind, source, text, gpu, key, data FROM events "
            f"WHERE {' AND '.join(where)} ORDER BY ts_ms, id"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return self._events(self._query(sql, params))

    def iter_events(self, **filters: Any) -> Iterator[Event]:
        yield from self.events(**filters)

    def neighbour_event(self, at_s: float, forward: bool) -> Event | None:
        """The first event strictly after (or before) `at_s`: `}` and `{` in replay."""
        op, order = (">", "ASC") if forward else ("<", "DESC")
        rows = self._query(
            "SELECT ts_ms, kind, source, text, gpu, key, data FROM events "
            f"WHERE ts_ms {op} ? AND typeof(ts_ms) IN ('integer', 'real') "
            f"ORDER BY ts_ms {order}, id {order} LIMIT {_SEEK_ROWS}",
            (_ms(at_s),),
        )
        return next(iter(self._events(rows)), None)

    def statics(self) -> tuple[GpuStatic, ...]:
        if self._statics is None:
            raw = self.meta("gpu_statics")
            try:
                self._statics = tuple(GpuStatic(**item) for item in json.loads(raw or "[]"))
            except (TypeError, ValueError):
                self._statics = ()
        return self._statics

    def gpu_at(self, at_s: float) -> GpuBoxSnapshot:
        at_ms = _ms(at_s)
        rows = self._query(
            "SELECT ts_ms, data FROM gpu_ticks WHERE ts_ms <= ? ORDER BY ts_ms DESC LIMIT 1",
            (at_ms,),
        )
        if not rows or at_ms - rows[0][0] > MAX_TICK_AGE_S * 1000:
            return recorded_snapshot(at_s, b"", self.statics())
        return recorded_snapshot(rows[0][0] / 1000, rows[0][1], self.statics())

    def gpu_series(self, since_s: float, until_s: float) -> list[GpuBoxSnapshot]:
        """Ticks in a window (for the sparklines of a replayed Deck)."""
        rows = self._query(
            "SELECT ts_ms, data FROM gpu_ticks WHERE ts_ms BETWEEN ? AND ? ORDER BY ts_ms",
            (_ms(since_s), _ms(until_s)),
        )
        return [recorded_snapshot(ts / 1000, data, self.statics()) for ts, data in rows]

    def metrics_at(self, at_s: float, max_age_s: float = 30.0) -> MetricsRow | None:
        rows = self._query(
            f"SELECT ts_ms, {', '.join(METRICS_COLUMNS)} FROM metrics WHERE ts_ms <= ? "
            "ORDER BY ts_ms DESC LIMIT 1",
            (_ms(at_s),),
        )
        if not rows or at_s - rows[0][0] / 1000 > max_age_s:
            return None
        ts_ms, *values = rows[0]
        good = [_number(value) for value in values]
        if any(
            value is not None and number is None for value, number in zip(values, good, strict=True)
        ):
            self.bad_rows += 1  # shown as unknown, never as a wrong number
        return MetricsRow(ts_ms / 1000, *good)  # type: ignore[arg-type]

    def _last(self, source: str, at_s: float) -> Event | None:
        rows = self._query(
            "SELECT ts_ms, kind, source, text, gpu, key, data FROM events "
            "WHERE source = ? AND ts_ms <= ? AND typeof(ts_ms) IN ('integer', 'real') "
            f"ORDER BY ts_ms DESC, id DESC LIMIT {_SEEK_ROWS}",
            (source, _ms(at_s)),
        )
        return next(iter(self._events(rows)), None)

    def state_at(self, at_s: float, recent: int = 20) -> RecordedState:
        unit = self._last("unit", at_s)
        load = self._last("load", at_s)
        ready = self._last("readiness", at_s)
        rows = self._query(
            "SELECT ts_ms, kind, source, text, gpu, key, data FROM events WHERE ts_ms <= ? "
            "ORDER BY ts_ms DESC, id DESC LIMIT ?",
            (_ms(at_s), recent),
        )
        phase = None
        if load is not None:
            phase = "failed" if load.text.startswith("load failed") else load.data.get("phase")
        return RecordedState(
            at_s=at_s,
            gpu=self.gpu_at(at_s),
            metrics=self.metrics_at(at_s),
            unit=unit.data if unit else None,
            unit_text=unit.text if unit else None,
            phase=phase,
            ready=bool(ready.data.get("ready")) if ready else None,
            recent=tuple(self._events(list(reversed(rows)))),
        )
