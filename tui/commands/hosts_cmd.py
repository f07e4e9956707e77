"""`servedeck hosts trust`: accept a host's SSH key after the operator checked it.

Keys are never accepted silently when connecting; this command is the one
way to add one. It shows each hop's SHA256 fingerprint, asks (unless --yes)
and appends the key to servedeck's own known_hosts. A CHANGED key is refused.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

import asyncssh

from tui.core.config import JumpHost, Profile
from tui.core.errors import UsageError
from tui.hosts.factory import trust_args
from tui.hosts.profiles import load_profile
from tui.hosts.ssh_connect import trust_route


def load_profile_arg(value: str | None, alias: str | None = None) -> Profile:
    """The profile from `--profile NAME|PATH` (the usual lookup), or `--ssh ALIAS`'s own."""
    if value and alias:
        raise UsageError("hosts trust takes --profile NAME|PATH or --ssh ALIAS, not both")
    if alias:  # an ssh config alias with no profile, as `servedeck --ssh ALIAS` opens it
        from tui.fleet.groups import ssh_group

        members = ssh_group(alias).members
        if len(members) != 1:
            raise UsageError(f"hosts trust --ssh {alias!r}: name one alias")
        return members[0].profile
    if not value:
        raise UsageError("hosts trust needs --profile NAME|PATH or --ssh ALIAS")
    return load_profile(value)


def _trust(args: argparse.Namespace) -> int:
    profile = load_profile_arg(args.profile, getattr(args, "ssh", None))
    if profile.host.kind != "ssh":
        raise UsageError(f"profile {profile.name}: host kind is {profile.host.kind!r}, not ssh")

    async def confirm(hop: JumpHost, key: asyncssh.SSHKey) -> bool:
        fingerprint = f"{key.get_algorithm()} {key.get_fingerprint('sha256')}"
        print(f"{hop.label} presents host key {fingerprint}")
        if args.yes:
            return True
        if not sys.stdin.isatty():
            raise UsageError("not a terminal: check the fingerprint, then pass --yes")
        answer = await asyncio.to_thread(input, "Trust this key? [y/N] ")
        return answer.strip().lower() in ("y", "yes")

    report = asyncio.run(trust_route(profile.host, confirm, trust_args(profile)))
    for line in report:
        print(line)
    return 0


def add_parser(subparsers: Any, common: argparse.ArgumentParser) -> None:
    hosts = subparsers.add_parser("hosts", help="SSH host keys")
    actions = hosts.add_subparsers(dest="hosts_action", metavar="ACTION", required=True)
    trust = actions.add_parser(
        "trust",
        parents=[common],
        help="show each hop's host key fingerprint and accept it after confirmation",
    )
    trust.add_argument(
        "--ssh",
        metavar="ALIAS",
        default=argparse.SUPPRESS,  # `servedeck --ssh ALIAS hosts trust` keeps ALIAS
        help="an ~/.ssh/config alias with no profile (as `servedeck --ssh ALIAS` opens it)",
    )
    trust.add_argument(
        "--yes", "-y", action="store_true", help="accept without asking (check it first!)"
    )
    trust.set_defaults(func=_trust)
