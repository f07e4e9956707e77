"""From `servedeck serve`'s arguments to a running ConsoleServer: the console command
each visit runs, TLS, the warnings an exposed address deserves, the lines printed once.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import ipaddress
import socket
import ssl
import sys
from pathlib import Path

from tui.core.errors import UsageError
from tui.core.profile_store import resolve_profile_path
from tui.hosts.profiles import load_profile
from tui.web.server import ConsoleServer, ServeSettings, serve_until_stopped


def console_argv(args: argparse.Namespace) -> tuple[str, ...]:
    """The command one visit runs: this servedeck's console, read-only unless allowed."""
    argv = [sys.executable, "-m", "tui"]
    name = getattr(args, "profile", None)
    if name:
        argv += ["--profile", str(resolve_profile_path(name).resolve())]
    if not args.allow_actions:
        argv.append("--read-only")
    if getattr(args, "demo", False):
        argv += ["demo", "--load-seconds", f"{args.load_seconds:g}"]
    return tuple(argv)


def tls_context(cert: str | None, key: str | None) -> ssl.SSLContext | None:
    if not cert and not key:
        return None
    if not (cert and key):
        raise UsageError("--tls-cert and --tls-key go together: give both or neither")
    for flag, path in (("--tls-cert", cert), ("--tls-key", key)):
        if not Path(path).is_file():
            raise UsageError(f"{flag} {path}: no such file")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(cert, key)
    except (ssl.SSLError, OSError) as error:
        raise UsageError(
            f"--tls-cert {cert} / --tls-key {key}: not a usable pair ({error})"
        ) from None
    return context


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def tunnel_host() -> str:
    """The name another machine reaches this one by, for the `ssh -L` line: the FQDN, else
    the hostname; `<this-host>` when both name only the loopback (an `ssh root@localhost`
    typed elsewhere would tunnel to that other machine)."""
    for name in (socket.getfqdn(), socket.gethostname()):
        if name and not is_loopback(name) and not name.startswith("localhost."):
            return name
    return "<this-host>"


def announcement(settings: ServeSettings, profile_label: str) -> list[str]:
    """Printed once at start: `{url}` (with the token) and `{port}` are filled in later."""
    actions = (
        "actions ALLOWED (start/stop/kill from the browser, audited)"
        if settings.allow_actions
        else "read-only (start, stop, kill and benchmarks are refused; --allow-actions permits them)"
    )
    target = settings.bind_host if is_loopback(settings.bind_host) else "127.0.0.1"
    if ":" in target:
        target = f"[{target}]"
    return [
        f"servedeck serve: the console of {profile_label} in a browser, {actions}",
        "  open: {url}",
        f"  from another machine: ssh -N -L {{port}}:{target}:{{port}} "
        f"{getpass.getuser()}@{tunnel_host()}  (then open the URL above there)",
        f"  up to {settings.max_visitors} visitor(s) at once, each its own console process; "
        "Ctrl-C stops the server",
    ]


def run_server(args: argparse.Namespace) -> int:
    demo = bool(getattr(args, "demo", False))
    profile = load_profile(getattr(args, "profile", None), demo=demo)  # a bad profile fails here
    settings = ServeSettings(
        console_argv=console_argv(args),
        title=f"servedeck: {profile.name}",
        host_label=profile.host_label,
        bind_host=args.host,
        port=args.port,
        max_visitors=args.max_visitors,
        # A read-only profile stays read-only: the page must not claim otherwise.
        allow_actions=args.allow_actions and not profile.read_only,
        ssl_context=tls_context(args.tls_cert, args.tls_key),
    )
    if not is_loopback(args.host):
        print(
            f"servedeck serve: warning: listening on {args.host}, not only on this machine: "
            "anyone who can reach it and has the URL sees the console",
            file=sys.stderr,
        )
        if settings.ssl_context is None:
            print(
                "servedeck serve: warning: without --tls-cert/--tls-key the token crosses the "
                "network in clear text",
                file=sys.stderr,
            )
    label = f"{profile.name!r} ({settings.host_label})"
    server = ConsoleServer(settings)
    try:
        asyncio.run(serve_until_stopped(server, announcement(settings, label)))
    except OSError as error:
        raise UsageError(
            f"cannot listen on {args.host}:{args.port}: {error.strerror or error}"
        ) from None
    return 0
