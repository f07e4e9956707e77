"""`servedeck exporter`: serve the `servedeck_*` metrics of a profile's box on a port."""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import signal
import sys
from pathlib import Path

from tui.cli import run_async
from tui.commands._target import profile_from_args
from tui.compose import open_deck
from tui.core.config import Profile
from tui.core.errors import ServedeckError
from tui.exporter.runner import ExporterRunner
from tui.record.where import host_slug

DEFAULT_PORT = 9464


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "exporter",
        parents=[common],
        help="serve servedeck_* Prometheus metrics (unit, load, readiness, leftovers, alerts)",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (9464)")
    parser.add_argument("--address", default="0.0.0.0", help="address to bind (0.0.0.0)")
    parser.add_argument("--host-label", help="the `host` label (default: this machine's name)")
    parser.add_argument(
        "--dcgm-port",
        type=int,
        help="with --demo: also serve the simulated GPUs as dcgm-exporter does (e.g. 9400)",
    )
    parser.add_argument(
        "--install-unit",
        action="store_true",
        help="write a systemd unit that runs this exporter and print it (never enabled)",
    )
    parser.add_argument(
        "--unit-dir",
        type=Path,
        help="where --install-unit writes (default: the user's systemd/user folder)",
    )
    parser.set_defaults(func=run_exporter)


def unit_text(profile: Profile, port: int, address: str, host_label: str | None) -> str:
    """A unit that runs the exporter for this profile; secrets stay in the environment."""
    argv = [sys.executable, "-m", "tui", "exporter", "--port", str(port), "--address", address]
    if profile.path is not None:
        argv[4:4] = ["-p", str(profile.path)]
    elif profile.is_demo:
        argv.insert(4, "--demo")
    if host_label:
        argv += ["--host-label", host_label]
    env = "".join(
        f"Environment={name}={os.environ[name]}\n"
        for name in ("SERVEDECK_DATA_DIR", "SERVEDECK_CONFIG_DIR", "SERVEDECK_LOG_DIR")
        if os.environ.get(name)
    )
    return (
        "[Unit]\n"
        f"Description=servedeck Prometheus exporter for {profile.name} (port {port})\n"
        "After=network-online.target\n"
        "Wants=network-online.target\n\n"
        "[Service]\n"
        f"ExecStart={shlex.join(argv)}\n"
        f"{env}"
        "Restart=on-failure\n"
        "RestartSec=10\n"
        "NoNewPrivileges=yes\n\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )


def install_unit(profile: Profile, args: argparse.Namespace) -> Path:
    """Write the unit file and return its path; enabling it is the operator's decision."""
    config_home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    folder = args.unit_dir or config_home / "systemd" / "user"
    target = folder / f"servedeck-exporter-{host_slug(profile.name)}.service"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(unit_text(profile, args.port, args.address, args.host_label))
    except OSError as error:
        raise ServedeckError(f"cannot write {target}: {error.strerror or error}") from error
    return target


async def export(args: argparse.Namespace, profile: Profile) -> int:
    deck = open_deck(profile, demo_autostart=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    runner = ExporterRunner(deck, args.host_label)
    dcgm = None
    try:
        if args.dcgm_port is not None:  # run_exporter allows it for the demo alone
            from tui.sim.dcgm import DcgmCollector, DcgmServer, sim_xids
            from tui.sim.deck import SimDeck

            assert isinstance(deck, SimDeck), "--dcgm-port needs the demo's simulated box"
            collector = DcgmCollector(deck.box.snapshot, runner.host, sim_xids())
            dcgm = DcgmServer(collector, args.dcgm_port, args.address).start()
            print(f"simulated dcgm-exporter on {dcgm.url}", file=sys.stderr)
            print(f"simulated vLLM on {deck.base_url}/metrics", file=sys.stderr)
        serving = asyncio.create_task(runner.serve(args.port, args.address, stop))
        while not runner.bound.is_set() and not serving.done():
            await asyncio.sleep(0.05)
        if runner.port is not None:
            print(
                f"servedeck exporter for {profile.name} on http://{args.address}:{runner.port}"
                "/metrics (Ctrl-C stops)",
                file=sys.stderr,
                flush=True,
            )
        await serving
    except OSError as error:
        raise ServedeckError(
            f"exporter: cannot listen on {args.address}:{args.port}: {error.strerror or error}"
        ) from error
    finally:
        if dcgm is not None:
            dcgm.close()
        await deck.close()
    return 0


def run_exporter(args: argparse.Namespace) -> int:
    profile = profile_from_args(args)
    if args.dcgm_port is not None and not profile.is_demo:
        raise ServedeckError("exporter: --dcgm-port serves the simulator's GPUs; it needs --demo")
    if args.install_unit:
        path = install_unit(profile, args)
        print(path.read_text())
        name = path.name
        print(f"# written to {path}; not enabled. To start it:")
        if args.unit_dir is None:
            print(f"#   systemctl --user daemon-reload && systemctl --user enable --now {name}")
        else:
            print(f"#   systemctl daemon-reload && systemctl enable --now {name}")
        return 0
    result = run_async(lambda: export(args, profile))
    return int(result or 0)  # type: ignore[call-overload]
