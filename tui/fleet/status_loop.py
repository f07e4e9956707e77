"""A fleet host's unit state and log through one long-lived remote shell, not a session per poll.

Starting an SSH session costs the box a login (sshd forks, the login shell reads its
startup files): on a busy box that is most of a poll. So each host keeps one `sh` open
(SSHHost.dialog) that answers every line it reads with a status block: `systemctl show`
for the unit, then the log's new bytes since the last block (the whole short tail after a
start, a truncation or a rotation). A poll writes a line and reads the answer, so the
block is as fresh as the poll, and a link that hangs leaves the poll waiting (the
collector shows it slow). A dialog that ends is opened again on the next poll, after a
backoff when it ended by itself.

Blocks are framed by a per-dialog random marker, so no log line can end one early.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tui.core.errors import CommandTimeout, HostError, ServedeckError
from tui.core.redact import LineRedactor
from tui.logs.classify import LevelClassifier
from tui.logs.line import LogLine
from tui.serving.load.tracker import LoadProgress, LoadTracker
from tui.serving.unit.service import SHOW_PROPERTIES, UnitState, parse_systemctl_show

if TYPE_CHECKING:
    from tui.hosts.ssh import SSHHost
    from tui.hosts.ssh_remote import SSHDialog

# The log bytes read at most per block: a log that grew more than this (or shrank) is read
# again as its last `tail_lines` lines within this window, never whole.
WINDOW_BYTES = 256 * 1024
BLOCK_TIMEOUT_S = 15.0
RESTART_BACKOFF_S = (1.0, 2.0, 5.0, 10.0, 30.0)

# $1 marker, $2 unit, $3 properties, $4 lines, $5 log file, $6 window. dash-compatible.
STATUS_SCRIPT = r"""m=$1 off=-1
while read -r _; do
  printf '%sunit\n' "$m"
  systemctl show "$2" --no-pager -p "$3" 2>&1
  printf '\n%sunit-status:%s\n' "$m" "$?"
  if size=$(wc -c 2>&1 < "$5"); then
    if [ "$off" -lt 0 ] || [ "$size" -lt "$off" ] || [ $((size - off)) -gt "$6" ]; then
      start=$(( size > $6 ? size - $6 : 0 ))
      printf '%slog-reset\n' "$m"
      tail -c +$((start + 1)) -- "$5" | head -c $((size - start)) | tail -n "$4"
    else
      printf '%slog-delta\n' "$m"
      [ "$size" -gt "$off" ] && tail -c +$((off + 1)) -- "$5" | head -c $((size - off))
    fi
    off=$size
  else
    printf '%slog-error\n%s' "$m" "$size"
    off=-1
  fi
  printf '\n%send\n' "$m"
done
"""


class LoopEnded(ServedeckError):
    """The remote shell ended while its connection stayed up: poll another way for a while."""


_TAGS = ("unit", "log-reset", "log-delta", "log-error")


@dataclass
class StatusBlock:
    """One answer of the remote loop, split into its parts."""

    show: str = ""
    show_status: int | None = None
    log_mode: str = ""  # reset, delta or error
    log_lines: list[str] = field(default_factory=list)


def parse_block(lines: Sequence[str], marker: str) -> StatusBlock:
    """The parts of one block (the lines between the request and the end marker)."""
    block = StatusBlock()
    body: list[str] = []
    for line in lines:
        tag = line[len(marker) :] if line.startswith(marker) else ""
        if tag in _TAGS or tag.startswith("unit-status:"):
            if tag.startswith("unit-status:"):
                block.show = "\n".join(body[:-1] if body and body[-1] == "" else body)
                status = tag.removeprefix("unit-status:").strip()
                block.show_status = int(status) if status.isdigit() else None
            elif tag.startswith("log-"):
                block.log_mode = tag.removeprefix("log-")
            body = []
            if tag.startswith("log-"):
                block.log_lines = body
            continue
        body.append(line)
    return block


def complete_lines(fragment: str, lines: Sequence[str]) -> tuple[list[str], str]:
    """The finished lines of a log read, and what is left of an unfinished last line.

    A block's log part always ends with one line that the loop's final newline closed:
    empty when the log ended on a newline, else the start of a line still being written,
    which the next block finishes.
    """
    complete = (fragment + "\n".join(lines)).split("\n")
    return complete, complete.pop()


class StatusLoop:
    """One host's unit state and load progress, read through one remote `sh` per connection."""

    def __init__(
        self,
        host: SSHHost,
        unit: str,
        log_file: str,
        *,
        tail_lines: int,
        block_timeout_s: float = BLOCK_TIMEOUT_S,
        restart_backoff_s: Sequence[float] = RESTART_BACKOFF_S,
    ) -> None:
        self.host = host
        self.unit = unit
        self.log_file = log_file
        self.tail_lines = tail_lines
        self.block_timeout_s = block_timeout_s
        self.restart_backoff_s = tuple(restart_backoff_s)
        self.starts = 0  # dialogs opened: one per connection unless the loop ended
        self._dialog: SSHDialog | None = None
        self._marker = ""
        self._ended = 0  # dialogs that ended by themselves in a row (backoff)
        self._retry_at = 0.0
        self._tracker = LoadTracker()
        self._fragment = ""  # a log line not yet finished when the last block was read
        self._classifier = LevelClassifier()
        self._redactor = LineRedactor()  # a host's log lines, redacted as they arrive
        self._source = f"file:{log_file}"
        self._seen_any = False  # whether the tracker has a line since the last reset

    @property
    def available(self) -> bool:
        """False during the backoff after the loop ended by itself (poll another way)."""
        return self._dialog is not None or time.monotonic() >= self._retry_at

    async def _open(self) -> SSHDialog:
        if self._dialog is not None and self._dialog.running:
            return self._dialog
        if self._dialog is not None and self._dialog.ended_by_itself:
            await self._drop()
            self._ended_by_itself()
            raise LoopEnded(f"{self.host.label}: the fleet status loop ended")
        await self._drop()
        self._marker = f"servedeck-fleet-{secrets.token_hex(6)}:"
        argv = [
            "/bin/sh",
            "-c",
            STATUS_SCRIPT,
            "sh",
            self._marker,
            self.unit,
            ",".join(SHOW_PROPERTIES),
            str(self.tail_lines),
            self.log_file,
            str(WINDOW_BYTES),
        ]
        self._dialog = await self.host.dialog(argv, start_timeout_s=self.block_timeout_s)
        self.starts += 1
        return self._dialog

    async def _drop(self) -> None:
        dialog, self._dialog = self._dialog, None
        if dialog is not None:
            await dialog.close()

    def _ended_by_itself(self) -> None:
        delay = self.restart_backoff_s[min(self._ended, len(self.restart_backoff_s) - 1)]
        self._ended += 1
        self._retry_at = time.monotonic() + delay

    async def _exchange(self, dialog: SSHDialog) -> list[str]:
        """Ask for a block and read it whole; raises LoopEnded when the shell is gone."""
        await dialog.send("\n")
        lines: list[str] = []
        end = f"{self._marker}end"
        while True:
            line = await dialog.readline()
            if line is None:
                await self._drop()
                self._ended_by_itself()
                raise LoopEnded(f"{self.host.label}: the fleet status loop ended")
            if line == end:
                return lines
            lines.append(line)

    async def read(self) -> tuple[UnitState | None, LoadProgress | None, list[str]]:
        """The unit's state, the load progress and this block's problems, as of now.

        Raises HostError when the connection is lost (the host is unreachable) and
        CommandTimeout when no block came within block_timeout_s (the host is slow).
        """
        try:
            dialog = await self._open()  # a login, bounded by block_timeout_s on its own
            lines = await asyncio.wait_for(self._exchange(dialog), self.block_timeout_s)
        except TimeoutError:
            await self._drop()  # a half-read block would shift the next one: start over
            raise CommandTimeout(
                self.host.label, f"no fleet status within {self.block_timeout_s:g} s"
            ) from None
        except HostError:
            await self._drop()
            raise
        except asyncio.CancelledError:
            await self._drop()
            raise
        self._ended = 0
        block = parse_block(lines, self._marker)
        problems: list[str] = []
        unit = None
        if block.show_status == 0:
            unit = parse_systemctl_show(self.unit, block.show)
        else:
            detail = (block.show.strip().splitlines() or ["no output"])[0]
            problems.append(f"{self.host.label}: systemctl show {self.unit} failed: {detail}")
        if block.log_mode == "error":
            detail = ([line for line in block.log_lines if line.strip()] or ["no output"])[-1]
            problems.append(f"{self.host.label}: cannot read {self.log_file}: {detail}")
            self._fragment = ""
            return unit, None, problems
        fed = await self._feed(block)
        return unit, (self._tracker.snapshot() if fed else None), problems

    async def _feed(self, block: StatusBlock) -> bool:
        """Feed the block's complete log lines; True once the tracker has seen any line."""
        if block.log_mode == "reset":
            self._tracker = LoadTracker()
            self._fragment = ""
            self._seen_any = False
        complete, self._fragment = complete_lines(self._fragment, block.log_lines)
        if complete:
            complete = self._redactor(complete)
            lines = [
                LogLine(text=t, level=self._classifier.classify(t), source=self._source)
                for t in complete
            ]
            # Parsing is milliseconds per host; a first tail of hundreds goes off the loop.
            if len(lines) > 50:
                await asyncio.to_thread(self._tracker.feed_many, lines)
            else:
                self._tracker.feed_many(lines)
            self._seen_any = True
        return self._seen_any

    async def close(self) -> None:
        await self._drop()
