"""XID events from a host's kernel log: the journal (followed by cursor) or dmesg.

The journal follower is the log pane's JournalFollower with another match
(`-k`: kernel transport, this boot), so a dropped SSH connection resumes after
the last cursor and no event is lost or shown twice. Hosts without journald
fall back to `dmesg`, which has no cursor: only the events from now on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from tui.core.errors import HostError
from tui.health.xid.decode import XidEvent, decode_xid
from tui.hosts.base import Host
from tui.logs.journal import JournalFollower

# Only kernel lines that can be XIDs are worth sending over the wire.
XID_GREP = "NVRM: Xid"


class KernelLogFollower(JournalFollower):
    """JournalFollower over the kernel's messages instead of one unit's."""

    def __init__(
        self,
        host: Host,
        *,
        journal_file: str | None = None,
        initial_lines: int = 2000,
        follow: bool = True,
        after_cursor: str | None = None,
        retry_delay_s: float = 0.2,
    ) -> None:
        super().__init__(
            host,
            None if journal_file else "kernel",
            journal_file=journal_file,
            initial_lines=initial_lines,
            follow=follow,
            after_cursor=after_cursor,
            retry_delay_s=retry_delay_s,
        )
        self.source = f"kernel:{journal_file or host.label}"

    def argv(self) -> list[str]:
        argv = ["journalctl", "-o", "json", "--no-pager", "--all", f"--grep={XID_GREP}"]
        if self.journal_file:
            # A journal file from elsewhere: `-k` would also pin this machine's boot.
            argv += ["--file", self.journal_file, "_TRANSPORT=kernel"]
        else:
            argv.append("-k")
        argv += self.resume_args()
        if self.follow:
            argv.append("-f")
        return argv

    async def events(self, bus_to_gpu: dict[str, int]) -> AsyncIterator[XidEvent]:
        """Each XID line decoded onto its GPU; other kernel lines are skipped."""
        async for line in self.lines():
            event = decode_xid(line.text, bus_to_gpu, line.timestamp_s, line.cursor)
            if event is not None:
                yield event


async def dmesg_events(
    host: Host, bus_to_gpu: dict[str, int], follow: bool = False
) -> AsyncIterator[XidEvent]:
    """The fallback without journald: `dmesg` (needs root where dmesg_restrict=1)."""
    argv = ["dmesg", "--notime"] + (["--follow"] if follow else [])
    if follow:
        lines = host.stream(argv)
    else:
        result = await host.run(argv, timeout_s=15)
        if not result.ok:
            raise HostError(
                host.label, f"dmesg exited {result.exit_status}: {result.stderr.strip()[:120]}"
            )

        async def _lines() -> AsyncIterator[str]:
            for text in result.stdout.splitlines():
                yield text

        lines = _lines()
    async for text in lines:
        event = decode_xid(text, bus_to_gpu)
        if event is not None:
            yield event
