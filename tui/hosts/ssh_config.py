"""Hosts as the operator names them for `ssh`: a profile's `ssh_alias` read from ~/.ssh/config.

asyncssh parses the file (Host and Match blocks, wildcards, Include, first value wins),
so servedeck reads what `ssh ALIAS` would: HostName, User, Port, IdentityFile,
ProxyJump (a comma list; each hop is itself looked up, so a hop's own ProxyJump chains
further), UserKnownHostsFile and ConnectTimeout. Keys the profile gives itself win.
StrictHostKeyChecking is never read: host keys are always checked (tui.hosts.ssh_connect).
Nothing in the file is ever run: `ssh_config_parser` skips a `Match exec` block (doctor
names it) and refuses Include loops and oversize files.

A config that cannot be read does not fail the profile: the host carries the reason
(`alias_error`) and every connect attempt reports it as one line, so one bad alias never
stops the other hosts of a fleet.
"""

from __future__ import annotations

import getpass
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tui.core.config import HostConfig, JumpHost

MAX_JUMP_DEPTH = 8
MAX_CONFIG_BYTES = 1 << 20  # what servedeck reads from an ssh config, Includes counted
_JUMP_SPEC = re.compile(
    r"^(?:ssh://)?(?:(?P<user>[^@]+)@)?(?P<host>\[[^\]]+\]|[^:]+)(?::(?P<port>\d+))?$"
)


def user_ssh_config() -> Path:
    """The file `ssh` reads first (servedeck, like asyncssh, does not read /etc/ssh/ssh_config)."""
    return Path.home() / ".ssh" / "config"


@dataclass(frozen=True, slots=True)
class AliasEntry:
    """What the ssh config says for one name (None: the config does not set it)."""

    alias: str
    hostname: str | None
    port: int | None
    user: str | None
    identity_files: tuple[str, ...]
    proxy_jump: str | None
    proxy_command: str | None
    known_hosts: tuple[str, ...]
    connect_timeout_s: float | None
    ignored_exec: tuple[str, ...] = ()  # "FILE line N": a `Match exec` block, not run


class AliasError(ValueError):
    """The ssh config cannot be read or says something servedeck cannot follow."""


def oversize_message(path: Path, top: Path) -> str:
    """Why path was not read: too big, alone or with the rest of top's Includes."""
    whole = "" if path == top else f" (Included from {top})"
    return (
        f"{path}{whole}: over the {MAX_CONFIG_BYTES >> 20} MiB servedeck reads from an ssh "
        "config with its Includes (real ones are a few KiB); not read"
    )


def lookup(alias: str, config_paths: Sequence[Path]) -> AliasEntry:
    """The options `ssh alias` would use, read by asyncssh's own config parser."""
    from tui.hosts.ssh_config_parser import load_client_config

    existing = [path for path in config_paths if path.is_file()]
    try:
        config, ignored_exec = load_client_config(existing, getpass.getuser(), alias)
    except (OSError, ValueError, UnicodeDecodeError) as error:
        raise AliasError(str(error).strip() or type(error).__name__) from None

    def strings(option: str) -> tuple[str, ...]:
        value = config.get(option)
        if value is None:
            return ()
        return tuple(str(item) for item in value) if isinstance(value, list) else (str(value),)

    port = config.get("Port")
    timeout = config.get("ConnectTimeout")
    jump = config.get("ProxyJump")
    command = config.get("ProxyCommand")
    return AliasEntry(
        alias=alias,
        hostname=str(config.get("Hostname")) if config.get("Hostname") else None,
        port=int(port) if isinstance(port, int) else None,
        user=str(config.get("User")) if config.get("User") else None,
        identity_files=strings("IdentityFile"),
        proxy_jump=None if not jump or str(jump).lower() == "none" else str(jump),
        proxy_command=None if not command or str(command).lower() == "none" else str(command),
        known_hosts=strings("UserKnownHostsFile"),
        connect_timeout_s=float(timeout) if isinstance(timeout, int) and timeout > 0 else None,
        ignored_exec=ignored_exec,
    )


def _identity(entry: AliasEntry) -> str | None:
    """The first IdentityFile that exists (ssh skips missing ones), else the first named."""
    for name in entry.identity_files:
        if Path(name).expanduser().is_file():
            return name
    return entry.identity_files[0] if entry.identity_files else None


def _jump_hops(
    spec: str, config_paths: Sequence[Path], depth: int, known: list[str], ignored: list[str]
) -> list[JumpHost]:
    """ProxyJump `[user@]host[:port],...` as hops, each looked up in the config like ssh does."""
    if depth > MAX_JUMP_DEPTH:
        raise AliasError(f"ProxyJump nests deeper than {MAX_JUMP_DEPTH} hops (a loop?)")
    hops: list[JumpHost] = []
    for part in (item.strip() for item in spec.split(",")):
        match = _JUMP_SPEC.match(part)
        if not part or match is None:
            raise AliasError(f"ProxyJump {spec!r}: cannot read the hop {part!r}")
        name = match["host"].strip("[]")
        entry = lookup(name, config_paths)
        if entry.proxy_command:
            raise AliasError(f"jump host {name}: ProxyCommand is not supported (use ProxyJump)")
        known.extend(entry.known_hosts)
        ignored.extend(entry.ignored_exec)
        if entry.proxy_jump:
            hops.extend(_jump_hops(entry.proxy_jump, config_paths, depth + 1, known, ignored))
        hops.append(
            JumpHost(
                hostname=entry.hostname or name,
                port=int(match["port"]) if match["port"] else (entry.port or 22),
                user=match["user"] or entry.user,
                identity_file=_identity(entry),
            )
        )
    return hops


def resolve_alias(config: HostConfig, config_paths: Sequence[Path] | None = None) -> HostConfig:
    """`config` with what the profile left out filled from the ssh config; never raises."""
    alias = config.ssh_alias
    if not alias:
        return config
    paths = list(config_paths) if config_paths is not None else [user_ssh_config()]
    where = ", ".join(str(path) for path in paths) or "no ssh config"
    explicit = set(config.explicit_keys)
    try:
        entry = lookup(alias, paths)
        if entry.proxy_command and "jump" not in explicit:
            raise AliasError("ProxyCommand is not supported (use ProxyJump)")
        known: list[str] = list(entry.known_hosts)
        ignored: list[str] = list(entry.ignored_exec)
        jumps = (
            tuple(_jump_hops(entry.proxy_jump, paths, 1, known, ignored))
            if entry.proxy_jump and "jump" not in explicit
            else config.jump
        )
    except AliasError as error:
        return replace(config, kind="ssh", alias_error=f"ssh alias {alias!r}: {where}: {error}")
    values: dict[str, object] = {
        "hostname": entry.hostname,
        "port": entry.port,
        "user": entry.user,
        "identity_file": _identity(entry),
        "connect_timeout_s": entry.connect_timeout_s,
    }
    changes: dict[str, object] = {}
    origins: list[tuple[str, str]] = [("ssh config", where)]
    for key, value in values.items():
        if key in explicit:
            origins.append((key, "profile"))
        elif value is not None:
            changes[key] = value
            origins.append((key, "ssh config"))
        elif key == "hostname":
            changes[key] = alias  # `ssh nosuch` tries the alias itself as the host name
            origins.append((key, "the alias itself (no HostName in the ssh config)"))
        else:
            origins.append((key, "default"))
    if "jump" in explicit:
        origins.append(("jump", "profile"))
    elif jumps:
        origins.append(("jump", f"ssh config (ProxyJump {entry.proxy_jump})"))
    if known:
        origins.append(("known_hosts", "ssh config (UserKnownHostsFile), then the usual files"))
    if ignored:
        origins.append(
            (
                "Match exec",
                f"{', '.join(dict.fromkeys(ignored))}: ignored, not run (servedeck never "
                "runs a command from an ssh config), so that block does not apply",
            )
        )
    return replace(
        config,
        kind="ssh",
        jump=jumps,
        origins=tuple(origins),
        ssh_known_hosts=tuple(dict.fromkeys(known)),
        **changes,  # type: ignore[arg-type]
    )


def route_report(config: HostConfig) -> list[str]:
    """`servedeck doctor`'s lines: the resolved route and where each value came from."""
    if not config.ssh_alias:
        return []
    if config.alias_error:
        return [config.alias_error]
    lines = [f"ssh alias {config.ssh_alias!r} -> {config.route}"]
    lines += [f"  {key}: {where}" for key, where in config.origins]
    return lines


def host_aliases(config_path: Path, pattern: str = "*") -> list[str]:
    """The concrete names of `Host` lines (no wildcards, no negations), Includes followed.

    asyncssh answers "what does NAME resolve to" but cannot list names, so this reads only
    the `Host` keyword's arguments; every value is then resolved by asyncssh.
    """
    from fnmatch import fnmatchcase

    found: list[str] = []
    seen: set[Path] = set()
    chain: list[Path] = []  # the files being read, outermost first
    total_bytes = 0

    def scan(path: Path) -> None:
        nonlocal total_bytes
        here = path.resolve()
        if here in chain:
            loop = [*chain[chain.index(here) :], here]
            raise AliasError("Include loop: " + " -> ".join(str(p) for p in loop))
        if here in seen or not path.is_file():
            return
        seen.add(here)
        try:
            size_bytes = path.stat().st_size
            total_bytes += size_bytes
            if size_bytes > MAX_CONFIG_BYTES or total_bytes > MAX_CONFIG_BYTES:
                raise AliasError(oversize_message(path, chain[0] if chain else path))
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            raise AliasError(f"{path}: {error.strerror or error}") from None
        chain.append(here)
        for line in text.splitlines():
            words = line.strip().replace("=", " ", 1).split()
            if len(words) < 2 or words[0].startswith("#"):
                continue
            keyword = words[0].lower()
            if keyword == "include":
                for item in words[1:]:
                    base = Path(item).expanduser()
                    if not base.is_absolute():
                        base = Path.home() / ".ssh" / base
                    for included in sorted(base.parent.glob(base.name)):
                        scan(included)
            elif keyword == "host":
                for name in words[1:]:
                    concrete = not any(c in name for c in "*?!")
                    if concrete and fnmatchcase(name, pattern) and name not in found:
                        found.append(name)
        chain.pop()

    scan(config_path)
    return found
