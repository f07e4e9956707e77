"""`servedeck demo`: the console on the built-in simulator, with the model load already started."""

from __future__ import annotations

import argparse
import json

from tui.core.config import demo_profile
from tui.core.errors import UsageError
from tui.hosts.profiles import load_profile
from tui.open_console import run_console

# tui.compose.CONSOLE_DEMO_LOAD_S (not imported here: parsing stays fast)
DEFAULT_LOAD_S = 45.0
# --pd-role -> vLLM's kv_role (vllm/config/kv_transfer.py); faults as tui.sim.pd.FAULTS.
PD_ROLES = {"prefill": "kv_producer", "decode": "kv_consumer", "both": "kv_both"}
PD_FAULTS = ("prefill-idle", "failing")


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "demo",
        parents=[common],
        help="open the console on a simulated 8-GPU box (no GPU needed)",
        description="A simulated 8x RTX PRO 6000 box serving Kimi-K2.5 INT4 under a systemd-like "
        "unit: watch it load, benchmark it, stop it and clean up the workers it leaves behind.",
    )
    parser.add_argument(
        "--stopped", action="store_true", help="start with the service stopped (press S to start)"
    )
    parser.add_argument(
        "--load-seconds",
        type=demo_load_seconds,
        default=DEFAULT_LOAD_S,
        metavar="S",
        help=f"how long the simulated model load takes (default {DEFAULT_LOAD_S:g})",
    )
    parser.add_argument(
        "--data-parallel-size",
        type=int,
        default=1,
        metavar="N",
        help="serve with N data-parallel engines (vLLM's --data-parallel-size)",
    )
    parser.add_argument(
        "--starve-engine",
        type=int,
        default=None,
        metavar="RANK",
        help="a data-parallel engine the front end never routes to (an imbalance to find)",
    )
    parser.add_argument(
        "--pd-role",
        choices=tuple(PD_ROLES),
        default=None,
        help="serve as one side of a prefill/decode pair (vLLM's --kv-transfer-config with the "
        "NIXL connector): the Deck shows the role, KV transfers and their failures",
    )
    parser.add_argument(
        "--pd-fault",
        choices=PD_FAULTS,
        default=None,
        help="with --pd-role: prefill-idle (the proxy sends every request straight to decode: "
        "the prefill engine handles 0), or failing (every third KV transfer fails)",
    )
    parser.set_defaults(func=_demo)


def demo_server_args(args: argparse.Namespace) -> tuple[str, ...]:
    """The simulator's flags for the engine options `demo` takes."""
    out: list[str] = []
    if getattr(args, "data_parallel_size", 1) > 1:
        out += ["--data-parallel-size", str(args.data_parallel_size)]
    if getattr(args, "starve_engine", None) is not None:
        out += ["--starve-engine", str(args.starve_engine)]
    role = getattr(args, "pd_role", None)
    fault = getattr(args, "pd_fault", None)
    if fault is not None and role is None:
        raise UsageError("--pd-fault needs --pd-role (prefill, decode or both)")
    if role is not None:
        config = {"kv_connector": "NixlConnector", "kv_role": PD_ROLES[role]}
        out += ["--kv-transfer-config", json.dumps(config)]
    if fault is not None:
        out += ["--kv-transfer-fault", fault]
    return tuple(out)


def demo_load_seconds(text: str) -> float:
    """A load time the simulator can show: finite, 0.5 s to an hour (nan and -1 are refused)."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0.5 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"expected seconds between 0.5 and 3600, got {text!r}")
    return value


def _demo(args: argparse.Namespace) -> int:
    read_only = getattr(args, "read_only", False)
    # A demo-kind profile file (its own handoff notes, api_key_env, keys) or the built-in one.
    name = getattr(args, "profile", None)
    profile = load_profile(name, demo=True, read_only=read_only) if name else None
    return run_console(
        profile or demo_profile(read_only=read_only),
        demo_autostart=not args.stopped,
        demo_load_s=args.load_seconds,
        demo_server_args=demo_server_args(args),
    )
