"""What a console does at start and at close that is no pane's: the collector, the workers.

While a console runs, the modules and widgets it started with are frozen out of the
garbage collector's walks and young collections wait for GC_YOUNG_OBJECTS allocations;
at close both are undone, after the cancelled workers were given time to finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Iterable
from typing import Any

# Allocations between young garbage collections while a console runs (Python's default is
# 700): in a log flood most lines are drawn and freed before a collection would walk them;
# measured on a 200,000-line flood, GC time 410 -> 115 ms and no full collection. The most
# cyclic garbage this lets wait is bounded by it.
GC_YOUNG_OBJECTS = 20_000
# How long quitting waits for cancelled workers to finish their cleanup.
WORKERS_EXIT_WAIT_S = 5.0


class CollectorTuning:
    """The collector as a running console wants it, and as it was before."""

    def __init__(self) -> None:
        self._thresholds: tuple[int, int, int] | None = None  # to restore at close

    def start(self) -> None:
        # The modules and widgets of a started console live as long as it does: a full
        # collection that walks them all again held the loop 40-90 ms in a log flood.
        gc.freeze()
        if self._thresholds is None:
            self._thresholds = gc.get_threshold()
        gc.set_threshold(GC_YOUNG_OBJECTS, *self._thresholds[1:])

    def stop(self) -> None:
        gc.unfreeze()  # a process that opens consoles again (tests) must free this one
        if self._thresholds is not None:
            gc.set_threshold(*self._thresholds)


async def let_workers_finish(workers: Iterable[Any]) -> None:
    """Give cancelled workers time to finish before the event loop closes.

    A worker cancelled while asyncio is still connecting a new subprocess's pipes
    must finish before the loop is torn down: the teardown cancels asyncio's own
    pipe task too, and then CPython (gh-125502, unfixed in 3.11) waits for that
    process forever, so the console would never exit.
    """
    waiting = list(workers)
    if waiting:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                asyncio.gather(*(worker.wait() for worker in waiting), return_exceptions=True),
                WORKERS_EXIT_WAIT_S,
            )
