"""Hosts: where commands run. Sources take a Host and never care which kind.

base.py: The one interface every source uses to reach a machine, local or remote
factory.py: The Host for a profile: this machine or SSH (the simulator's box opens with its Deck)
identity.py: SSH identity files named by a profile, checked before a connection is tried
local.py: LocalHost: commands as asyncio subprocesses on this machine
profiles.py: Profiles with their SSH route: the core's reading plus the `ssh_alias` lookup
reader.py: Periodic reads through one long-lived remote shell per connection, not a session per read
ssh.py: SSHHost: commands on a remote machine over one shared asyncssh connection
ssh_config.py: Hosts as the operator names them for `ssh`: a profile's `ssh_alias` read from ~/.ssh/config
ssh_config_parser.py: asyncssh's ssh config parser, made safe to point at any file a user has
ssh_connect.py: Opening SSH connections along a jump chain, with strict host key checking
ssh_remote.py: A command running on an SSH host: the line sent to sshd, its process group, the dialog
"""

from tui.hosts.base import CommandResult, Host, sh_command
from tui.hosts.local import LocalHost

__all__ = ["CommandResult", "Host", "LocalHost", "sh_command"]
