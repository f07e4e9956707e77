"""Hosts: where commands run. Sources take a Host and never care which kind."""

from tui.hosts.base import CommandResult, Host, sh_command
from tui.hosts.local import LocalHost

__all__ = ["CommandResult", "Host", "LocalHost", "sh_command"]
