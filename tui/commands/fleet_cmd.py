"""`servedeck fleet -g GROUP` / `--demo N`: every host of a group on one screen, or as JSON."""

from __future__ import annotations

import argparse
import json
import sys
import time

from tui.cli import run_async
from tui.commands import fleet_prom_cmd
from tui.core.errors import UsageError
from tui.fleet.collector import FleetCollector, probes_for
from tui.fleet.deck_probe import HostProbe
from tui.fleet.groups import adhoc_group, load_group, ssh_alias_profile, ssh_group
from tui.fleet.model import FleetRow
from tui.fleet.prom_query import PromFleetConfig, config_from_table

JSON_TIMEOUT_S = 20.0
MAX_DEMO_HOSTS = 100


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    # Not `common` as a parent: here --demo takes the number of simulated boxes.
    parser = subparsers.add_parser(
        "fleet",
        help="several GPU boxes on one screen (a host group, or N simulated boxes)",
        epilog="exit status: 0 every host answered; 1 some host is unreachable or slow.",
    )
    parser.add_argument("-g", "--group", metavar="NAME|PATH", help="host group to show")
    parser.add_argument(
        "--demo", type=int, metavar="N", help="N light simulated boxes instead of a group"
    )
    parser.add_argument(
        "--profile",
        "-p",
        action="append",
        metavar="NAME|PATH",
        default=argparse.SUPPRESS,
        help="a profile to include (repeat it; an ad-hoc group without a group file)",
    )
    parser.add_argument(
        "--ssh",
        metavar="ALIAS[,ALIAS...]",
        help="hosts named as in ~/.ssh/config, without profiles (read-only)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON list and exit")
    parser.add_argument(
        "--markdown",
        action="store_true",
        help="print one Markdown summary of the fleet (a host table, then each host) and exit",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="S",
        help=f"seconds to wait for each host (default: {JSON_TIMEOUT_S:g} for --json, 4 in the pane)",
    )
    parser.add_argument(
        "--read-only", action="store_true", help="disable every action that changes a host"
    )

    fleet_prom_cmd.add_prometheus_options(
        parser
    )  # --prometheus URL: the same rows from a Prometheus server
    parser.set_defaults(func=run_fleet)


def probes_from_args(args: argparse.Namespace) -> tuple[list[HostProbe], object | None]:
    """The probes (and the demo fleet to close afterwards, if any)."""
    if args.demo is not None and args.group:
        raise UsageError("give either -g GROUP or --demo N, not both")
    if args.demo is not None:
        if not 1 <= args.demo <= MAX_DEMO_HOSTS:
            raise UsageError(f"--demo: expected a number of boxes from 1 to {MAX_DEMO_HOSTS}")
        from tui.fleet.demo import DemoFleet

        demo = DemoFleet(args.demo)
        return demo.probes, demo
    named = getattr(args, "profile", None) or []
    named = [named] if isinstance(named, str) else named  # `servedeck -p X fleet`
    ssh = getattr(args, "ssh", None)
    if sum(bool(source) for source in (args.group, named, ssh)) > 1:
        raise UsageError("give one of -g GROUP, -p PROFILE... or --ssh ALIAS,..., not several")
    if ssh:
        group = ssh_group(ssh)
    elif args.group:
        group = load_group(args.group, read_only=args.read_only)
    elif named:
        group = adhoc_group(named, read_only=args.read_only)
    else:
        raise UsageError(
            "fleet: name a host group with -g GROUP "
            "(or -p PROFILE..., --ssh ALIAS,..., --demo N, or --prometheus URL)"
        )
    return probes_for(group.members), None


async def collect_rows(args: argparse.Namespace) -> list[FleetRow]:
    probes, demo = probes_from_args(args)
    collector = FleetCollector(probes, host_timeout_s=args.timeout or JSON_TIMEOUT_S)
    try:
        rows = await collector.refresh()
    finally:
        await collector.close()
        if demo is not None:
            demo.close()  # type: ignore[attr-defined]
    return rows


async def collect_json(args: argparse.Namespace) -> list[dict[str, object]]:
    return [row.to_json() for row in await collect_rows(args)]


def _title(args: argparse.Namespace) -> str:
    """The fleet's name in the summary: the group, `demo`, or `hosts` for an ad-hoc one."""
    if args.group:
        return str(args.group)
    return "demo" if args.demo is not None else "hosts"


def _wants_prometheus(args: argparse.Namespace) -> bool:
    return (
        bool(getattr(args, "prometheus", None)) or getattr(args, "fleet_config", None) is not None
    )


def _names_ssh_hosts(args: argparse.Namespace) -> bool:
    return bool(
        args.group
        or getattr(args, "profile", None)
        or getattr(args, "ssh", None)
        or args.demo is not None
    )


def _group_prometheus(args: argparse.Namespace) -> PromFleetConfig | None:
    """The Prometheus source a `-g` group's [fleet] table names (`source = "prometheus"`)."""
    if not getattr(args, "group", None) or args.demo is not None:
        return None

    group = load_group(args.group, read_only=args.read_only)
    if group.prometheus is None:
        return None

    return config_from_table(group.prometheus, f"{group.path}: [fleet]")


def _group_keys(args: argparse.Namespace) -> dict[str, str]:
    """The Fleet's key remaps: a `-g` group file's [keys] table (none for other fleets)."""
    if not getattr(args, "group", None) or args.demo is not None:
        return {}

    return dict(load_group(args.group, read_only=args.read_only).keys)


def run_fleet(args: argparse.Namespace) -> int:
    prometheus = None
    group_config = _group_prometheus(args)
    if _wants_prometheus(args) or group_config is not None:
        # --prometheus/--fleet-config name the source over a group's own.
        config = fleet_prom_cmd.config_from_args(args) if _wants_prometheus(args) else None
        # Printed rows (--json, --markdown, or output that is not a terminal) come from
        # Prometheus alone.
        printed = args.json or getattr(args, "markdown", False)
        if printed or not (sys.stdin.isatty() and sys.stdout.isatty()):
            return fleet_prom_cmd.run_fleet(args, config or group_config)
        source = config or group_config
        assert source is not None
        prometheus = fleet_prom_cmd.with_deadline(source, args)
    elif getattr(args, "markdown", False):
        from tui.fleet.summary import fleet_markdown

        rows = run_async(lambda: collect_rows(args))
        assert isinstance(rows, list)
        print(fleet_markdown(rows, _title(args)), end="")
        return 0 if all(row.reachable for row in rows) else 1
    if args.json:
        started = time.monotonic()
        rows = run_async(lambda: collect_json(args))
        assert isinstance(rows, list)
        print(json.dumps(rows, indent=2, default=str))
        print(
            f"servedeck: fleet: {len(rows)} hosts in {time.monotonic() - started:.1f} s",
            file=sys.stderr,
        )
        return 0 if all(row["reachable"] for row in rows) else 1
    from tui.app.fleet_run import run_fleet_console

    # The pane: Prometheus's hosts, the group's (over SSH), or both in one table.
    no_probes: tuple[list[HostProbe], object | None] = ([], None)
    wanted = prometheus is None or _names_ssh_hosts(args)
    probes, demo = probes_from_args(args) if wanted else no_probes
    try:
        return run_fleet_console(
            probes,
            host_timeout_s=args.timeout or 4.0,
            read_only=args.read_only,
            prometheus=prometheus,
            title=_title(args),
            keys=_group_keys(args),
        )
    finally:
        if demo is not None:
            demo.close()  # type: ignore[attr-defined]


def open_group(group: str, *, read_only: bool = False) -> int:
    """`servedeck -g GROUP`: the Fleet pane, as `servedeck fleet -g GROUP` opens it."""
    args = argparse.Namespace(
        group=group, demo=None, json=False, timeout=None, read_only=read_only, prometheus=None
    )
    return run_fleet(args)


def open_ssh(spec: str) -> int:
    """`servedeck --ssh ALIAS`: the console on an ssh config alias (read-only); several: the fleet."""

    if "," in spec:
        args = argparse.Namespace(
            group=None, demo=None, json=False, timeout=None, read_only=True, ssh=spec
        )
        return run_fleet(args)
    ssh_group(spec)  # the same checks of the name as for several
    from tui.open_console import run_console

    return run_console(ssh_alias_profile(spec))
