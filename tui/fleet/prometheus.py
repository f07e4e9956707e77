"""The fleet from a Prometheus server: FleetRows from dcgm-exporter, vLLM and servedeck series.

One refresh is ONE instant query (`/api/v1/query`, POST) whatever the number of hosts:
every column is an aggregation by host over all hosts, tagged with a `servedeck_column`
label, and the columns are joined with `or`. Which label names the host is configurable
(`instance`, with its port stripped so a box's exporters on different ports meet, or
`Hostname`, `host`, ...). A series that is stale or missing stays None in the row, and
the age of each host's last successful scrape is reported, so a dead exporter never reads
as an idle GPU.
"""

from __future__ import annotations

import base64
import json
import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import httpx

from tui.core.errors import HostError, ServedeckError
from tui.fleet.model import FleetRow

MIB = 1024**2
HOST_KEY = "servedeck_host"
COLUMN_KEY = "servedeck_column"
AuthKind = Literal["none", "bearer", "basic"]


@dataclass(frozen=True, slots=True)
class Column:
    """One aggregation by host: `agg by (host, *by) (expr)`."""

    agg: str
    expr: str
    by: tuple[str, ...] = ()
    outer: str = "{}"  # applied to the aggregation, e.g. histogram_quantile(0.5, {})


def default_columns(rate_window: str, stale_window: str) -> dict[str, Column]:
    """The PromQL of each column, built on dcgm-exporter's, vLLM's and servedeck's names."""
    used, free = "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"
    ttft = f"rate(vllm:time_to_first_token_seconds_bucket[{rate_window}])"
    return {
        # scrape health, per job: is it up now, and how old is its last good scrape
        "up": Column("min", "up", ("job",)),
        # a fresh target: its last scrape's own timestamp; a failing one: the last time it
        # was seen up, at the subquery's step
        "age_s": Column(
            "max",
            "((time() - timestamp(up)) and (up == 1))"
            f" or (time() - max_over_time(timestamp(up == 1)[{stale_window}:5s]))",
            ("job",),
        ),
        "gpu_count": Column("count", used),
        "gpu_mem_used_mib": Column("sum", used),
        "gpu_mem_total_mib": Column("sum", f"{used} + {free}"),
        "gpu_mem_used_pct_max": Column("max", f"100 * {used} / ({used} + {free})"),
        "gpu_util_pct_sum": Column("sum", "DCGM_FI_DEV_GPU_UTIL"),
        "gpu_util_pct_max": Column("max", "DCGM_FI_DEV_GPU_UTIL"),
        "temp_c_max": Column("max", "DCGM_FI_DEV_GPU_TEMP"),
        "power_w": Column("sum", "DCGM_FI_DEV_POWER_USAGE"),
        "xid": Column("max", "DCGM_FI_DEV_XID_ERRORS > 0", ("gpu",)),
        "running": Column("sum", "vllm:num_requests_running"),
        "waiting": Column("sum", "vllm:num_requests_waiting"),
        "kv_pct": Column("max", "100 * vllm:kv_cache_usage_perc"),
        "gen_tok_s": Column("sum", f"rate(vllm:generation_tokens_total[{rate_window}])"),
        "ttft_p50_s": Column("sum", ttft, ("le",), "histogram_quantile(0.5, {})"),
        "ttft_p99_s": Column("sum", ttft, ("le",), "histogram_quantile(0.99, {})"),
        "unit_state": Column("max", "servedeck_unit_state == 1", ("state",)),
        "phase": Column("max", "servedeck_load_phase == 1", ("phase",)),
        "shards_done": Column("max", "servedeck_load_shards_done"),
        "shards_total": Column("max", "servedeck_load_shards_total"),
        "eta_s": Column("max", "servedeck_load_eta_seconds"),
        "ready": Column("max", "servedeck_ready"),
        "leftovers": Column("max", "servedeck_leftover_processes"),
        "alert": Column("max", "servedeck_alert_firing == 1", ("alert",)),
    }


@dataclass(frozen=True, slots=True)
class PromFleetConfig:
    """A profile's `[fleet]` table with `source = "prometheus"` (or `fleet --prometheus URL`)."""

    url: str
    host_label: str = "instance"
    auth: AuthKind = "none"
    auth_env: str | None = None  # bearer: the token; basic: "user:password"
    verify_tls: bool = True
    timeout_s: float = 5.0
    rate_window: str = "1m"
    stale_window: str = "15m"
    columns: Mapping[str, Column] = field(default_factory=dict)  # overrides

    def effective_columns(self) -> dict[str, Column]:
        return default_columns(self.rate_window, self.stale_window) | dict(self.columns)


def config_from_table(table: Mapping[str, Any], where: str = "[fleet]") -> PromFleetConfig:
    """Read a `[fleet]` table; a bad value is one line naming the field."""

    def text(key: str, default: str | None) -> str | None:
        value = table.get(key, default)
        if value is not None and not isinstance(value, str):
            raise ServedeckError(f"{where}.{key}: expected a string, got {value!r}")
        return value

    known = {"source", "url", "host_label", "auth", "auth_env", "verify_tls", "queries"}
    for key in table:
        if key not in known:
            raise ServedeckError(f"{where}.{key}: unknown key (known: {', '.join(sorted(known))})")
    if text("source", "prometheus") != "prometheus":
        raise ServedeckError(f'{where}.source: this reader takes source = "prometheus" only')
    url = text("url", None)
    if not url or not url.startswith(("http://", "https://")):
        raise ServedeckError(f"{where}.url: expected an http(s):// URL of a Prometheus server")
    auth = text("auth", "none")
    if auth not in ("none", "bearer", "basic"):
        raise ServedeckError(f"{where}.auth: expected none, bearer or basic, got {auth!r}")
    if auth != "none" and not text("auth_env", None):
        raise ServedeckError(
            f"{where}.auth_env: name the environment variable holding the {auth} secret"
        )
    verify = table.get("verify_tls", True)
    if not isinstance(verify, bool):
        raise ServedeckError(f"{where}.verify_tls: expected true or false")
    queries = table.get("queries", {})
    if not isinstance(queries, Mapping):
        raise ServedeckError(f'{where}.queries: expected a table of column = "agg:PromQL"')
    columns: dict[str, Column] = {}
    for name, spec in queries.items():
        agg, _, expr = str(spec).partition(":")
        if agg not in ("sum", "max", "min", "avg", "count") or not expr.strip():
            raise ServedeckError(f'{where}.queries.{name}: expected "sum|max|min|avg|count:PromQL"')
        columns[str(name)] = Column(agg, expr.strip())
    return PromFleetConfig(
        url=url,
        host_label=text("host_label", "instance") or "instance",
        auth=auth,  # type: ignore[arg-type]
        auth_env=text("auth_env", None),
        verify_tls=verify,
        columns=columns,
    )


def column_expr(config: PromFleetConfig, column: Column) -> str:
    """One column aggregated by host (the host key label is HOST_KEY)."""
    label = config.host_label
    # `instance` is host:port; strip the port so dcgm, vLLM and servedeck targets of a box meet.
    regex = "(.+?)(?::[0-9]+)?" if label == "instance" else "(.*)"
    keyed = f'label_replace({column.expr}, "{HOST_KEY}", "$1", "{label}", "{regex}")'
    by = ", ".join((HOST_KEY, *column.by))
    return column.outer.format(f"{column.agg} by ({by}) ({keyed})")


def build_query(config: PromFleetConfig, only: str | None = None) -> str:
    """Every column (or the one named) as one PromQL expression: `(col1) or (col2) or ...`."""
    parts = []
    for name, column in config.effective_columns().items():
        if only is None or name == only:
            tagged = f'"{COLUMN_KEY}", "{name}", "", ""'
            parts.append(f"label_replace({column_expr(config, column)}, {tagged})")
    return " or ".join(parts)


def pinned_column(config: PromFleetConfig, column: str, host: str) -> str:
    """One column of one host only (for query_range: a host's history, not the fleet's)."""
    selected = column_expr(config, config.effective_columns()[column])
    pin = f'label_replace(vector(1), "{HOST_KEY}", {json.dumps(host)}, "", "")'
    return f"{selected} and on ({HOST_KEY}) {pin}"


def shown_url(url: str) -> str:
    """The URL for messages: credentials written into it (user:pass@) are left out."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit(parts._replace(netloc=netloc))


class PrometheusError(HostError):
    """The Prometheus server could not be asked or refused the query."""

    exit_code = 3


def _auth_headers(config: PromFleetConfig) -> dict[str, str]:
    if config.auth == "none":
        return {}
    secret = os.environ.get(config.auth_env or "")
    if not secret:
        raise ServedeckError(
            f"fleet: environment variable {config.auth_env} (Prometheus {config.auth} auth) is not set"
        )
    if config.auth == "bearer":
        return {"Authorization": f"Bearer {secret}"}
    if ":" not in secret:
        raise ServedeckError(f"fleet: {config.auth_env} must hold user:password for basic auth")
    return {"Authorization": "Basic " + base64.b64encode(secret.encode()).decode()}


def _value(sample: Mapping[str, Any]) -> float | None:
    try:
        value = float(sample["value"][1])
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def rows_from_vector(
    result: list[Mapping[str, Any]], now_s: float, known: tuple[str, ...] = ()
) -> list[FleetRow]:
    """FleetRows from the tagged vector the combined query returns (pure: tested on its own)."""
    hosts: dict[str, dict[str, Any]] = {host: {} for host in known}
    for sample in result:
        metric = sample.get("metric") or {}
        host = metric.get(HOST_KEY)
        column = metric.get(COLUMN_KEY)
        value = _value(sample)
        if not host or not column or value is None:
            continue
        cols = hosts.setdefault(host, {})
        if column in ("up", "age_s"):
            cols.setdefault(column, {})[metric.get("job", "?")] = value
        elif column == "unit_state":
            cols[column] = metric.get("state")
        elif column == "phase":
            cols[column] = metric.get("phase")
        elif column == "alert":
            cols.setdefault("alerts", []).append(str(metric.get("alert")))
        elif column == "xid":
            cols.setdefault("alerts", []).append(f"xid-{value:g}:gpu{metric.get('gpu', '?')}")
        else:
            cols[column] = value
    return [_row(host, cols, now_s) for host, cols in sorted(hosts.items())]


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
        self._rows: list[FleetRow] = []
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                base_url=self.config.url.rstrip("/"),
                headers=_auth_headers(self.config),
                verify=self.config.verify_tls,
                timeout=httpx.Timeout(
                    self.config.timeout_s, connect=min(self.config.timeout_s, 3.0)
                ),
                follow_redirects=False,
            )
        return self._client

    async def _api(self, path: str, form: dict[str, str]) -> Any:
        self.queries_sent += 1
        url = shown_url(self.config.url)
        try:
            response = await self._http().post(path, data=form)
        except httpx.HTTPError as error:
            raise PrometheusError(
                f"prometheus {url}", f"{type(error).__name__}: {error}"
            ) from error
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict) or body.get("status") != "success":
            detail = body.get("error") if isinstance(body, dict) else response.text[:200]
            raise PrometheusError(f"prometheus {url}", f"HTTP {response.status_code}: {detail}")
        return body.get("data") or {}

    async def refresh(self) -> list[FleetRow]:
        """Every host's row. When Prometheus does not answer, the hosts seen before come
        back unreachable with the error and a growing sample age; with none seen, it raises."""
        started = time.monotonic()
        now = time.time()
        try:
            data = await self._api("/api/v1/query", {"query": self.query})
        except PrometheusError as error:
            self.last_error = str(error)
            if not self._rows:
                raise
            return [self._lost(row, str(error), now) for row in self._rows]
        finally:
            self.last_refresh_s = time.monotonic() - started
        self.last_error = None
        result = data.get("result") if isinstance(data, dict) else None
        self._rows = rows_from_vector(result if isinstance(result, list) else [], now)
        return self._rows

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
    ) -> list[Mapping[str, Any]]:
        """The matrix `/api/v1/query_range` returns for one PromQL expression (one request)."""
        form = {
            "query": query,
            "start": f"{start_s:.3f}",
            "end": f"{end_s:.3f}",
            "step": f"{step_s:g}",
        }
        data = await self._api("/api/v1/query_range", form)
        result = data.get("result") if isinstance(data, dict) else None
        return [series for series in result or [] if isinstance(series, Mapping)]

    async def history(
        self, host: str, column: str, seconds: float = 600.0, step_s: float = 15.0
    ) -> list[tuple[float, float]]:
        """(time, value) of one host's column over the last `seconds` (a sparkline)."""
        query = pinned_column(self.config, column, host)
        end = time.time()
        points: list[tuple[float, float]] = []
        for series in await self.query_range(query, end - seconds, end, step_s):
            for stamp, raw in series.get("values", []):
                value = _value({"value": [stamp, raw]})
                if value is not None:
                    points.append((float(stamp), value))
        return sorted(points)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
