"""`servedeck mcp`: servedeck's knowledge as MCP tools for agents, over stdio or HTTP.

Read-only unless --allow-actions; over HTTP only on 127.0.0.1, with a bearer token.
The server, its tools and their results live in tui/mcp/.
"""

from __future__ import annotations

import argparse
import os

from tui.commands._target import deck_from_args, profile_from_args

DEFAULT_PORT = 8766


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "mcp",
        parents=[common],
        help="serve servedeck's tools to an agent over MCP (stdio; --http with a token)",
        description="An MCP server for agents: status, GPUs, processes, the log, the "
        "timeline, health, plan, hand-off summary, benchmark history and the quick "
        "benchmark as typed tools. Over stdio by default; --http serves streamable HTTP "
        "on 127.0.0.1 with a bearer token. Read-only unless --allow-actions.",
    )
    parser.add_argument(
        "--http", action="store_true", help="serve streamable HTTP on 127.0.0.1 (not stdio)"
    )
    parser.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        help=f"with --http: the TCP port (default {DEFAULT_PORT}; 0: any free one)",
    )
    parser.add_argument(
        "--token-file",
        metavar="FILE",
        help="with --http: the bearer token is this file's first line "
        "(else $SERVEDECK_MCP_TOKEN, else a random one printed once to stderr)",
    )
    parser.add_argument(
        "--allow-actions",
        action="store_true",
        help="offer the stop, restart and kill_leftovers tools (audited; off by default)",
    )
    parser.set_defaults(func=run_mcp)


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"expected a port 0-65535 (0: any free one), got {text!r}")
    return int(text)


def run_mcp(args: argparse.Namespace) -> int:
    import asyncio

    from tui.mcp.run import serve

    os.environ["SERVEDECK_AUDIT_VIA"] = "mcp"  # every audit record of this process says so
    http = None
    profile_from_args(args)  # a bad profile is refused before anything listens or starts
    if args.http:
        from tui.mcp.http import chosen_token, listening_socket

        token, generated = chosen_token(args.token_file)
        http = (listening_socket(args.port), token, generated)
    deck = deck_from_args(args)
    asyncio.run(serve(deck, allow_actions=args.allow_actions, http=http))
    return 0
