"""The fleet from a Prometheus server: FleetRows from dcgm-exporter, vLLM and servedeck series.

One refresh is ONE instant query (`/api/v1/query`, POST) whatever the number of hosts:
every column is an aggregation by host over all hosts, tagged with a `servedeck_column`
label, and the columns are joined with `or`. Which label names the host is configurable
(`instance`, with its port stripped so a box's exporters on different ports meet, or
`Hostname`, `host`, ...). A series that is stale or missing stays None in the row, and
the age of each host's last successful scrape is reported, so a dead exporter never reads
as an idle GPU.

Nothing the server sends is trusted: a query has one deadline in all (a server trickling
bytes cannot hold it), the body is capped as decoded bytes (tui.fleet.prom_body), the
answer's shape is checked (tui.fleet.prom_answer), at most MAX_HOSTS hosts are taken and
a value no host can have is n/a.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import httpx

from tui.core.formatting import printable
from tui.fleet.model import FleetRow
from tui.fleet.prom_access import OAuth2Auth, header_values, tls_verify
from tui.fleet.prom_answer import (
    RangeSeries,
    answer_data,
    matrix_series,
    result_of,
    sane_value,
    vector_samples,
)
from tui.fleet.prom_body import MIB, BoundedBody, PrometheusError
from tui.fleet.prom_query import (
    COLUMN_KEY,
    HOST_KEY,
    PromFleetConfig,
    auth_headers,
    build_query,
    pinned_column,
    shown_url,
)
from tui.serving.progress.model import PROGRESS_STATES

__all__ = ["PrometheusError"]  # raised here, defined beside the body it may be about

MAX_HOSTS = 5_000  # hosts taken from one answer; the rest are counted, not shown


@dataclass(frozen=True, slots=True)
class FleetAnswer:
    """The rows of one answer, and what of it was left out."""

    rows: tuple[FleetRow, ...]
    skipped_series: int = 0  # result items not shaped as Prometheus's
    dropped_hosts: int = 0  # hosts past MAX_HOSTS

    def note(self) -> str | None:
        """What was left out, one line (None: nothing)."""
        parts = []
        if self.dropped_hosts:
            parts.append(f"{self.dropped_hosts:,} more hosts left out (at most {MAX_HOSTS:,})")
        if self.skipped_series:
            parts.append(f"{self.skipped_series:,} malformed series skipped")
        return "; ".join(parts) or None


def fleet_answer(
    result: list[Any], now_s: float, known: tuple[str, ...] = (), max_hosts: int = MAX_HOSTS
) -> FleetAnswer:
    """FleetRows from the tagged vector the combined query returns (pure: tested on its own).

    Items of the wrong shape are skipped and counted; past `max_hosts` hosts (first by
    name) the rest are counted, so a huge answer costs a bounded table."""
    samples, skipped = vector_samples(result)
    named = [s for s in samples if s.labels.get(HOST_KEY) and s.labels.get(COLUMN_KEY)]
    names = sorted(set(known) | {s.labels[HOST_KEY] for s in named})
    taken = set(names[:max_hosts])
    hosts: dict[str, dict[str, Any]] = {host: {} for host in known if host in taken}
    for sample in named:
        metric = sample.labels
        host, column = metric[HOST_KEY], metric[COLUMN_KEY]
        value = sane_value(column, sample.value)
        if value is None or host not in taken:
            continue
        cols = hosts.setdefault(host, {})
        if column in ("up", "age_s"):
            cols.setdefault(column, {})[metric.get("job", "?")] = value
        elif column == "unit_state":
            cols[column] = metric.get("state")
        elif column == "phase":
            cols[column] = metric.get("phase")
        elif column == "progress":  # the exporter's own words only; another is not a verdict
            state = metric.get("state")
            cols[column] = state if state in PROGRESS_STATES else None
        elif column == "alert":
            cols.setdefault("alerts", []).append(str(metric.get("alert")))
        elif column == "xid":
            cols.setdefault("alerts", []).append(f"xid-{value:g}:gpu{metric.get('gpu', '?')}")
        else:
            cols[column] = value
    rows = tuple(_row(host, cols, now_s) for host, cols in sorted(hosts.items()))
    return FleetAnswer(rows, skipped, max(0, len(names) - max_hosts))


def fleet_answer_from_body(
    body: bytes | bytearray, status_code: int, where: str, now_s: float
) -> FleetAnswer:
    """The rows of an instant query's body as read (pure): any body that is not a
    Prometheus vector answer is one PrometheusError line, never another exception."""
    return fleet_answer(result_of(answer_data(body, status_code, where), "vector", where), now_s)


def rows_from_vector(
    result: list[Any], now_s: float, known: tuple[str, ...] = ()
) -> list[FleetRow]:
    """The rows alone of `fleet_answer`."""
    return list(fleet_answer(result, now_s, known).rows)


def _int(value: float | None) -> int | None:
    return None if value is None else round(value)


def _row(host: str, cols: Mapping[str, Any], now_s: float) -> FleetRow:
    up: dict[str, float] = cols.get("up", {})
    ages: dict[str, float] = cols.get("age_s", {})
    down = sorted(job for job, value in up.items() if value < 1)
    reachable = any(value >= 1 for value in up.values())
    age = max(ages.values()) if ages else None
    error = None
    if down:
        last = (
            f"last good scrape {ages[down[0]]:.0f} s ago"
            if down[0] in ages
            else "no good scrape in the window"
        )
        error = f"stale: scrape of {', '.join(down)} failing ({last})"
    elif not up:
        error = "no scrape targets for this host"
    used = cols.get("gpu_mem_used_mib")
    total = cols.get("gpu_mem_total_mib")
    ready = cols.get("ready")
    return FleetRow(
        host=host,
        reachable=reachable,
        source="prometheus",
        unit_state=cols.get("unit_state"),
        phase=cols.get("phase"),
        shards_done=_int(cols.get("shards_done")),
        shards_total=_int(cols.get("shards_total")),
        eta_s=cols.get("eta_s"),
        health_ok=None if ready is None else ready >= 1,
        progress=cols.get("progress"),
        running=_int(cols.get("running")),
        waiting=_int(cols.get("waiting")),
        kv_pct=cols.get("kv_pct"),
        gen_tok_s=cols.get("gen_tok_s"),
        gpu_count=_int(cols.get("gpu_count")),
        gpu_mem_used_bytes=None if used is None else int(used) * MIB,
        gpu_mem_total_bytes=None if total is None else int(total) * MIB,
        gpu_mem_used_pct_max=cols.get("gpu_mem_used_pct_max"),
        gpu_util_pct_sum=cols.get("gpu_util_pct_sum"),
        gpu_util_pct_max=cols.get("gpu_util_pct_max"),
        temp_c_max=cols.get("temp_c_max"),
        power_w=cols.get("power_w"),
        leftovers=_int(cols.get("leftovers")),
        alerts=tuple(sorted(cols.get("alerts", ()))),
        error=error,
        sample_age_s=None if age is None else round(age, 3),
        ttft_p50_s=cols.get("ttft_p50_s"),
        ttft_p99_s=cols.get("ttft_p99_s"),
        taken_at_s=now_s,
    )


class PrometheusFleet:
    """A fleet source: `await refresh()` -> one FleetRow per host Prometheus scrapes."""

    def __init__(self, config: PromFleetConfig) -> None:
        self.config = config
        self.query = build_query(config)
        self.queries_sent = 0
        self.last_refresh_s: float | None = None
        self.last_error: str | None = None  # why the last refresh could not ask Prometheus
        self.last_answer: FleetAnswer | None = None  # the last answer read, whole
        self.where = f"prometheus {shown_url(config.url)}"  # its errors' prefix, no credentials
        self._rows: list[FleetRow] = []
        self._client: httpx.AsyncClient | None = None
        self.oauth2: OAuth2Auth | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            config = self.config
            read = min(config.timeout_s, config.deadline_s)
            verify = tls_verify(config.access, config.verify_tls)
            if config.auth == "oauth2" and config.access.oauth2 is not None:
                self.oauth2 = OAuth2Auth(config.access.oauth2, config.auth_env, verify)
            extra = header_values(config.access)
            self._client = httpx.AsyncClient(
                base_url=config.url.rstrip("/"),
                # gzip alone: the body is decoded here, under its cap (BoundedBody)
                headers={**auth_headers(config), **extra, "Accept-Encoding": "gzip"},
                auth=self.oauth2,
                verify=verify,
                timeout=httpx.Timeout(read, connect=min(read, 3.0)),
                follow_redirects=False,
            )
        return self._client

    async def _post(self, path: str, form: dict[str, str], where: str) -> tuple[int, bytearray]:
        """The status and the decoded body, read raw so its cap counts what gzip expands to."""
        async with self._http().stream("POST", path, data=form) as response:
            headers = response.headers
            body = BoundedBody(where, headers.get("content-encoding", ""))
            body.declared(headers.get("content-length", ""))
            async for chunk in response.aiter_raw():
                body.feed(chunk)
            return response.status_code, body.finish()

    async def _fetch(self, path: str, form: dict[str, str]) -> tuple[int, bytearray]:
        """The status and the decoded body, whole within the deadline; else one line."""
        self.queries_sent += 1
        where = self.where
        deadline_s = self.config.deadline_s
        try:
            async with asyncio.timeout(deadline_s):
                status, body = await self._post(path, form, where)
        except TimeoutError as error:
            raise PrometheusError(where, f"no whole answer within {deadline_s:g} s") from error
        except httpx.HTTPError as error:
            detail = printable(f"{type(error).__name__}: {error}")
            raise PrometheusError(where, detail) from error
        return status, body

    async def refresh(self) -> list[FleetRow]:
        """Every host's row. When Prometheus does not answer, the hosts seen before come
        back unreachable with the error and a growing sample age; with none seen, it raises."""
        started = time.monotonic()
        now = time.time()
        try:
            status, body = await self._fetch("/api/v1/query", {"query": self.query})
            answer = fleet_answer_from_body(body, status, self.where, now)
        except PrometheusError as error:
            self.last_error = str(error)
            if not self._rows:
                raise
            return [self._lost(row, str(error), now) for row in self._rows]
        finally:
            self.last_refresh_s = time.monotonic() - started
        self.last_error = None
        self.last_answer = answer
        self._rows = list(answer.rows)
        return self._rows

    @property
    def last_note(self) -> str | None:
        """What the last answer left out (hosts past MAX_HOSTS, malformed series)."""
        return None if self.last_answer is None else self.last_answer.note()

    @staticmethod
    def _lost(row: FleetRow, error: str, now_s: float) -> FleetRow:
        age = None if row.sample_age_s is None else row.sample_age_s + (now_s - row.taken_at_s)
        return replace(
            FleetRow(host=row.host, reachable=False, source="prometheus", label=row.label),
            error=error,
            sample_age_s=age,
            taken_at_s=now_s,
        )

    async def query_range(
        self, query: str, start_s: float, end_s: float, step_s: float
    ) -> list[RangeSeries]:
        """The matrix `/api/v1/query_range` returns for one PromQL expression (one request);
        items not shaped as series are left out."""
        form = {
            "query": query,
            "start": f"{start_s:.3f}",
            "end": f"{end_s:.3f}",
            "step": f"{step_s:g}",
        }
        status, body = await self._fetch("/api/v1/query_range", form)
        data = answer_data(body, status, self.where)
        return matrix_series(result_of(data, "matrix", self.where))[0]

    async def history(
        self, host: str, column: str, seconds: float = 600.0, step_s: float = 15.0
    ) -> list[tuple[float, float]]:
        """(time, value) of one host's column over the last `seconds` (a sparkline)."""
        query = pinned_column(self.config, column, host)
        end = time.time()
        points: list[tuple[float, float]] = []
        for series in await self.query_range(query, end - seconds, end, step_s):
            for stamp, raw in series.points:
                value = sane_value(column, raw)
                if value is not None:
                    points.append((stamp, value))
        return sorted(points)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        if self.oauth2 is not None:
            await self.oauth2.aclose()
