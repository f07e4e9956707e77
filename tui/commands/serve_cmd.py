"""`servedeck serve`: the console in a browser, one console process per visit.

Safe by default: bound to 127.0.0.1 (reach it through `ssh -L`), read-only unless
--allow-actions, a random token on every request, at most --max-visitors at once.
"""

from __future__ import annotations

import argparse

from tui.commands.demo_cmd import demo_load_seconds

DEFAULT_PORT = 8765
DEFAULT_MAX_VISITORS = 4
DEFAULT_DEMO_LOAD_S = 45.0  # tui.commands.demo_cmd.DEFAULT_LOAD_S


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "serve",
        parents=[common],
        help="serve the console to a browser (read-only, token-protected)",
        description="Serve the console to a web browser: each visit gets its own console "
        "process. Listens on 127.0.0.1 by default (reach it with the ssh -L command it "
        "prints); every request needs the random token in the printed URL; read-only "
        "unless --allow-actions.",
    )
    parser.add_argument(
        "--port", type=_port, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT})"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="ADDRESS",
        help="address to listen on (default 127.0.0.1: only this machine, or through ssh -L)",
    )
    parser.add_argument(
        "--allow-actions",
        action="store_true",
        help="let browser visitors start/stop the service and kill processes (off by default)",
    )
    parser.add_argument(
        "--max-visitors",
        type=_visitors,
        default=DEFAULT_MAX_VISITORS,
        metavar="N",
        help=f"how many browser visitors at once (default {DEFAULT_MAX_VISITORS})",
    )
    parser.add_argument("--tls-cert", metavar="FILE", help="serve HTTPS with this certificate")
    parser.add_argument("--tls-key", metavar="FILE", help="the certificate's private key")
    parser.add_argument(
        "--load-seconds",
        type=demo_load_seconds,  # the visit's `demo --load-seconds`: refused here, not per visit
        default=DEFAULT_DEMO_LOAD_S,
        metavar="S",
        help=f"with --demo: how long the simulated model load takes (default {DEFAULT_DEMO_LOAD_S:g})",
    )
    parser.set_defaults(func=_serve)


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"expected a port 0-65535 (0: any free one), got {text!r}")
    return int(text)


def _visitors(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise argparse.ArgumentTypeError(f"expected 1-64 visitors, got {text!r}")
    return int(text)


def _serve(args: argparse.Namespace) -> int:
    from tui.web.launch import run_server

    return run_server(args)
