"""`servedeck profiles list|check|init`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tui.commands._width import WIDTH, hanging
from tui.core.errors import ServedeckError
from tui.core.profile_store import check_profiles, init_profile, list_profiles
from tui.hosts.identity import missing_identity_files, missing_identity_message
from tui.hosts.profiles import load_profile


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser("profiles", help="list, check and create profiles")
    actions = parser.add_subparsers(dest="profiles_action", metavar="ACTION", required=True)
    actions.add_parser("list", help="list the profiles servedeck can find").set_defaults(func=_list)
    check = actions.add_parser(
        "check",
        help="validate profile files, every one found without arguments (exit 2 on any problem)",
    )
    check.add_argument("targets", nargs="*", metavar="PATH|NAME")
    check.set_defaults(func=_check)
    init = actions.add_parser("init", help="write a commented starter profile")
    init.add_argument("name")
    init.add_argument(
        "--dir", type=Path, default=None, help="folder to write into (default: user config dir)"
    )
    init.set_defaults(func=_init)
    imports = actions.add_parser(
        "import-ssh",
        help="write profiles and a group from ~/.ssh/config's Host entries (never overwrites)",
    )
    imports.add_argument("pattern", nargs="?", default="*", help="Host names to take (glob)")
    imports.add_argument("--group", default="ssh", help="the group file to write (default: ssh)")
    imports.add_argument(
        "--dir", type=Path, default=None, help="folder to write into (default: user config dir)"
    )
    imports.set_defaults(func=_import_ssh)


def _list(args: argparse.Namespace) -> int:
    entries = list_profiles()
    if not entries:
        print("no profiles found; create one with: servedeck profiles init NAME")
        return 0
    width = max(len(entry.name) for entry in entries)
    for entry in entries:
        head = f"{entry.name:<{width}}  {entry.where:<7}  "
        try:
            profile = load_profile(str(entry.path))
            target = profile.service.unit or profile.service.log_file or "-"
        except ServedeckError as error:  # a broken profile is listed, not fatal
            print(hanging(head, f"INVALID: {error}"))
            continue
        if profile.host.alias_error:  # the profile is valid; the ssh config it names is not
            print(hanging(head, profile.host.alias_error))
            continue
        route = profile.host.route
        line = f"{head}{route:<24} {target}"
        if len(line) <= WIDTH:
            print(line)
        else:  # a jump chain is long: the unit goes on its own line, nothing is cut
            print(hanging(head, route))
            print(hanging(" " * len(head), target))
    return 0


def _check(args: argparse.Namespace) -> int:
    """Check each target on its own: the valid ones print `ok`, the others their problems."""
    targets = args.targets or [str(entry.path) for entry in list_profiles()]
    if not targets:
        print("no profiles found; create one with: servedeck profiles init NAME")
        return 0
    failed = 0
    for target in targets:
        problems = check_profiles([target])
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            failed += 1
            continue
        host = load_profile(target).host
        if host.alias_error:  # valid, but the ssh config it names cannot be followed
            print(f"{target}: {host.alias_error}", file=sys.stderr)
            failed += 1
            continue
        print(f"{target}: ok")
        # Valid, but this machine cannot connect with it: say which key file is missing.
        for name in missing_identity_files(host):
            print(f"{target}: warning: {missing_identity_message(name)}", file=sys.stderr)
    return 2 if failed else 0


def _init(args: argparse.Namespace) -> int:
    path = init_profile(args.name, args.dir)
    print(f"wrote {path}")
    return 0


def _import_ssh(args: argparse.Namespace) -> int:
    from tui.fleet.ssh_import import import_ssh_hosts

    report = import_ssh_hosts(args.pattern, folder=args.dir, group=args.group)
    for line in report.lines:
        print(line)
    return 0
