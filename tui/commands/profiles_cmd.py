"""`servedeck profiles list|check|init`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tui.errors import ServedeckError
from tui.profile_store import check_profiles, init_profile, list_profiles, load_profile


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser("profiles", help="list, check and create profiles")
    actions = parser.add_subparsers(dest="profiles_action", metavar="ACTION", required=True)
    actions.add_parser("list", help="list the profiles servedeck can find").set_defaults(func=_list)
    check = actions.add_parser("check", help="validate profile files (exit 2 on any problem)")
    check.add_argument("targets", nargs="+", metavar="PATH|NAME")
    check.set_defaults(func=_check)
    init = actions.add_parser("init", help="write a commented starter profile")
    init.add_argument("name")
    init.add_argument(
        "--dir", type=Path, default=None, help="folder to write into (default: user config dir)"
    )
    init.set_defaults(func=_init)


def _list(args: argparse.Namespace) -> int:
    entries = list_profiles()
    if not entries:
        print("no profiles found; create one with: servedeck profiles init NAME")
        return 0
    width = max(len(entry.name) for entry in entries)
    for entry in entries:
        try:
            profile = load_profile(str(entry.path))
            target = profile.service.unit or profile.service.log_file or "-"
            summary = f"{profile.host.route:<24} {target}"
        except ServedeckError as error:  # a broken profile is listed, not fatal
            summary = f"INVALID: {error}"
        print(f"{entry.name:<{width}}  {entry.where:<7}  {summary}")
    return 0


def _check(args: argparse.Namespace) -> int:
    problems = check_profiles(args.targets)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 2
    for target in args.targets:
        print(f"{target}: ok")
    return 0


def _init(args: argparse.Namespace) -> int:
    path = init_profile(args.name, args.dir)
    print(f"wrote {path}")
    return 0
