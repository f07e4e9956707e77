"""asyncssh's ssh config parser, made safe to point at any file a user has.

asyncssh evaluates `Match exec "CMD"` by running CMD through a shell while it parses, and
follows `Include` without looking for loops. servedeck only reads an ssh config to find a
route, so this parser never runs anything: a Match block with an `exec` criterion does not
apply (its answer is unknown without running it), and it is noted so `servedeck doctor`
can say so. An Include loop, Includes nested deeper than OpenSSH allows, or more text than
any real config holds is a ConfigParseError naming the files, never a RecursionError or a
parse that eats the memory. ProxyCommand and LocalCommand are stored or skipped by
asyncssh, never run (connections are made with `config=None`).

Imported only where an alias is resolved: asyncssh costs ~90 ms to load.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from asyncssh.config import ConfigParseError, SSHClientConfig, SSHConfig

from tui.hosts.ssh_config import MAX_CONFIG_BYTES, oversize_message

MAX_CONFIG_FILES = 256  # files parsed for one lookup (an Include read twice counts twice)
MAX_INCLUDE_DEPTH = 16  # OpenSSH's READCONF_MAX_DEPTH
_NO_PATTERN = frozenset({"all", "canonical", "final"})  # Match criteria that take no argument


class SafeClientConfig(SSHClientConfig):
    """SSHClientConfig that never runs `Match exec` and refuses Include loops and floods."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.ignored_exec: list[str] = []  # "FILE line N" of each Match exec not run
        self._chain: list[Path] = []  # the files being parsed, outermost first
        self._files_read = 0
        self._bytes_read = 0

    def parse(self, path: Path) -> None:
        """Parse one file, after checking it closes no Include loop and is not a flood."""
        here = path.resolve()
        if here in self._chain:
            loop = [*self._chain[self._chain.index(here) :], here]
            raise ConfigParseError("Include loop: " + " -> ".join(str(p) for p in loop))
        if len(self._chain) >= MAX_INCLUDE_DEPTH:
            chain = " -> ".join(str(p) for p in [*self._chain, here])
            raise ConfigParseError(f"Include nests deeper than {MAX_INCLUDE_DEPTH}: {chain}")
        top = self._chain[0] if self._chain else path
        self._files_read += 1
        self._bytes_read += path.stat().st_size
        if self._bytes_read > MAX_CONFIG_BYTES:
            raise ConfigParseError(oversize_message(path, top))
        if self._files_read > MAX_CONFIG_FILES:
            raise ConfigParseError(f"{top}: its Includes read over {MAX_CONFIG_FILES} files")
        self._chain.append(here)
        try:
            super().parse(path)
        finally:
            self._chain.pop()

    def _match_without_exec(self, option: str, args: list[str]) -> None:
        """`Match`, with every `exec CMD` criterion taken out unrun; such a block never applies."""
        words = list(args)
        args.clear()  # asyncssh checks that the handler consumed every argument
        kept: list[str] = []
        has_exec = False
        index = 0
        while index < len(words):
            word = words[index]
            criterion = word.lower().lstrip("!")
            if not criterion:
                self._error("empty Match criterion")
            if criterion in _NO_PATTERN:
                kept.append(word)
                index += 1
                continue
            if index + 1 >= len(words):
                self._error(f"Missing {criterion} match pattern")
            if criterion == "exec":
                has_exec = True
            else:
                kept += words[index : index + 2]
            index += 2
        SSHConfig._match(self, option, kept)
        if has_exec:
            self.ignored_exec.append(f"{self._path} line {self._line_no}")
            self._matching = False

    _handlers: dict[str, tuple[str, Callable[..., None]]] = {
        **SSHClientConfig._handlers,
        "match": ("Match", _match_without_exec),
    }


def load_client_config(
    paths: list[Path], local_user: str, alias: str
) -> tuple[SSHClientConfig, tuple[str, ...]]:
    """The options `ssh alias` would use from paths, and where a Match exec was not run."""
    config = cast(
        SafeClientConfig,
        SafeClientConfig.load(None, paths, False, False, False, local_user, (), alias, ()),
    )
    return config, tuple(dict.fromkeys(config.ignored_exec))
