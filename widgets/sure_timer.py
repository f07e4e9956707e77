"""A one-shot timer that always fires, however late the event loop runs it.

Textual's `set_timer` makes a timer that skips ticks it is late for, and for a one-shot
timer the only tick can be skipped: the timer reads the clock when its task starts and
again just after, and if more than its delay passed in between (the process descheduled
on a loaded machine, another thread holding the interpreter) it ends without calling
back. A 1 ms log drain lost that way stopped the log pane for good (the drain is armed
again only by the drain itself; the log source then waits on its full backlog).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from textual.timer import Timer


class TimerOwner(Protocol):
    """What arms the timer: a Textual MessagePump, or the console as its parts see it."""

    def set_timer(
        self,
        delay: float,
        callback: Callable[[], Any] | None = None,
        *,
        name: str | None = None,
        pause: bool = False,
    ) -> Timer: ...


def set_sure_timer(
    pump: TimerOwner, delay_s: float, callback: Callable[[], object], *, name: str | None = None
) -> Timer:
    """`pump.set_timer(delay_s, callback)` whose tick is never skipped: a timer run late
    calls back at once."""
    timer = pump.set_timer(delay_s, callback, name=name)
    # Its task has not run yet (set_timer only creates it): it reads _skip each turn.
    timer._skip = False
    return timer
