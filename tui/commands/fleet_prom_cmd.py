"""`servedeck fleet --prometheus URL`: the fleet as a Prometheus server sees it.

`fleet_from_prometheus()` is what any `fleet` command calls for the Prometheus source;
`servedeck fleet` (tui/commands/fleet_cmd.py) takes `add_prometheus_options` and hands
`--prometheus`/`--fleet-config` here, so both sources print the same FleetRow JSON (and
the same Markdown summary). Label values are the server's choice: the text output
escapes their control characters.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Literal

from tui.cli import run_async
from tui.commands._width import hanging
from tui.core.errors import ServedeckError, UsageError
from tui.core.formatting import printable
from tui.fleet.model import FleetRow
from tui.fleet.prom_access import access_from_table
from tui.fleet.prom_query import PromFleetConfig, config_from_table, shown_url
from tui.fleet.prometheus import FleetAnswer, PrometheusFleet


def add_prometheus_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prometheus", metavar="URL", help="read the fleet from this Prometheus")
    parser.add_argument(
        "--fleet-config",
        metavar="FILE",
        type=Path,
        help='a TOML file whose [fleet] table has source = "prometheus", url, auth, queries',
    )
    parser.add_argument(
        "--host-label",
        default="instance",
        help="the label naming the host (instance, port stripped; or Hostname, host, ...)",
    )
    parser.add_argument(
        "--auth-env",
        metavar="VAR",
        help="environment variable holding a bearer token (or user:password with --basic)",
    )
    parser.add_argument("--basic", action="store_true", help="the --auth-env secret is basic auth")
    parser.add_argument(
        "--insecure", action="store_true", help="do not verify the server's TLS certificate"
    )
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME=VAR",
        help="send header NAME with the value of environment variable VAR (X-Scope-OrgID=...)",
    )
    parser.add_argument("--tls-cert", metavar="FILE", help="client certificate (PEM) for mTLS")
    parser.add_argument("--tls-key", metavar="FILE", help="its key (PEM; else in --tls-cert)")
    parser.add_argument("--tls-ca", metavar="FILE", help="CA bundle that signed the server")
    parser.add_argument(
        "--oauth2-token-url",
        metavar="URL",
        help="OAuth2 client-credentials token endpoint (--auth-env: the client secret)",
    )
    parser.add_argument("--oauth2-client-id", metavar="ID", help="the OAuth2 client id")
    parser.add_argument(
        "--oauth2-scope", action="append", default=[], metavar="SCOPE", help="an OAuth2 scope"
    )


def config_from_args(args: argparse.Namespace) -> PromFleetConfig:
    if args.fleet_config is not None:
        return _config_from_file(args.fleet_config, args.prometheus)
    url = args.prometheus
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"fleet: --prometheus {url!r}: expected an http(s):// URL")
    auth: Literal["none", "bearer", "basic", "oauth2"] = (
        "none" if not args.auth_env else ("basic" if args.basic else "bearer")
    )
    if args.oauth2_token_url or args.oauth2_client_id:
        if not args.auth_env:
            raise UsageError("fleet: OAuth2 needs --auth-env VAR (the client secret)")
        auth = "oauth2"
    headers = {}
    for item in args.header:
        name, sep, var = item.partition("=")
        if not sep or not name or not var:
            raise UsageError(f"fleet: --header {item!r}: expected NAME=ENV_VAR")
        headers[name] = var
    table = {
        "headers_env": headers,
        "tls_cert": args.tls_cert,
        "tls_key": args.tls_key,
        "tls_ca": args.tls_ca,
        "oauth2_token_url": args.oauth2_token_url,
        "oauth2_client_id": args.oauth2_client_id,
        "oauth2_scopes": args.oauth2_scope,
    }
    try:
        access = access_from_table({k: v for k, v in table.items() if v}, auth, "fleet: --")
    except ServedeckError as error:  # name the option, not the [fleet] key
        raise UsageError(str(error).replace("--.", "--").replace("_", "-")) from None
    return PromFleetConfig(
        url=url,
        host_label=args.host_label,
        auth=auth,
        auth_env=args.auth_env,
        verify_tls=not args.insecure,
        access=access,
    )


def _config_from_file(path: Path, url: str | None) -> PromFleetConfig:
    try:
        data = tomllib.loads(path.read_text())
    except OSError as error:
        raise UsageError(f"fleet: cannot read {path}: {error.strerror or error}") from error
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"fleet: {path}: {error}") from error
    table = data.get("fleet")
    if not isinstance(table, dict):
        raise UsageError(f"fleet: {path} has no [fleet] table")
    if url:
        table = {**table, "url": url}
    return config_from_table(table, f"{path}: [fleet]")


def with_deadline(config: PromFleetConfig, args: argparse.Namespace) -> PromFleetConfig:
    """`--timeout S` is the whole query's deadline (else the config's, 30 s)."""
    timeout = getattr(args, "timeout", None)
    if timeout is None:
        return config
    if not math.isfinite(timeout) or timeout <= 0:
        raise UsageError(f"fleet: --timeout {timeout:g}: expected seconds above 0")
    return replace(config, deadline_s=timeout)


async def fleet_from_prometheus(config: PromFleetConfig) -> FleetAnswer:
    """One refresh of the Prometheus fleet (one query); raises PrometheusError when down."""
    source = PrometheusFleet(config)
    try:
        await source.refresh()  # raises, or leaves its answer
        assert source.last_answer is not None
        return source.last_answer
    finally:
        await source.aclose()


def row_json(row: FleetRow) -> dict[str, object]:
    """The fleet JSON object, plus the age of the host's last good scrape and TTFT."""
    extra = {"sample_age_s": row.sample_age_s, "ttft_p50_s": row.ttft_p50_s}
    return row.to_json() | extra | {"ttft_p99_s": row.ttft_p99_s}


def _na(value: object, unit: str = "", digits: int = 0) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}{unit}"
    return f"{value}{unit}"


def _text(rows: list[FleetRow]) -> str:
    lines = []
    gib = 1024**3
    for row in rows:
        mem = (
            f"{row.gpu_mem_used_bytes / gib:.0f}/{row.gpu_mem_total_bytes / gib:.0f} GiB"
            if row.gpu_mem_used_bytes is not None and row.gpu_mem_total_bytes is not None
            else "n/a"
        )
        state = "up" if row.reachable else "DOWN"
        text = (
            f"{state}, unit {_na(row.unit_state)}, {_na(row.phase)}, ready {_na(row.health_ok)}, "
            f"{_na(row.gpu_count)} GPUs {mem}, util max {_na(row.gpu_util_pct_max, '%')}, "
            f"run {_na(row.running)} wait {_na(row.waiting)}, "
            f"gen {_na(row.gen_tok_s, ' tok/s', 1)}, leftovers {_na(row.leftovers)}, "
            f"age {_na(row.sample_age_s, ' s', 1)}"
        )
        if row.alerts:
            text += f", alerts {', '.join(row.alerts)}"
        if row.error:
            text += f"; {row.error}"
        lines.append(hanging(f"{printable(row.host):<20} ", printable(text)))
    return "\n".join(lines) if lines else "no hosts: Prometheus scrapes no targets"


def run_fleet(args: argparse.Namespace, config: PromFleetConfig | None = None) -> int:
    """Print the rows once; `config` is a group file's source (else the options name it)."""
    if config is None:
        if not args.prometheus and args.fleet_config is None:
            raise UsageError("fleet: give --prometheus URL or --fleet-config FILE")
        config = config_from_args(args)
    config = with_deadline(config, args)
    started = time.monotonic()
    answer: FleetAnswer = run_async(lambda: fleet_from_prometheus(config))  # type: ignore[assignment]
    rows = list(answer.rows)
    if args.json:
        print(json.dumps([row_json(row) for row in rows], indent=2))
    elif getattr(args, "markdown", False):
        from tui.fleet.summary import fleet_markdown

        print(fleet_markdown(rows, shown_url(config.url)), end="")
    else:
        print(_text(rows))
    hosts = f"{len(rows)} host" + ("" if len(rows) == 1 else "s")
    note = f"; {answer.note()}" if answer.note() else ""
    print(f"({hosts}, 1 query, {time.monotonic() - started:.2f} s{note})", file=sys.stderr)
    return 0
