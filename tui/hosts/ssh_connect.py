"""Opening SSH connections along a jump chain, with strict host key checking.

Known hosts come from the profile's file, ~/.ssh/known_hosts and servedeck's
own file; nothing is ever accepted silently. A refused key is looked at again
(with `get_server_host_key`, through the tunnel for later hops) to tell the
operator whether it is unknown (and how to accept it) or CHANGED (refused).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import asyncssh

from tui.core import paths
from tui.core.config import HostConfig, JumpHost
from tui.core.errors import HostError, HostKeyError, ServedeckError
from tui.hosts.identity import missing_identity_message

Connection = asyncssh.SSHClientConnection


def route_hops(config: HostConfig) -> tuple[JumpHost, ...]:
    """Every machine to connect to, in order: the jump hosts, then the target.

    A jump host without its own identity_file uses the target's.
    """
    hops = [
        JumpHost(hop.hostname, hop.port, hop.user, hop.identity_file or config.identity_file)
        for hop in config.jump
    ]
    hops.append(JumpHost(config.hostname or "", config.port, config.user, config.identity_file))
    return tuple(hops)


def known_hosts_files(config: HostConfig) -> list[Path]:
    """Where trusted keys are looked up: the profile's file, ~/.ssh's, servedeck's own."""
    files = [Path(config.known_hosts).expanduser()] if config.known_hosts else []
    from_ssh_config = [Path(name).expanduser() for name in config.ssh_known_hosts]
    return [
        *files,
        *from_ssh_config,
        Path.home() / ".ssh" / "known_hosts",
        paths.known_hosts_path(),
    ]


def load_known_hosts(config: HostConfig) -> asyncssh.SSHKnownHosts:
    """All trusted keys in one object (files that do not exist add nothing)."""
    known = asyncssh.SSHKnownHosts()
    for index, path in enumerate(known_hosts_files(config)):
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            if index == 0 and config.known_hosts:
                raise HostError(config.route, f"known_hosts file {path} does not exist") from None
            continue
        except (OSError, UnicodeDecodeError) as error:
            raise HostError(config.route, f"cannot read known_hosts {path}: {error}") from None
        try:
            known.load(text)
        except (ValueError, asyncssh.KeyImportError) as error:
            raise HostError(config.route, f"bad known_hosts file {path}: {error}") from None
    return known


def _address_of(hostname: str) -> str:
    """The IP address as known_hosts sees it, only when hostname already is one."""
    try:
        socket.inet_pton(socket.AF_INET6 if ":" in hostname else socket.AF_INET, hostname)
    except OSError:
        return ""
    return hostname


def trusted_keys(known: asyncssh.SSHKnownHosts, hop: JumpHost) -> list[asyncssh.SSHKey]:
    host_keys = known.match(hop.hostname, _address_of(hop.hostname), hop.port)[0]
    return list(host_keys)


def known_hosts_entry(hop: JumpHost, key: asyncssh.SSHKey) -> str:
    """One OpenSSH known_hosts line for hop's key."""
    pattern = hop.hostname if hop.port == 22 else f"[{hop.hostname}]:{hop.port}"
    algorithm, data = key.export_public_key("openssh").decode().split()[:2]
    return f"{pattern} {algorithm} {data}\n"


def _hop_prefix(config: HostConfig, hop: JumpHost) -> str:
    """Errors about a jump host say so; errors about the target need no prefix."""
    return "" if hop == route_hops(config)[-1] else f"jump host {hop.label}: "


def describe_error(error: BaseException, timeout_s: float) -> str:
    """asyncssh and socket errors as a short phrase (never a traceback)."""
    if isinstance(error, TimeoutError):
        return f"no answer within {timeout_s:g} s"
    if isinstance(error, asyncssh.PermissionDenied):
        return "authentication failed (the key was not accepted)"
    if isinstance(error, asyncssh.KeyImportError):
        return f"cannot load the identity file: {error}"
    if isinstance(error, asyncssh.DisconnectError):
        return f"disconnected: {error.reason or type(error).__name__}"
    if isinstance(error, asyncssh.ChannelOpenError):
        return f"cannot open a session: {error.reason}"
    if isinstance(error, socket.gaierror):
        return f"cannot resolve the host name: {error.strerror}"
    if isinstance(error, OSError) and "getaddrinfo" in str(error):
        return f"cannot resolve the host name: {error}"
    if isinstance(error, OSError):
        return f"cannot connect: {error.strerror or error}"
    return str(error) or type(error).__name__


async def fetch_host_key(
    config: HostConfig,
    hop: JumpHost,
    tunnel: Connection | None,
    algorithms: Sequence[str] = (),
) -> asyncssh.SSHKey:
    """The key hop presents, without trusting or authenticating."""
    try:
        key = await asyncio.wait_for(
            asyncssh.get_server_host_key(
                hop.hostname,
                hop.port,
                tunnel=tunnel or (),
                server_host_key_algs=list(algorithms) or (),
                config=None,
            ),
            config.connect_timeout_s,
        )
    except (OSError, asyncssh.Error) as error:
        message = describe_error(error, config.connect_timeout_s)
        raise HostError(config.route, f"{_hop_prefix(config, hop)}{message}") from None
    if key is None:
        raise HostError(config.route, f"{_hop_prefix(config, hop)}server sent no host key")
    return key


def changed_key_error(config: HostConfig, hop: JumpHost, key: asyncssh.SSHKey) -> HostKeyError:
    files = ", ".join(str(path) for path in known_hosts_files(config))
    return HostKeyError(
        config.route,
        f"{_hop_prefix(config, hop)}HOST KEY CHANGED: the server now presents "
        f"{key.get_algorithm()} {key.get_fingerprint('sha256')}, which does not match the key "
        f"in known_hosts ({files}); refused. Someone may be intercepting the connection, or "
        "the server was reinstalled: check the new key with its administrator before "
        "removing the old entry by hand.",
    )


async def diagnose_host_key(
    config: HostConfig,
    hop: JumpHost,
    tunnel: Connection | None,
    known: asyncssh.SSHKnownHosts,
    trust_args: str,
) -> HostKeyError:
    """Why hop's key was refused: unknown (with the way to accept it) or changed."""
    trusted = trusted_keys(known, hop)
    algorithms = sorted({key.get_algorithm() for key in trusted})
    key = await fetch_host_key(config, hop, tunnel, algorithms)
    if trusted and key not in trusted:
        return changed_key_error(config, hop, key)
    return HostKeyError(
        config.route,
        f"{_hop_prefix(config, hop)}unknown host key "
        f"{key.get_algorithm()} {key.get_fingerprint('sha256')}; refused. If that fingerprint "
        f"is right, accept it with: servedeck hosts trust {trust_args}",
    )


def _connect_options(config: HostConfig, hop: JumpHost) -> dict[str, Any]:
    options: dict[str, Any] = {
        "config": None,  # the profile says everything (an ssh_alias was resolved on load)
        "connect_timeout": config.connect_timeout_s,
        "keepalive_interval": config.keepalive_s,
        "keepalive_count_max": 3,
    }
    if hop.user:
        options["username"] = hop.user
    if hop.identity_file:
        options["client_keys"] = [str(Path(hop.identity_file).expanduser())]
    return options


async def connect_hop(
    config: HostConfig,
    hop: JumpHost,
    tunnel: Connection | None,
    known: asyncssh.SSHKnownHosts,
    trust_args: str,
) -> Connection:
    """One authenticated connection, host key checked, errors as one line."""
    if hop.identity_file and not Path(hop.identity_file).expanduser().is_file():
        message = missing_identity_message(hop.identity_file)
        raise HostError(config.route, f"{_hop_prefix(config, hop)}{message}")
    try:
        return await asyncssh.connect(
            hop.hostname,
            hop.port,
            tunnel=tunnel or (),
            known_hosts=known,
            **_connect_options(config, hop),
        )
    except asyncssh.HostKeyNotVerifiable:
        raise await diagnose_host_key(config, hop, tunnel, known, trust_args) from None
    except (OSError, asyncssh.Error, ValueError) as error:
        message = describe_error(error, config.connect_timeout_s)
        if config.ssh_alias == hop.hostname and message.startswith("cannot resolve"):
            message = (
                f"ssh alias {config.ssh_alias!r} has no HostName in the ssh config and "
                f"{message[0].lower()}{message[1:]}"
            )
        raise HostError(config.route, f"{_hop_prefix(config, hop)}{message}") from None


def check_ssh_target(config: HostConfig) -> None:
    """An SSH profile with somewhere to go, or HostError (one line)."""
    if config.alias_error:
        raise HostError(config.route, config.alias_error)
    if config.kind != "ssh" or not config.hostname:
        raise HostError(config.route, 'not an SSH host (expected kind = "ssh" and a hostname)')


async def close_all(connections: Sequence[Connection]) -> None:
    """Close a chain from the target back to the first hop."""
    for connection in reversed(connections):
        connection.close()
    for connection in reversed(connections):
        try:
            await asyncio.wait_for(connection.wait_closed(), 5.0)
        except (TimeoutError, OSError, asyncssh.Error):
            pass


async def connect_chain(config: HostConfig, trust_args: str) -> list[Connection]:
    """Connect every hop through the previous one; the last connection is the target."""
    check_ssh_target(config)
    known = await asyncio.to_thread(load_known_hosts, config)
    connections: list[Connection] = []
    try:
        for hop in route_hops(config):
            tunnel = connections[-1] if connections else None
            connections.append(await connect_hop(config, hop, tunnel, known, trust_args))
    except BaseException:
        await close_all(connections)
        raise
    return connections


Confirm = Callable[[JumpHost, asyncssh.SSHKey], Awaitable[bool]]


async def trust_route(config: HostConfig, confirm: Confirm, trust_args: str) -> list[str]:
    """Accept each hop's unknown key in order (after `confirm`), into servedeck's known_hosts.

    A changed key is refused, never replaced. Returns one report line per hop.
    """
    check_ssh_target(config)
    store = paths.known_hosts_path()
    report: list[str] = []
    connections: list[Connection] = []
    hops = route_hops(config)
    try:
        for index, hop in enumerate(hops):
            tunnel = connections[-1] if connections else None
            known = load_known_hosts(config)
            trusted = trusted_keys(known, hop)
            algorithms = sorted({key.get_algorithm() for key in trusted})
            key = await fetch_host_key(config, hop, tunnel, algorithms)
            fingerprint = f"{key.get_algorithm()} {key.get_fingerprint('sha256')}"
            if key in trusted:
                report.append(f"{hop.label}: already trusted ({fingerprint})")
            elif trusted:
                raise changed_key_error(config, hop, key)
            elif not await confirm(hop, key):
                raise ServedeckError(f"{hop.label}: host key not accepted; nothing written")
            else:
                store.parent.mkdir(parents=True, exist_ok=True)
                with store.open("a", encoding="utf-8") as handle:
                    handle.write(known_hosts_entry(hop, key))
                report.append(f"{hop.label}: trusted {fingerprint} (written to {store})")
            if index < len(hops) - 1:
                known = load_known_hosts(config)
                connections.append(await connect_hop(config, hop, tunnel, known, trust_args))
    finally:
        await close_all(connections)
    return report
