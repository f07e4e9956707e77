"""`servedeck profiles import-ssh [PATTERN]`: profiles and a group from ~/.ssh/config's Host entries.

Each concrete Host name (no wildcard) matching PATTERN becomes a profile holding only
`ssh_alias`, so the ssh config stays the one place where HostName, User and ProxyJump
live. Nothing the operator has is overwritten: an existing profile is kept (and joins
the group when it names the same alias), an existing group file is left alone.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from tui.core import paths
from tui.core.config import load_profile_file
from tui.core.errors import ServedeckError, UsageError
from tui.core.profile_store import search_dirs
from tui.fleet.groups import GROUPS_FOLDER, MAX_GROUP_HOSTS
from tui.hosts.profiles import with_route
from tui.hosts.ssh_config import AliasError, host_aliases, user_ssh_config

_PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")

_PROFILE = """\
# servedeck profile {name}, imported from {config} (Host {alias}).
# HostName, User, Port, IdentityFile and ProxyJump are read from the ssh config at
# each start; a key set here wins over it. Check it with: servedeck profiles check {path}
description = {description}
read_only = true  # set false once [service] names the unit, to allow actions

[host]
ssh_alias = {alias_toml}

[service]
engine = "vllm"
# unit = "vllm.service"
base_url = "http://127.0.0.1:8000"
"""


@dataclass
class ImportReport:
    lines: list[str] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    members: list[str] = field(default_factory=list)
    group_path: Path | None = None


def _keep_existing(path: Path, alias: str, report: ImportReport) -> None:
    """An existing profile stays as it is; it joins the group when it names the same alias."""
    try:
        existing = load_profile_file(path).host.ssh_alias
    except ServedeckError:
        existing = None
    if existing == alias:
        report.members.append(alias)
        report.lines.append(f"kept {path}: already a profile for ssh alias {alias!r}")
    else:
        report.lines.append(
            f"kept {path}: a profile named {alias!r} exists (not for this alias); "
            "not overwritten, not in the group"
        )


def import_ssh_hosts(
    pattern: str = "*",
    *,
    folder: Path | None = None,
    group: str = "ssh",
    config_path: Path | None = None,
) -> ImportReport:
    """Write a profile per matching Host entry and a group naming them; never overwrite."""
    config = config_path or user_ssh_config()
    if not config.is_file():
        raise UsageError(f"{config}: no ssh config to import from")
    if not _PROFILE_NAME.match(group):
        raise UsageError(f"--group {group!r}: use letters, digits, '.', '-' and '_' only")
    try:
        aliases = host_aliases(config, pattern)
    except AliasError as error:
        raise ServedeckError(str(error)) from None
    if not aliases:
        raise UsageError(
            f"{config}: no Host entry matches {pattern!r} (wildcard entries are skipped)"
        )
    if len(aliases) > MAX_GROUP_HOSTS:  # each profile written re-reads the config to check it
        raise UsageError(
            f"{config}: {len(aliases)} Host entries match {pattern!r}, over the "
            f"{MAX_GROUP_HOSTS} a group holds; nothing written (name fewer with PATTERN)"
        )
    target = folder or paths.user_profiles_dir()
    target.mkdir(parents=True, exist_ok=True)
    report = ImportReport()
    for alias in aliases:
        if not _PROFILE_NAME.match(alias):
            report.lines.append(f"skipped Host {alias!r}: not usable as a profile file name")
            continue
        path = target / f"{alias}.toml"
        text = _PROFILE.format(
            name=json.dumps(alias),
            config=config,
            alias=alias,
            path=path,
            description=json.dumps(f"Host {alias} from the ssh config"),
            alias_toml=json.dumps(alias),
        )
        try:
            with path.open("x", encoding="utf-8") as handle:
                handle.write(text)
        except FileExistsError:
            _keep_existing(path, alias, report)
            continue
        route = with_route(load_profile_file(path)).host
        problem = f" ({route.alias_error})" if route.alias_error else ""
        report.lines.append(f"wrote {path}: {route.route}{problem}")
        report.written.append(path)
        report.members.append(alias)
    if report.members:
        _write_group(target / GROUPS_FOLDER / f"{group}.toml", report, target)
    return report


def _write_group(path: Path, report: ImportReport, folder: Path) -> None:
    """Members by name where profiles are looked up by name; else by path from the group."""
    by_name = any(folder.resolve() == where.resolve() for _, where in search_dirs())
    refs = [name if by_name else f"../{name}.toml" for name in report.members]
    hosts = ", ".join(json.dumps(ref) for ref in refs)
    text = f'[fleet]\ndescription = "hosts imported from the ssh config"\nhosts = [{hosts}]\n'
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with path.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        report.lines.append(
            f"kept {path}: the group exists; not changed (name another with --group NAME)"
        )
        return
    report.group_path = path
    report.lines.append(
        f"wrote group {path}: {len(report.members)} host(s); open it with: "
        f"servedeck fleet -g {path.stem}"
    )
