"""The engine's stacks of a Deck's host, saved: `servedeck stacks` and the console's key.

The unit's main pid finds the engine; its ranks come from the process helper (over SSH
on a remote host), their stacks from tui/serving/progress/stacks.py; the text is saved
under the data dir, one timestamped file a dump, never over an earlier one.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from tui.core import paths
from tui.core.errors import ServedeckError
from tui.core.redact import redact_text
from tui.deck import Deck
from tui.serving.progress.ranks import read_ranks
from tui.serving.progress.stack_model import StackDump, dump_text
from tui.serving.progress.stacks import dump_stacks


def stacks_dir() -> Path:
    return paths.data_dir() / "stacks"


async def main_pid_of(deck: Deck) -> int:
    """The unit's main pid; a one-line error naming the unit when there is none."""
    controller = deck.service()
    if controller is None:
        raise ServedeckError(
            f"{deck.profile.name}: no [service] unit: no main pid to find the engine by"
        )
    state = await controller.state()
    if not state.main_pid:
        raise ServedeckError(
            f"{deck.host_label}: {state.unit} is {state.active_state}: no engine process to dump"
        )
    return state.main_pid


def save_dump(dump: StackDump, folder: Path | None = None) -> Path:
    """`stacks-<host>-YYYYmmdd-HHMMSS.txt` (a -2, -3 ... when that second has one already)."""
    folder = folder or stacks_dir()
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(dump.at_s))
    host = re.sub(r"[^A-Za-z0-9_.-]+", "-", dump.host_label).strip("-") or "host"
    text = redact_text(dump_text(dump))
    for attempt in range(1, 100):
        suffix = "" if attempt == 1 else f"-{attempt}"
        path = folder / f"stacks-{host}-{stamp}{suffix}.txt"
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        except OSError as error:
            raise ServedeckError(f"{path}: cannot write the stacks: {error.strerror}") from None
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        return path
    raise ServedeckError(f"{folder}: too many stack dumps in one second")


async def engine_stacks(
    deck: Deck, main_pid: int | None = None, folder: Path | None = None
) -> tuple[StackDump, Path]:
    """Dump the engine's stacks now and save them: (the dump, the file)."""
    pid = main_pid or await main_pid_of(deck)
    ranks = await read_ranks(deck.host, pid)
    if ranks is None:
        raise ServedeckError(f"{deck.host_label}: the engine's processes under pid {pid} unread")
    if not ranks.root_alive:
        raise ServedeckError(f"{deck.host_label}: the engine's main pid {pid} is gone")
    dump = await dump_stacks(deck.host, ranks)
    return dump, save_dump(dump, folder)
