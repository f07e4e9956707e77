"""Follow a host's XID events while the console runs, and say when the follow is lost.

The kernel journal is followed by cursor (tui.health.xid.kernel_log): the backlog of this
boot first, then each new line as the kernel logs it, so nothing is missed between a
first read and the follow. Hosts whose journal cannot be read fall back to
`dmesg --follow`. A follow that keeps ending (journalctl killed, SSH cut, no
permission) is reported as lost with its reason; one that has run STEADY_S without
ending is reported as following again.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from tui.core.errors import ServedeckError
from tui.core.tasks import cancel_and_wait
from tui.gpu.model import GpuBoxSnapshot
from tui.health.interconnect.parse import norm_bdf
from tui.health.xid.decode import XidEvent
from tui.health.xid.kernel_log import KernelLogFollower, dmesg_events
from tui.hosts.base import Host

# A journal file to read XIDs from instead of the host's own kernel journal (a journal
# copied from a box that crashed, or one written by journal-remote).
KERNEL_JOURNAL_ENV = "SERVEDECK_KERNEL_JOURNAL"
STEADY_S = 2.0  # a stream that has not ended for this long is following
CHECK_S = 0.5  # while a stream has yet to prove steady
# Once following, a stream's end is looked for this often: an idle console's main thread
# woke twice a second for it, for a "resuming" line a few seconds late at worst.
FOLLOWING_CHECK_S = 5.0
RETRY_S = 15.0  # after both the journal and dmesg failed


@dataclass(frozen=True, slots=True)
class FollowState:
    """Whether XIDs are being followed: `source` journal | dmesg | none; why not, when not."""

    following: bool
    source: str
    reason: str = ""


def kernel_journal_file() -> str | None:
    return os.environ.get(KERNEL_JOURNAL_ENV) or None


def gpu_buses(snapshot: GpuBoxSnapshot | None) -> dict[str, int] | None:
    """Bus id -> GPU index from a GPU sample; None until one with GPUs arrives."""
    if snapshot is None or not snapshot.available or not snapshot.statics:
        return None
    return {norm_bdf(s.bus_id): s.index for s in snapshot.statics if s.bus_id}


async def journal_unreadable(host: Host) -> str | None:
    """Why the host's kernel journal cannot be read as this user; None when it can.

    journalctl exits 0 with no entries when the user may not read the kernel's messages:
    that must not look like a clean log.
    """
    try:
        probe = await host.run(["journalctl", "-k", "-n", "0", "--no-pager"], timeout_s=15)
        stderr = probe.stderr
    except ServedeckError as error:  # no journalctl on this box (a container)
        stderr = f"No journal files: {error}"
    if "insufficient permissions" in stderr or "No journal files" in stderr:
        line = stderr.strip().splitlines()[0][:160]
        return f"kernel journal unreadable as this user ({line}); run as root or join adm"
    return None


async def _consume(events: AsyncIterator[XidEvent], on_event: Callable[[XidEvent], object]) -> None:
    async for event in events:
        on_event(event)


async def _watched(
    events: AsyncIterator[XidEvent],
    on_event: Callable[[XidEvent], object],
    on_state: Callable[[FollowState], object],
    source: str,
    ends: Callable[[], int],
) -> None:
    """Consume until the events end; report lost when `ends()` grows, following once steady."""
    task = asyncio.create_task(_consume(events, on_event))
    seen, steady_since, following = ends(), time.monotonic(), False
    try:
        while not task.done():
            await asyncio.wait({task}, timeout=FOLLOWING_CHECK_S if following else CHECK_S)
            if ends() != seen:
                seen, steady_since = ends(), time.monotonic()
                if following or seen == 1:
                    following = False
                    on_state(FollowState(False, source, f"{source} stream ended; resuming"))
            elif not following and time.monotonic() - steady_since >= STEADY_S:
                following = True
                on_state(FollowState(True, source))
        task.result()
    finally:
        await cancel_and_wait([task])


def _reconnects(follower: KernelLogFollower) -> int:
    return follower.reconnects


async def follow_xids(
    host: Host,
    buses: dict[str, int],
    on_event: Callable[[XidEvent], object],
    on_state: Callable[[FollowState], object],
    journal_file: str | None = None,
) -> None:
    """Runs until cancelled: journal first, dmesg when the journal cannot be read."""
    while True:
        why = None if journal_file else await journal_unreadable(host)
        if why is None:
            follower = KernelLogFollower(host, journal_file=journal_file, follow=True)
            try:
                await _watched(
                    follower.events(buses),
                    on_event,
                    on_state,
                    "journal",
                    functools.partial(_reconnects, follower),
                )
            except (OSError, ServedeckError) as error:
                why = f"journal: {error}"
        if journal_file is None:
            try:
                await _watched(
                    dmesg_events(host, buses, follow=True), on_event, on_state, "dmesg", lambda: 0
                )
                why = f"{why}; dmesg --follow ended (dmesg_restrict? run as root)"
            except (OSError, ServedeckError) as error:
                why = f"{why}; dmesg: {error}"
        on_state(FollowState(False, "none", why or "the kernel log ended"))
        await asyncio.sleep(RETRY_S)
