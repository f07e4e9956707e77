"""What the fleet asks a Prometheus server: its `[prometheus]` settings, the column table
and the one instant query built from them.

Every column is an aggregation by host over all hosts, tagged with a `servedeck_column`
label, and the columns are joined with `or`, so one refresh is one query whatever the
number of hosts. The answer is read back in tui/fleet/prometheus.py.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from tui.core.errors import ServedeckError
from tui.fleet.prom_access import ACCESS_KEYS, PromAccess, access_from_table

DEFAULT_DEADLINE_S = 30.0  # one query, connect to last byte
HOST_KEY = "servedeck_host"
COLUMN_KEY = "servedeck_column"
AuthKind = Literal["none", "bearer", "basic", "oauth2"]


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
        "progress": Column("max", "servedeck_engine_progress == 1", ("state",)),
        "leftovers": Column("max", "servedeck_leftover_processes"),
        "alert": Column("max", "servedeck_alert_firing == 1", ("alert",)),
    }


@dataclass(frozen=True, slots=True)
class PromFleetConfig:
    """A profile's `[fleet]` table with `source = "prometheus"` (or `fleet --prometheus URL`)."""

    url: str
    host_label: str = "instance"
    auth: AuthKind = "none"
    auth_env: str | None = None  # bearer: the token; basic: "user:password"; oauth2: the secret
    verify_tls: bool = True
    timeout_s: float = 5.0  # each connect or read
    deadline_s: float = DEFAULT_DEADLINE_S  # the whole query, however the server trickles
    rate_window: str = "1m"
    stale_window: str = "15m"
    columns: Mapping[str, Column] = field(default_factory=dict)  # overrides
    access: PromAccess = field(default_factory=PromAccess)  # headers, mTLS, OAuth2

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
    known |= set(ACCESS_KEYS)
    for key in table:
        if key not in known:
            raise ServedeckError(f"{where}.{key}: unknown key (known: {', '.join(sorted(known))})")
    if text("source", "prometheus") != "prometheus":
        raise ServedeckError(f'{where}.source: this reader takes source = "prometheus" only')
    url = text("url", None)
    if not url or not url.startswith(("http://", "https://")):
        raise ServedeckError(f"{where}.url: expected an http(s):// URL of a Prometheus server")
    auth = text("auth", "none")
    if auth not in ("none", "bearer", "basic", "oauth2"):
        raise ServedeckError(f"{where}.auth: expected none, bearer, basic or oauth2, got {auth!r}")
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
        access=access_from_table(table, auth, where),
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


def auth_headers(config: PromFleetConfig) -> dict[str, str]:
    if config.auth in ("none", "oauth2"):  # oauth2: OAuth2Auth sets it per request
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
