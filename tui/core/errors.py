"""User-facing errors: each one prints as a single line, never as a traceback."""

from __future__ import annotations


class ServedeckError(Exception):
    """An error the operator can act on; `str()` is the one line shown."""

    exit_code: int = 1


class ProfileError(ServedeckError):
    """A profile that cannot be read or does not validate (exit code 2)."""

    exit_code = 2


class UsageError(ServedeckError):
    """A command line that cannot be carried out as given (exit code 2)."""

    exit_code = 2


class HostError(ServedeckError):
    """A host that cannot be reached or a command that cannot be started on it."""

    def __init__(self, host_label: str, message: str) -> None:
        super().__init__(f"{host_label}: {message}")
        self.host_label = host_label


class HostKeyError(HostError):
    """An unknown or changed SSH host key: refused, never silently accepted."""

    exit_code = 3


class CommandTimeout(HostError):
    """A command on a host ran past its timeout and was ended."""


class CommandNotFound(HostError):
    """The host answered and has no such command: a fact about the host (e.g. no driver)."""


class HostUnreachable(HostError):
    """The host was not reached: nothing is known of what it has, only why and since when."""
