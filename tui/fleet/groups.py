"""Host groups: a `[fleet]` file naming the profiles of several boxes, each with a label.

A group lives next to the profiles, in a `groups/` folder (./profiles/groups/NAME.toml,
then the user config dir's profiles/groups/NAME.toml), so `servedeck fleet -g lab` and
`servedeck -p kimi` look in the same places. A member is a profile name or path
(relative paths are read from the group file's folder):

    [fleet]
    description = "the serving boxes"
    hosts = ["kimi", "minimax"]          # plain names, or
    [[fleet.host]]                       # tables with a label
    profile = "glm5"
    label = "GLM-5 staging"

A group can read its rows from Prometheus instead (`source = "prometheus"`, `url`, and
the other keys of tui.fleet.prom_query.config_from_table); its members, if any, are then
the hosts whose console Enter opens, and the ones Prometheus does not scrape.

A `[keys]` table remaps the Fleet's keys by binding id, as a profile's does the console's
(`fleet.sort = "o"`; ids in README's key table).

Every problem is one line naming the file and the key (`lab.toml: fleet.host[1].profile:
profile 'x' not found ...`); a group that names no host (and no Prometheus) is an error too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tui.core.config import (
    HostConfig,
    Profile,
    TomlTable,
    keys_from,
    parse_toml,
    read_profile_bytes,
)
from tui.core.errors import ProfileError
from tui.core.profile_store import find_toml, looks_like_path, resolve_profile_path, search_dirs
from tui.hosts.profiles import load_profile_file
from tui.hosts.ssh_config import resolve_alias

GROUPS_FOLDER = "groups"
MAX_GROUP_HOSTS = 200
# The [fleet] keys of a Prometheus source (checked by tui.fleet.prom_query.config_from_table).
# (the access keys are tui.fleet.prom_access.ACCESS_KEYS, written out: no httpx import here)
PROMETHEUS_KEYS = (
    *("url", "host_label", "auth", "auth_env", "verify_tls", "queries", "headers_env"),
    *("tls_cert", "tls_key", "tls_ca", "oauth2_token_url", "oauth2_client_id", "oauth2_scopes"),
)


@dataclass(frozen=True, slots=True)
class FleetMember:
    """One box of a group: its profile and the label the operator gave it."""

    profile: Profile
    label: str = ""

    @property
    def name(self) -> str:
        return self.profile.name


@dataclass(frozen=True, slots=True)
class FleetGroup:
    name: str
    path: Path | None
    members: tuple[FleetMember, ...]
    description: str = ""
    prometheus: Mapping[str, Any] | None = None  # the [fleet] table of a Prometheus source
    keys: Mapping[str, str] = field(default_factory=dict)  # [keys]: the Fleet's remaps by id


def group_dirs() -> list[tuple[str, Path]]:
    """Where groups are looked up by name, in order (beside the profile folders)."""
    return [(where, folder / GROUPS_FOLDER) for where, folder in search_dirs()]


def resolve_group_path(name_or_path: str) -> Path:
    """An explicit path, then ./profiles/groups/NAME.toml, then the user config dir's."""
    return find_toml(name_or_path, "group", group_dirs())


def _member_profile(ref: str, group_path: Path) -> Profile:
    if looks_like_path(ref) and not Path(ref).expanduser().is_absolute():
        ref = str(group_path.parent / ref)
    return load_profile_file(resolve_profile_path(ref))


def _members(fleet: TomlTable, path: Path, problems: list[str]) -> list[tuple[str, str, str]]:
    """(key path, profile ref, label) of every member, in file order."""
    found: list[tuple[str, str, str]] = []
    for index, ref in enumerate(fleet.strings("hosts")):
        found.append((f"fleet.hosts[{index}]", ref, ""))
    for index, table in enumerate(fleet.tables("host")):
        ref = table.string("profile", "") or ""
        label = table.string("label", "") or ""
        if not ref:
            table.problem("profile", "missing (the member's profile name or path)")
        else:
            found.append((f"fleet.host[{index}].profile", ref, label))
        table.finish()
    return found


def load_group_file(path: Path, read_only: bool = False) -> FleetGroup:
    """A valid group with every member's profile loaded, or ProfileError (one line)."""
    text = read_profile_bytes(path).decode("utf-8", errors="replace")
    data = parse_toml(text, path)
    problems: list[str] = []
    root = TomlTable(data, "", problems)
    if not root.has("fleet"):
        raise ProfileError(f"{path}: fleet: missing (a group file has a [fleet] table)")
    fleet = root.table("fleet")
    description = fleet.string("description", "") or ""
    prometheus = None
    if fleet.string("source", "ssh", choices=("ssh", "prometheus")) == "prometheus":
        # the raw keys, read (so not "unknown") here and checked where the source is made
        prometheus = {"source": "prometheus"} | {
            key: fleet._get(key) for key in PROMETHEUS_KEYS if fleet.raw(key) is not None
        }
    refs = _members(fleet, path, problems)
    fleet.finish()
    keys = keys_from(root.table("keys")) if root.has("keys") else {}
    root.finish()
    if problems:
        raise ProfileError(f"{path}: {problems[0]}")
    if not refs and prometheus is None:
        raise ProfileError(f"{path}: fleet.hosts: expected at least one member profile")
    if len(refs) > MAX_GROUP_HOSTS:
        raise ProfileError(f"{path}: fleet: {len(refs)} hosts, over the {MAX_GROUP_HOSTS} limit")
    members = []
    seen: dict[str, str] = {}
    for where, ref, label in refs:
        try:
            profile = _member_profile(ref, path)
        except ProfileError as error:
            raise ProfileError(f"{path}: {where}: {error}") from None
        if profile.name in seen:
            raise ProfileError(
                f"{path}: {where}: profile {profile.name!r} is already in the group ({seen[profile.name]})"
            )
        seen[profile.name] = where
        if read_only and not profile.read_only:
            from dataclasses import replace

            profile = replace(profile, read_only=True)
        members.append(FleetMember(profile, label))
    return FleetGroup(path.stem, path, tuple(members), description, prometheus, keys)


def load_group(name_or_path: str, read_only: bool = False) -> FleetGroup:
    """The group the command line names (`-g lab` or `-g ./lab.toml`)."""
    return load_group_file(resolve_group_path(name_or_path), read_only=read_only)


def adhoc_group(refs: list[str], read_only: bool = False) -> FleetGroup:
    """A group from profiles named on the command line (`fleet -p a -p b`)."""
    members = []
    for ref in refs:
        profile = load_profile_file(resolve_profile_path(ref))
        if read_only and not profile.read_only:
            from dataclasses import replace

            profile = replace(profile, read_only=True)
        members.append(FleetMember(profile))
    return FleetGroup("profiles", None, tuple(members))


def ssh_alias_profile(alias: str) -> Profile:
    """A read-only profile for an ssh config alias with no profile (`--ssh kimi`)."""
    host = resolve_alias(HostConfig(kind="ssh", ssh_alias=alias))
    return Profile(name=alias, read_only=True, host=host)


def ssh_group(spec: str) -> FleetGroup:
    """A group of ssh config aliases named on the command line (`fleet --ssh a,b`)."""
    names = [name.strip() for name in spec.split(",")]
    if not all(names):
        raise ProfileError(f"--ssh {spec!r}: expected ALIAS[,ALIAS...] with no empty name")
    seen: set[str] = set()
    members = []
    for name in names:
        if name in seen:
            raise ProfileError(f"--ssh: alias {name!r} is named twice")
        if len(name) > 255 or any(c.isspace() or c in "'\"\\," for c in name):
            raise ProfileError(f"--ssh: {name!r} is not an ssh config alias")
        seen.add(name)
        members.append(FleetMember(ssh_alias_profile(name)))
    if len(members) > MAX_GROUP_HOSTS:
        raise ProfileError(f"--ssh: {len(members)} hosts, over the {MAX_GROUP_HOSTS} limit")
    return FleetGroup("ssh", None, tuple(members))
