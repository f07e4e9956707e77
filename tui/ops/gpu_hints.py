"""Where the process killer gets its GPU pid hints and classification context: the Deck.

Without a usable source (no driver), the listing falls back to the processes
holding /dev/nvidia* open, with GPU memory unknown.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import PurePosixPath

from tui.deck import Deck
from tui.gpu.model import GpuBoxSnapshot
from tui.procs.listing import ClassifyContext, context_for


async def gpu_snapshot(deck: Deck) -> GpuBoxSnapshot | None:
    """One snapshot from the deck's GPU source, or None when it has no GPUs."""
    source = await deck.gpu_source()
    snapshot = await source.sample()
    return snapshot if snapshot.available else None


def rereader(deck: Deck) -> Callable[[], Awaitable[GpuBoxSnapshot | None]]:
    """The re-read callback a kill uses to see what memory was released."""

    async def reread() -> GpuBoxSnapshot | None:
        return await gpu_snapshot(deck)

    return reread


def venv_of(exec_path: str | None) -> str | None:
    """The virtualenv an ExecStart program lives in (/opt/vllm/venv/bin/vllm -> /opt/vllm/venv);
    None for a system program (/usr/bin/python3), which proves nothing about a process."""
    if not exec_path:
        return None
    program = PurePosixPath(exec_path)
    root = program.parent.parent
    if program.parent.name != "bin" or str(root) in ("/", "/usr", "/usr/local", "/bin"):
        return None
    return str(root)


async def deck_context(deck: Deck) -> ClassifyContext:
    """Classification context with the unit's state and MainPID from the deck's service, and
    what proves an orphan is the service's: the unit's user and place, the box's own record."""
    unit_active = None
    main_pid = None
    unit_user: str | None = None
    unit_dir: str | None = None
    unit_venv: str | None = None
    service = deck.service()
    if service is not None:
        try:
            state = await service.state()
        except Exception:  # the listing still works without the unit's word
            state = None
        if state is not None and state.exists:
            unit_active = state.active_state in (
                "active",
                "activating",
                "reloading",
                "deactivating",
            )
            main_pid = state.main_pid or None
            unit_user = state.user or "root"  # systemd runs a unit without User= as root
            unit_dir = state.working_directory
            unit_venv = venv_of(state.exec_path)
    context = context_for(deck.profile, deck.host, unit_active=unit_active, main_pid=main_pid)
    return replace(
        context,
        scope_pids=deck.process_scope(),
        owned=deck.owned_processes(),
        unit_user=unit_user,
        unit_dir=unit_dir,
        unit_venv=unit_venv,
    )
